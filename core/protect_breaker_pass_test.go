package core

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/breaker"
)

// recorded is how many results host's breaker holds in its window.
func recorded(t *testing.T, h *Handler, host string) int {
	t.Helper()
	b, ok := h.e.breakers.Lookup(breaker.ScopeKey(breaker.ScopeHost, host))
	if !ok {
		return 0
	}
	st := b.Status(h.s.Now())
	return st.OK + st.Failures
}

// passOrigin answers /ok/... with 200 and no-store, and /down/... with 503 and no-store,
// each after took on clock: a no-store API, whose every request passes through.
func passOrigin(t *testing.T, clock interface{ Add(time.Duration) }, took time.Duration) *scriptOrigin {
	return newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		clock.Add(took)
		w.Header().Set("Cache-Control", "no-store")
		if len(r.URL.Path) > 5 && r.URL.Path[:6] == "/down/" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		w.Write([]byte("x"))
	})
}

// TestPassSampling: while no recorded pass-through failed, one pass-through request in
// passSampleEvery is recorded with its host's breaker; once one fails, every one is, for
// breaker.window; then sampling resumes.
func TestPassSampling(t *testing.T) {
	clock := newFakeClock()
	o := passOrigin(t, clock, 0)
	h := newTestHandler(t, protectSettings(clock, &testLog{}), o)
	const ok = "http://example.com/ok/a"
	do(t, h, http.MethodGet, ok) // the cache's fetch, recorded, marks the key hit-for-pass
	if got := recorded(t, h, "example.com"); got != 1 {
		t.Fatalf("results after the first fetch = %d, want 1", got)
	}
	// Ten pass-through requests 10ms apart: the first and the sixth are the samples.
	for i := 0; i < 10; i++ {
		wantAnswer(t, do(t, h, http.MethodGet, ok), 200, "Weir; fwd=uri-miss; detail=uncacheable", "x")
		clock.Add(10 * time.Millisecond)
	}
	if got := recorded(t, h, "example.com"); got != 3 {
		t.Errorf("results after ten pass-through requests in 100ms = %d, want 3 (the fetch and two samples)", got)
	}

	// A sampled failure: every pass-through request is recorded from then on.
	const down = "http://example.com/down/b"
	do(t, h, http.MethodGet, down) // the fetch, a failure, marks nothing: 503 is no answer to store
	clock.Add(passSampleEvery)
	before := recorded(t, h, "example.com")
	for i := 0; i < 5; i++ {
		do(t, h, http.MethodGet, ok)
	}
	if got := recorded(t, h, "example.com") - before; got != 5 {
		t.Errorf("pass-through requests recorded after a failure = %d of 5, want every one", got)
	}
}

// TestPassThroughOpensTheBreaker: a no-store API that fails has its breaker open after
// breaker.minRequests results; after that the origin sees only probes. The detection bound
// of sampling: at 20 requests a second of 503s, the breaker opens within two seconds. (Its
// ratio rule, not sampling, decides how long a window full of earlier successes takes.)
func TestPassThroughOpensTheBreaker(t *testing.T) {
	clock := newFakeClock()
	failing := false
	o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if failing {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		w.Write([]byte("x"))
	})
	h := newTestHandler(t, protectSettings(clock, &testLog{}), o)
	const api = "http://api.example/items"
	// Healthy once: marked hit-for-pass; then the API fails, 20 requests a second.
	do(t, h, http.MethodGet, api)
	clock.Add(15 * time.Second) // past breaker.window, within coalesce.hitForMissTTL
	failing = true
	start := clock.Now()
	calls := o.callCount()
	var opened time.Duration
	for i := 0; i < 100; i++ {
		w := do(t, h, http.MethodGet, api)
		if w.Header().Get("Cache-Status") == "Weir; fwd=uri-miss; detail=circuit-open; key=api.example" {
			opened = clock.Now().Sub(start)
			break
		}
		wantCode(t, "the origin's failure "+strconv.Itoa(i), w, http.StatusServiceUnavailable)
		clock.Add(50 * time.Millisecond)
	}
	if opened == 0 || opened > 2*time.Second {
		t.Fatalf("breaker opened %s after the origin began failing at 20 requests a second, want within 2s", opened)
	}
	t.Logf("opened after %s, %d failing origin requests", opened, o.callCount()-calls)
	if got := o.callCount() - calls; got > breaker.DefaultMinRequests {
		t.Errorf("origin saw %d failing requests, want at most minRequests (%d)", got, breaker.DefaultMinRequests)
	}
	// Open: nothing reaches the origin until the probe.
	calls = o.callCount()
	for i := 0; i < 20; i++ {
		wantCode(t, "while open", do(t, h, http.MethodGet, api), http.StatusServiceUnavailable)
	}
	if got := o.callCount() - calls; got != 0 {
		t.Errorf("origin calls while open = %d, want 0", got)
	}
}

// TestPassSlowCallSuspect: with breaker.slowCall, a slow sampled pass-through makes every
// pass-through request recorded, so that a browned-out no-store API opens its breaker.
func TestPassSlowCallSuspect(t *testing.T) {
	clock := newFakeClock()
	o := passOrigin(t, clock, 300*time.Millisecond)
	s := protectSettings(clock, &testLog{})
	s.Breaker.SlowCall = 200 * time.Millisecond
	h := newTestHandler(t, s, o)
	const api = "http://example.com/ok/slow"
	var opened bool
	for i := 0; i < 3*breaker.DefaultMinRequests; i++ {
		if w := do(t, h, http.MethodGet, api); w.Code == http.StatusServiceUnavailable {
			opened = true
			break
		}
	}
	if !opened {
		t.Fatalf("a no-store API answering in 300ms with slowCall 200ms: breaker still closed after %d requests", 3*breaker.DefaultMinRequests)
	}
}
