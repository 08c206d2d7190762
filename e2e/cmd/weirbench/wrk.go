package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"time"
)

// wrkGen drives wrk, which spends less CPU per request than a Go client and so leaves more
// of a small machine to Traefik.
type wrkGen struct {
	bin         string
	threads     int
	connections int
}

var (
	wrkRate   = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	wrkNon2xx = regexp.MustCompile(`Non-2xx or 3xx responses:\s+([0-9]+)`)
	wrkErrors = regexp.MustCompile(`Socket errors:[^\n]*`)
)

func (g wrkGen) describe() string { return fmt.Sprintf("wrk (%d threads)", g.threads) }

func (g wrkGen) run(ctx context.Context, url string, d time.Duration) (float64, error) {
	threads := g.threads
	if threads > g.connections {
		threads = g.connections
	}
	secs := int(d.Round(time.Second) / time.Second)
	if secs < 1 {
		secs = 1
	}
	// wrk stops itself after the duration; the context bound only guards against a hang.
	ctx, cancel := context.WithTimeout(ctx, d+30*time.Second)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, g.bin, "-t", strconv.Itoa(threads), "-c", strconv.Itoa(g.connections),
		"-d", fmt.Sprintf("%ds", secs), url)
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("wrk: %w\n%s", err, out.String())
	}
	text := out.String()
	if m := wrkNon2xx.FindStringSubmatch(text); m != nil {
		return 0, fmt.Errorf("wrk: %s answers were not 2xx or 3xx\n%s", m[1], text)
	}
	if m := wrkErrors.FindString(text); m != "" {
		return 0, fmt.Errorf("wrk: %s\n%s", m, text)
	}
	m := wrkRate.FindStringSubmatch(text)
	if m == nil {
		return 0, fmt.Errorf("wrk: no Requests/sec in its output\n%s", text)
	}
	return strconv.ParseFloat(m[1], 64)
}
