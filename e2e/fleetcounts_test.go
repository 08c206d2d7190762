package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestBreakerFleetCounts: A and B share one Redis and one middleware (breaker minRequests
// 20), and each sees half of a failing origin's requests: 12 failures each, interleaved, 24
// in all. Neither holds 20 of its own, so without the fleet's counts neither would open;
// each publishes its window's counts every half second and judges the sum, so both open.
func TestBreakerFleetCounts(t *testing.T) {
	requireE2ERedis(t)
	rd := startRedis(t, 0)
	o := newOrigin(t)
	var failures int64
	o.Handle("/fc/fail", func(w http.ResponseWriter, r *http.Request) {
		atomic.AddInt64(&failures, 1)
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "down")
	})
	conf := map[string]interface{}{
		"store":    map[string]interface{}{"url": rd.URL(0)},
		"breaker":  map[string]interface{}{"minRequests": "20", "window": "20s", "openFor": "10s"},
		"negative": map[string]interface{}{"ttl": "1ns"},
	}
	a, b := startPair(t, o, cachedRoute("fc", "/fc", "weir-fc", conf))

	const each = 12
	local := map[string]int{}
	for i := 0; i < each; i++ {
		for name, tr := range map[string]*Traefik{"A": a, "B": b} {
			r := callT(t, tr, http.MethodGet, fmt.Sprintf("/fc/fail?%s=%d", name, i))
			if r.status != http.StatusServiceUnavailable {
				t.Fatalf("GET %d on %s: %d, want 503", i, name, r.status)
			}
			if r.cacheStatus().params["detail"] != "circuit-open" {
				local[name]++
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("origin failures answered: A %d, B %d (each under minRequests 20); origin saw %d",
		local["A"], local["B"], atomic.LoadInt64(&failures))
	// Each publishes and reads the others' counts every half second; one more failure then
	// trips an instance that has not opened yet.
	time.Sleep(1200 * time.Millisecond)
	for name, tr := range map[string]*Traefik{"A": a, "B": b} {
		callT(t, tr, http.MethodGet, "/fc/fail?last="+name)
		before := atomic.LoadInt64(&failures)
		r := callT(t, tr, http.MethodGet, "/fc/fail?check="+name)
		cs := r.cacheStatus()
		if r.status != http.StatusServiceUnavailable || cs.params["detail"] != "circuit-open" {
			t.Errorf("%s after the fleet's %d failures: %d %q, want 503 circuit-open", name, 2*each, r.status, cs)
		}
		if got := atomic.LoadInt64(&failures); got != before {
			t.Errorf("%s let a request through to the origin while open", name)
		}
		t.Logf("%s: %d %q, Retry-After %s", name, r.status, cs, r.header.Get("Retry-After"))
	}
	tripped := 0
	for name, tr := range map[string]*Traefik{"A": a, "B": b} {
		for _, line := range strings.Split(tr.LogTail(400), "\n") {
			if strings.Contains(line, "breaker_opened") {
				tripped++
				t.Logf("%s: %s", name, strings.TrimSpace(line))
			}
		}
	}
	if tripped == 0 {
		t.Errorf("no instance logged breaker_opened: neither opened on the fleet's counts")
	}
}
