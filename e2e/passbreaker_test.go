package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// TestPassThroughBreaker: a no-store API, whose every request after the first passes through
// (hit-for-pass), behind Weir with the breaker's defaults (minRequests 20, failureRatio 0.5,
// window 10s, openFor 5s). When the API starts answering 503, a client sending 60 requests,
// at 20 a second and at 100 a second, has the breaker open after about minRequests origin
// requests: the breaker learns from pass-through requests, and once a recorded one failed it
// records every one, not one in 50ms (at 100 a second, one in 50ms would let about five times
// as many through first). After that the origin sees at most the probes of the open periods
// (none within 5s less the jitter), and the client gets circuit-open refusals.
func TestPassThroughBreaker(t *testing.T) {
	const (
		prefix = "/pt"
		// minRequests is breaker.minRequests's default.
		minRequests = 20
		// margin is how many more origin requests than minRequests may come before the first
		// refusal: the failing requests the sample missed before the first one recorded, and
		// the healthy requests that weigh against the failures in the window.
		margin = 3
		// healthy requests are sent before the API fails; failing ones after.
		healthy = 5
		failing = 60
	)
	o := newOrigin(t)
	conf := specConfig(t)
	conf["admin"] = map[string]interface{}{"path": prefix + "/_weir", "token": mfToken}
	tr := startTraefik(t, o, cachedRoute("pt", prefix, "weir-pt", conf))

	tests := []struct {
		desc string
		// name is the case's path under prefix and its host's first label: a breaker and a
		// hit-for-pass mark of its own.
		name string
		// every is the client's pace.
		every time.Duration
	}{
		{desc: "20 requests a second", name: "slow", every: 50 * time.Millisecond},
		{desc: "100 requests a second", name: "fast", every: 10 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			host := tc.name + ".pt.test"
			path := prefix + "/" + tc.name
			var down int32
			o.Handle(path, func(w http.ResponseWriter, r *http.Request) {
				if atomic.LoadInt32(&down) != 0 {
					w.WriteHeader(http.StatusServiceUnavailable)
					io.WriteString(w, "failing")
					return
				}
				w.Header().Set("Cache-Control", "no-store")
				io.WriteString(w, "ok")
			})
			hostHeader := map[string]string{"Host": host}

			// The first request is the cache's fetch, which marks the URL hit-for-pass; the
			// others pass through.
			ticker := time.NewTicker(tc.every)
			defer ticker.Stop()
			for i := 0; i < healthy; i++ {
				r := send(t, tr, "GET", path, hostHeader)
				wantReply(t, fmt.Sprintf("healthy request %d", i+1), r, http.StatusOK, "ok")
				if i > 0 && r.cacheStatus().params["detail"] != "uncacheable" {
					t.Errorf("healthy request %d: Cache-Status %q, want it passed through (detail=uncacheable)", i+1, r.cacheStatus())
				}
				<-ticker.C
			}
			wantCount(t, o, path, healthy)
			if b := breakerState(t, tr, prefix, host); b.State != "closed" {
				t.Fatalf("breaker of %s before the failures: %+v, want closed", host, b)
			}

			atomic.StoreInt32(&down, 1)
			began := time.Now()
			// openedAt is the index of the first circuit-open refusal, -1 before it; hitsBefore
			// is how many failing requests had reached the origin by then.
			openedAt, hitsBefore := -1, int64(0)
			var openedAfter time.Duration
			refusals := 0
			for i := 0; i < failing; i++ {
				r := send(t, tr, "GET", path, hostHeader)
				cs := r.cacheStatus()
				switch {
				case r.status != http.StatusServiceUnavailable:
					t.Errorf("failing request %d: %d, Cache-Status %q; want 503", i+1, r.status, cs)
				case circuitOpenAt(r, host):
					refusals++
					if openedAt < 0 {
						openedAt, hitsBefore, openedAfter = i, o.Count(path)-healthy, time.Since(began)
					}
					ra, err := strconv.Atoi(r.header.Get("Retry-After"))
					if err != nil || ra < 1 || ra > 6 {
						t.Errorf("failing request %d: refused with Retry-After %q, want 1 to 6 seconds (openFor 5s, up to 20%% longer)", i+1, r.header.Get("Retry-After"))
					}
				case openedAt >= 0:
					// A probe of the half-open breaker: the origin's own 503.
					t.Logf("failing request %d, after the breaker opened: %q (a probe)", i+1, cs)
				case cs.params["detail"] != "uncacheable":
					// Before the breaker opens, every request reaches the origin: the negative
					// cache does not answer a hit-for-pass URL.
					t.Errorf("failing request %d: Cache-Status %q, want the origin's 503 passed through (detail=uncacheable)", i+1, cs)
				}
				<-ticker.C
			}
			total := o.Count(path) - healthy
			t.Logf("%d failing requests every %v: the breaker refused from request %d (%v after the first failure), after %d reached the origin; %d reached it after that; %d refusals",
				failing, tc.every, openedAt+1, openedAfter.Round(time.Millisecond), hitsBefore, total-hitsBefore, refusals)
			if openedAt < 0 {
				t.Fatalf("the breaker never opened: all %d failing requests reached the origin (%d origin requests)", failing, total)
			}
			if hitsBefore > minRequests+margin {
				t.Errorf("%d failing requests reached the origin before the first refusal, want at most minRequests+%d = %d",
					hitsBefore, margin, minRequests+margin)
			}
			// The rest of the loop (at most about 2s) is shorter than the first open period (5s
			// less 20%): a probe would be a surprise, two are the most allowed.
			if after := total - hitsBefore; after > 2 {
				t.Errorf("%d requests reached the origin after the breaker opened, want only probes (at most 2)", after)
			}
			b := breakerState(t, tr, prefix, host)
			if b.State != "open" || b.Reason != "failure-ratio" || b.OpenedBy != "auto" {
				t.Errorf("breaker of %s: %+v, want open on its own by failure-ratio", host, b)
			}
		})
	}
}
