package e2e

import "os"

// What the harness's processes, Traefik and redis-server, share.

// workDir is dir, or when dir is "" a fresh temporary directory named after prefix, with
// true: the caller removes it when the process is done.
func workDir(dir, prefix string) (string, bool, error) {
	if dir != "" {
		return dir, false, nil
	}
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", false, err
	}
	return dir, true, nil
}

// closed reports whether ch is closed, without waiting.
func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
