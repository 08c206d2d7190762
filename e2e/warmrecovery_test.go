package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// hostCounts counts an origin's requests by Host and path: warming sends each path once per
// host, and the origin's own counts are by path alone.
type hostCounts struct {
	// mu guards n.
	mu sync.Mutex
	n  map[string]int
}

// page answers max-age=1 with a body naming the host and path, counting the request.
func (c *hostCounts) page(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[r.Host+r.URL.Path]++
	c.mu.Unlock()
	w.Header().Set("Cache-Control", "max-age=1")
	io.WriteString(w, "page "+r.Host+r.URL.Path)
}

// of is how many requests for host and path reached the origin.
func (c *hostCounts) of(host, path string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[host+path]
}

// TestWarmOnRecovery: warm.paths on two hosts are fetched once at the start. One host's
// origin fails until its breaker opens; once its probe succeeds and the breaker closes, the
// warm paths of that host are fetched again (warm_started reason=recovered), and not the
// other host's, though its pages are as stale (max-age=1).
func TestWarmOnRecovery(t *testing.T) {
	const (
		prefix   = "/rw"
		down, up = "down.rw.test", "up.rw.test"
		// minRequests is the breaker's: a few failures open it.
		minRequests = 4
	)
	paths := []string{prefix + "/home", prefix + "/news"}
	o := newOrigin(t)
	var counts hostCounts
	for _, p := range paths {
		o.Handle(p, counts.page)
	}
	o.Handle(prefix+"/fail", func(w http.ResponseWriter, r *http.Request) {
		// Without Retry-After: a failure the breaker counts.
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "failing")
	})
	o.Handle(prefix+"/ok", answer("max-age=60", "ok"))
	tr := startTraefik(t, o, cachedRoute("rw", prefix, "weir-rw", map[string]interface{}{
		"warm": map[string]interface{}{"paths": paths, "hosts": []string{down, up}},
		"breaker": map[string]interface{}{
			"minRequests": fmt.Sprint(minRequests), "openFor": "1s", "maxOpenFor": "2s",
		},
	}))
	wantCounts := func(what string, want map[string]int) {
		t.Helper()
		for _, host := range []string{down, up} {
			for _, p := range paths {
				if got := counts.of(host, p); got != want[host] {
					t.Errorf("%s: origin saw %s%s %d times, want %d", what, host, p, got, want[host])
				}
			}
		}
	}

	if !waitFor(10*time.Second, func() bool { return len(warmLines(t, tr, "warm_done")) >= 1 }) {
		t.Fatalf("no warm_done line within 10s of the start; log:\n%s", tr.LogTail(30))
	}
	warmed := time.Now()
	wantCounts("after the start", map[string]int{down: 1, up: 1})

	// Each URL new: a failure the negative cache remembered would not reach the origin again.
	n := 0
	visit := func(host, path string) reply {
		t.Helper()
		n++
		return send(t, tr, "GET", fmt.Sprintf("%s?i=%d", path, n), map[string]string{"Host": host})
	}
	// The warming's fetches count in the window too: the breaker opens once the failures
	// are half of at least minRequests results, within a few more requests than that.
	opened := false
	for i := 0; i < 3*minRequests && !opened; i++ {
		r := visit(down, prefix+"/fail")
		switch {
		case circuitOpenAt(r, down):
			opened = true
			t.Logf("the breaker of %s refused request %d", down, i+1)
		case r.status != http.StatusServiceUnavailable:
			t.Fatalf("failing request %d: %d, Cache-Status %q; want the origin's 503", i+1, r.status, r.cacheStatus())
		}
	}
	if !opened {
		t.Fatalf("the breaker of %s did not open after %d failures", down, 3*minRequests)
	}
	wantReply(t, "GET on the other host while the breaker is open", visit(up, prefix+"/ok"), http.StatusOK, "ok")

	// The warm pages are stale by the time the breaker lets its probe through (openFor 1s,
	// up to 20% longer), so that warming fetches them again rather than skip them as fresh.
	if wait := staleAfter - time.Since(warmed); wait > 0 {
		time.Sleep(wait)
	}
	probed := false
	began := time.Now()
	for !probed && time.Since(began) < 10*time.Second {
		r := visit(down, prefix+"/ok")
		switch {
		case r.status == http.StatusOK:
			probed = true
		case !circuitOpenAt(r, down):
			t.Fatalf("while waiting for the probe: %d, Cache-Status %q; want 503 circuit-open or the probe's 200", r.status, r.cacheStatus())
		default:
			time.Sleep(100 * time.Millisecond)
		}
	}
	if !probed {
		t.Fatalf("no probe went through within 10s of openFor 1s")
	}
	t.Logf("probe succeeded %v after the wait began", time.Since(began).Round(time.Millisecond))

	recovered := func() []string {
		var out []string
		for _, l := range warmLines(t, tr, "warm_done") {
			if strings.Contains(l, "reason=recovered") {
				out = append(out, l)
			}
		}
		return out
	}
	if !waitFor(10*time.Second, func() bool { return len(recovered()) >= 1 }) {
		t.Fatalf("no warm_done with reason=recovered within 10s of the probe; log:\n%s", tr.LogTail(30))
	}
	started := warmLines(t, tr, "warm_started")
	if len(started) != 2 || !strings.Contains(started[1], "reason=recovered urls=2") {
		t.Errorf("warm_started lines %q, want the start's and one with reason=recovered urls=2 (%s's paths alone)", started, down)
	}
	if done := recovered(); len(done) != 1 || !strings.Contains(done[0], "stored=2") {
		t.Errorf("warm_done lines with reason=recovered %q, want one with stored=2", done)
	}
	if closed := outputWith(t, tr, "event=breaker_closed"); len(closed) != 1 || !strings.Contains(closed[0], "scope="+down) {
		t.Errorf("breaker_closed lines %q, want one for %s", closed, down)
	}
	wantCounts("after the recovery", map[string]int{down: 2, up: 1})
}
