package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// buildTimeout bounds scripts/build-traefik.sh: a cold build takes about five minutes on two
// cores, a cached one returns at once.
const buildTimeout = 15 * time.Minute

var errNoTraefik = errors.New("no traefik binary")

// Unavailable skips t for want of what msg names (a binary, a tool), or fails it when
// WEIR_E2E=required, as in CI, where a skip would hide that the test never ran.
func Unavailable(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("WEIR_E2E") == "required" {
		t.Fatalf("%s (WEIR_E2E=required)", msg)
	}
	t.Skipf("%s; WEIR_E2E=required turns this skip into a failure", msg)
}

// FindTraefik returns the Traefik binary the harness runs: $WEIR_TRAEFIK when set, else the
// path scripts/build-traefik.sh prints (building and caching Traefik the first time).
func FindTraefik(root string) (string, error) {
	if p := os.Getenv("WEIR_TRAEFIK"); p != "" {
		if err := checkExecutable(p); err != nil {
			return "", fmt.Errorf("WEIR_TRAEFIK: %w", err)
		}
		return p, nil
	}
	script := filepath.Join(root, "scripts", "build-traefik.sh")
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, script)
	cmd.Dir = root
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%w: %s: %v\n%s", errNoTraefik, script, err, tail(stderr.String(), 20))
	}
	p := strings.TrimSpace(stdout.String())
	if i := strings.LastIndexByte(p, '\n'); i >= 0 {
		p = p[i+1:]
	}
	if err := checkExecutable(p); err != nil {
		return "", fmt.Errorf("%s printed %q: %w", script, p, err)
	}
	return p, nil
}

func checkExecutable(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("%w: %v", errNoTraefik, err)
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return fmt.Errorf("%w: %s is not an executable file", errNoTraefik, p)
	}
	return nil
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
