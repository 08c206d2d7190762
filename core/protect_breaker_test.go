package core

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/breaker"
	"github.com/weirproxy/weir/core/missrate"
	"github.com/weirproxy/weir/internal/clocktest"
)

// The origin protections as the engine wires them: the circuit breaker (FR-CB-1..5), the
// negative cache (FR-NEG-1..4) and the miss-rate detector (FR-MR-1, FR-MR-2). Every test runs
// on a fake clock, with the breaker's jitter pinned to its middle, so open periods are exact.

// protectAnswer answers by the first segment of the path:
//
//	/ok/...    200, no-store (marked hit-for-pass)
//	/s/NNN/... status NNN, no freshness
//	/r/NNN/... the same with Retry-After: 7, the origin refusing (the breaker opens at once)
//	/c/...     200, max-age=1, stale-if-error=60
//	/c1/...    200, max-age=1, with an ETag
//	otherwise  200, max-age=60
func protectAnswer(n int, w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(r.URL.Path, "/")
	kind := ""
	if len(parts) > 1 {
		kind = parts[1]
	}
	switch kind {
	case "ok":
		w.Header().Set("Cache-Control", "no-store")
		w.Write([]byte("ok"))
	case "s", "r":
		code := 0
		if len(parts) > 2 {
			code, _ = strconv.Atoi(parts[2])
		}
		if code < 100 {
			code = http.StatusInternalServerError
		}
		if kind == "r" {
			w.Header().Set("Retry-After", "7")
		}
		w.WriteHeader(code)
		w.Write([]byte("failed"))
	case "c":
		w.Header().Set("Cache-Control", "max-age=1, stale-if-error=60")
		w.Write([]byte("cached"))
	case "c1":
		// The validator keeps the entry past its freshness, to be revalidated.
		w.Header().Set("Cache-Control", "max-age=1")
		w.Header().Set("Etag", `"v1"`)
		w.Write([]byte("cached"))
	default:
		w.Header().Set("Cache-Control", "max-age=60")
		w.Write([]byte("fresh"))
	}
}

// protectSettings are default settings on clock, with the breaker's jitter at its middle
// (open periods exactly OpenFor, then doubled) and log and event lines collected in logs.
func protectSettings(clock *clocktest.Clock, logs *testLog) Settings {
	return Settings{
		Now:     clock.Now,
		Breaker: breaker.Settings{Rand: func() float64 { return 0.5 }},
		Log:     func(msg string) { logs.add(msg) },
		Events:  func(line string) { logs.add(line) },
	}
}

// repeatStatus returns n copies of status.
func repeatStatus(status, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = status
	}
	return out
}

// protectURL is the URL of the i-th fetch of a test that wants the origin to answer status:
// each fetch its own key, so no negative entry answers for the origin.
func protectURL(status, i int) string {
	if status == http.StatusOK {
		return "http://example.com/ok/" + strconv.Itoa(i)
	}
	return "http://example.com/s/" + strconv.Itoa(status) + "/" + strconv.Itoa(i)
}

// TestBreakerOpensAtFloor: the breaker opens once the window holds breaker.minRequests (20)
// results and at least failureRatio (half) of them failed; a 500 is the origin answering
// unless countStatus500 is set (FR-CB-1, FR-CB-2). Until then every fetch reaches the origin.
func TestBreakerOpensAtFloor(t *testing.T) {
	tests := []struct {
		desc     string
		count500 bool
		fetches  []int
		wantOpen bool
	}{
		{desc: "19 failures are under the floor", fetches: repeatStatus(503, 19)},
		{desc: "20 failures open it", fetches: repeatStatus(503, 20), wantOpen: true},
		{desc: "10 of 20 failed opens it", fetches: append(repeatStatus(200, 10), repeatStatus(503, 10)...), wantOpen: true},
		{desc: "9 of 20 failed keeps it closed", fetches: append(repeatStatus(200, 11), repeatStatus(503, 9)...)},
		{desc: "failures first, then successes, keep it closed", fetches: append(repeatStatus(503, 19), repeatStatus(200, 10)...)},
		{desc: "500s are the origin answering", fetches: repeatStatus(500, 30)},
		{desc: "500s count with countStatus500", count500: true, fetches: repeatStatus(500, 20), wantOpen: true},
		{desc: "502 and 504 count", fetches: append(repeatStatus(502, 10), repeatStatus(504, 10)...), wantOpen: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			clock := newFakeClock()
			logs := &testLog{}
			s := protectSettings(clock, logs)
			s.BreakerCountStatus500 = tc.count500
			o := newScriptOrigin(t, protectAnswer)
			h := newTestHandler(t, s, o)
			for i, status := range tc.fetches {
				w := do(t, h, http.MethodGet, protectURL(status, i))
				if w.Code != status {
					t.Fatalf("fetch %d: status = %d, want the origin's %d", i+1, w.Code, status)
				}
				if got := o.callCount(); got != i+1 {
					t.Fatalf("fetch %d: origin calls = %d, want %d: the breaker opened too early", i+1, got, i+1)
				}
			}
			before := o.callCount()
			w := do(t, h, http.MethodGet, "http://example.com/ok/next")
			if !tc.wantOpen {
				wantAnswer(t, w, http.StatusOK, "Weir; fwd=uri-miss; detail=no-store", "ok")
				if got := o.callCount(); got != before+1 {
					t.Errorf("origin calls = %d, want %d", got, before+1)
				}
				return
			}
			if w.Code != http.StatusServiceUnavailable {
				t.Errorf("status = %d, want 503", w.Code)
			}
			if got, want := w.Header().Get("Cache-Status"), "Weir; fwd=uri-miss; detail=circuit-open; key=example.com"; got != want {
				t.Errorf("Cache-Status = %q, want %q", got, want)
			}
			if got, want := w.Header().Get("Retry-After"), "5"; got != want {
				t.Errorf("Retry-After = %q, want %q (openFor)", got, want)
			}
			if got := o.callCount(); got != before {
				t.Errorf("origin calls = %d, want %d: an open breaker let a fetch through", got, before)
			}
		})
	}
}

// tripBreaker opens the engine's breaker with 20 failed fetches at the clock's time.
func tripBreaker(t *testing.T, h *Handler, o *scriptOrigin) {
	t.Helper()
	for i := 0; i < breaker.DefaultMinRequests; i++ {
		do(t, h, http.MethodGet, protectURL(503, 1000+i))
	}
	before := o.callCount()
	w := do(t, h, http.MethodGet, "http://example.com/ok/trip-check")
	if w.Code != http.StatusServiceUnavailable || o.callCount() != before {
		t.Fatalf("breaker did not open: status %d, Cache-Status %q", w.Code, w.Header().Get("Cache-Status"))
	}
}

// TestBreakerOpenRefusesOrServesStale: while the breaker is open nothing reaches the origin;
// a request whose stale answer allows it (stale-if-error) gets that answer with
// detail=circuit-open, every other one a fast 503 with Retry-After set to the time left
// (FR-CB-5).
func TestBreakerOpenRefusesOrServesStale(t *testing.T) {
	clock := newFakeClock()
	logs := &testLog{}
	o := newScriptOrigin(t, protectAnswer)
	h := newTestHandler(t, protectSettings(clock, logs), o)
	do(t, h, http.MethodGet, "http://example.com/c/sie")
	do(t, h, http.MethodGet, "http://example.com/c1/nosie")
	do(t, h, http.MethodGet, "http://example.com/ok/pass")
	tripBreaker(t, h, o)
	clock.Add(2 * time.Second)
	calls := o.callCount()

	tests := []struct {
		desc       string
		method     string
		url        string
		status     int
		cache      string
		retryAfter string
		body       string
	}{
		{desc: "stale-if-error serves stale", method: http.MethodGet, url: "http://example.com/c/sie",
			status: 200, cache: "Weir; hit; ttl=-1; detail=circuit-open", body: "cached"},
		{desc: "stale without stale-if-error is refused", method: http.MethodGet, url: "http://example.com/c1/nosie",
			status: 503, cache: "Weir; fwd=stale; detail=circuit-open; key=example.com", retryAfter: "3"},
		{desc: "a cold key is refused", method: http.MethodGet, url: "http://example.com/ok/cold",
			status: 503, cache: "Weir; fwd=uri-miss; detail=circuit-open; key=example.com", retryAfter: "3"},
		{desc: "a cold HEAD is refused", method: http.MethodHead, url: "http://example.com/ok/head",
			status: 503, cache: "Weir; fwd=uri-miss; detail=circuit-open; key=example.com", retryAfter: "3"},
		{desc: "POST is refused", method: http.MethodPost, url: "http://example.com/ok/post",
			status: 503, cache: "Weir; fwd=method; detail=circuit-open; key=example.com", retryAfter: "3"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			w := do(t, h, tc.method, tc.url)
			if w.Code != tc.status {
				t.Errorf("status = %d, want %d", w.Code, tc.status)
			}
			if got := w.Header().Get("Cache-Status"); got != tc.cache {
				t.Errorf("Cache-Status = %q, want %q", got, tc.cache)
			}
			if got := w.Header().Get("Retry-After"); got != tc.retryAfter {
				t.Errorf("Retry-After = %q, want %q", got, tc.retryAfter)
			}
			if tc.body != "" && w.Body.String() != tc.body {
				t.Errorf("body = %q, want %q", w.Body.String(), tc.body)
			}
		})
	}

	t.Run("a hit-for-pass key is refused", func(t *testing.T) {
		w := do(t, h, http.MethodGet, "http://example.com/ok/pass")
		if w.Code != http.StatusServiceUnavailable {
			t.Errorf("status = %d, want 503", w.Code)
		}
		if got := w.Header().Get("Retry-After"); got != "3" {
			t.Errorf("Retry-After = %q, want %q", got, "3")
		}
		cs := w.Header().Get("Cache-Status")
		if !strings.HasPrefix(cs, "Weir; fwd=uri-miss; ") || !strings.HasSuffix(cs, "; detail=circuit-open; key=example.com") {
			t.Errorf("Cache-Status = %q, want fwd=uri-miss ending in detail=circuit-open", cs)
		}
		// RFC 8941 section 4.2.3.2: a parser keeps the last of two parameters with one name,
		// so a second detail silently drops the first; a serializer never writes two.
		if n := strings.Count(cs, "detail="); n != 1 {
			t.Errorf("Cache-Status = %q carries %d detail parameters, want 1", cs, n)
		}
	})

	if got := o.callCount(); got != calls {
		t.Errorf("origin calls while open = %d, want none", got-calls)
	}
}

// TestBreakerScopes: which requests a breaker tripped by example.com's failures holds back,
// by breaker.scope. One middleware is often attached to the routers of many hosts, so by
// default (host) a failing backend leaves the others alone. Both a fetch of a cold key and a
// pass-through request for a hit-for-pass key are checked: they take different paths.
func TestBreakerScopes(t *testing.T) {
	// Hosts: the failing one, a sibling under the same registrable domain, and another domain.
	hosts := []string{"example.com", "www.example.com", "example.net"}
	tests := []struct {
		desc  string
		scope string
		held  []bool // per host, whether its requests are refused with circuit-open
		key   string // the breaker the refusals name
	}{
		{desc: "the default is host", scope: "", held: []bool{true, false, false}, key: "example.com"},
		{desc: "host", scope: breaker.ScopeHost, held: []bool{true, false, false}, key: "example.com"},
		{desc: "domain", scope: breaker.ScopeDomain, held: []bool{true, true, false}, key: "example.com"},
		{desc: "engine", scope: breaker.ScopeEngine, held: []bool{true, true, true}, key: "engine"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			clock := newFakeClock()
			s := protectSettings(clock, &testLog{})
			s.Breaker.Scope = tc.scope
			o := newScriptOrigin(t, protectAnswer)
			h := newTestHandler(t, s, o)
			for _, host := range hosts {
				h.markPass("http://"+host+"/ok/pass", clock.Now())
			}
			tripBreaker(t, h, o)
			for i, host := range hosts {
				for _, path := range []string{"/ok/cold", "/ok/pass"} {
					before := o.callCount()
					w := do(t, h, http.MethodGet, "http://"+host+path)
					cs := w.Header().Get("Cache-Status")
					if !tc.held[i] {
						if w.Code != http.StatusOK || o.callCount() != before+1 {
							t.Errorf("%s%s: %d %q, origin calls +%d; want 200 from the origin: its breaker is not the failing host's",
								host, path, w.Code, cs, o.callCount()-before)
						}
						continue
					}
					if w.Code != http.StatusServiceUnavailable || !strings.HasSuffix(cs, "; detail=circuit-open; key="+tc.key) || w.Header().Get("Retry-After") == "" {
						t.Errorf("%s%s: %d %q, Retry-After %q; want 503 circuit-open with Retry-After",
							host, path, w.Code, cs, w.Header().Get("Retry-After"))
					}
					if got := o.callCount(); got != before {
						t.Errorf("%s%s: origin calls +%d with its breaker open, want none", host, path, got-before)
					}
				}
			}
		})
	}
}

// TestPassThroughWhileEveryBreakerIsClosed: with breakers per host (the default), a
// pass-through request that is not the breakers' sample finds no breaker while every breaker
// of the engine is closed, one atomic load (breaker.AllClosed) rather than a lookup and a
// lock; once one is open, each pass-through request asks its own host's breaker.
func TestPassThroughWhileEveryBreakerIsClosed(t *testing.T) {
	clock := newFakeClock()
	o := newScriptOrigin(t, protectAnswer)
	h := newTestHandler(t, protectSettings(clock, &testLog{}), o)
	h.markPass("http://a.example/ok/pass", clock.Now())
	h.markPass("http://b.example/ok/pass", clock.Now())
	h.markPass("http://example.com/ok/pass", clock.Now())
	// The first is the sample, recorded with its breaker; the next, within passSampleEvery,
	// is not.
	wantAnswer(t, do(t, h, http.MethodGet, "http://a.example/ok/pass"), http.StatusOK, "Weir; fwd=uri-miss; detail=uncacheable", "ok")
	w := do(t, h, http.MethodGet, "http://b.example/ok/pass")
	wantAnswer(t, w, http.StatusOK, "Weir; fwd=uri-miss; detail=uncacheable", "ok")
	if _, ok := h.e.breakers.Lookup(breaker.ScopeKey(breaker.ScopeHost, "b.example")); ok {
		t.Errorf("a pass-through request, not the sample, with no breaker open looked its breaker up")
	}

	tripBreaker(t, h, o)
	w = do(t, h, http.MethodGet, "http://a.example/ok/pass")
	wantAnswer(t, w, http.StatusOK, "Weir; fwd=uri-miss; detail=uncacheable", "ok")
	if _, ok := h.e.breakers.Lookup(breaker.ScopeKey(breaker.ScopeHost, "a.example")); !ok {
		t.Errorf("with example.com's breaker open, a.example's pass-through request did not ask its own breaker")
	}
	w = do(t, h, http.MethodGet, "http://example.com/ok/pass")
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Errorf("example.com's pass-through request with its breaker open: %d, Retry-After %q; want 503 with Retry-After",
			w.Code, w.Header().Get("Retry-After"))
	}
}

// TestBreakerProbe: once the open period ends exactly one probe goes to the origin; while it
// is out others are refused with Retry-After 1; a failed probe reopens the breaker for twice
// as long, a successful one closes it (FR-CB-3, FR-CB-4).
func TestBreakerProbe(t *testing.T) {
	clock := newFakeClock()
	logs := &testLog{}
	o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n <= 21 {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte("down"))
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		w.Write([]byte("up"))
	})
	h := newTestHandler(t, protectSettings(clock, logs), o)
	for i := 0; i < 20; i++ {
		do(t, h, http.MethodGet, "http://example.com/f/"+strconv.Itoa(i))
	}
	refused := func(what, url, retryAfter string) {
		t.Helper()
		calls := o.callCount()
		w := do(t, h, http.MethodGet, url)
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != retryAfter ||
			w.Header().Get("Cache-Status") != "Weir; fwd=uri-miss; detail=circuit-open; key=example.com" {
			t.Errorf("%s: status %d, Retry-After %q, Cache-Status %q; want 503, %q, detail=circuit-open",
				what, w.Code, w.Header().Get("Retry-After"), w.Header().Get("Cache-Status"), retryAfter)
		}
		if o.callCount() != calls {
			t.Errorf("%s: reached the origin", what)
		}
	}

	clock.Add(4 * time.Second)
	refused("a second before the deadline", "http://example.com/x/1", "1")

	clock.Add(time.Second)
	o.hold(21)
	probe := serveAsync(h, newRequest(http.MethodGet, "http://example.com/p/1"))
	o.waitEntered(t, 21)
	refused("while the probe is out", "http://example.com/x/2", "1")
	o.release(21)
	w := awaitAnswer(t, probe)
	wantAnswer(t, w, http.StatusServiceUnavailable, "Weir; fwd=uri-miss; detail=origin-error", "down")

	refused("after the failed probe", "http://example.com/x/3", "10")
	clock.Add(9 * time.Second)
	refused("a second before the doubled deadline", "http://example.com/x/4", "1")

	clock.Add(time.Second)
	wantAnswer(t, do(t, h, http.MethodGet, "http://example.com/p/2"), http.StatusOK, "Weir; fwd=uri-miss; detail=no-store", "up")
	for i := 0; i < 3; i++ {
		wantAnswer(t, do(t, h, http.MethodGet, "http://example.com/y/"+strconv.Itoa(i)), http.StatusOK, "Weir; fwd=uri-miss; detail=no-store", "up")
	}
	if got, want := o.callCount(), 25; got != want {
		t.Errorf("origin calls = %d, want %d (20 failures, 2 probes, 3 after closing)", got, want)
	}
}

// TestBreakerLearnsFrom: the breaker counts the cache's own fetches and unsafe methods
// (FR-CB-1, FR-CB-2), and requests passed through for hit-for-pass keys: a sample of them
// while none failed, every one once one did (passSampler), so that a failing no-store API
// opens its breaker after minRequests results as a cacheable one does.
func TestBreakerLearnsFrom(t *testing.T) {
	tests := []struct {
		desc     string
		method   string
		url      func(i int) string
		wantOpen bool
	}{
		{desc: "failed fetches of the cache", method: http.MethodGet, wantOpen: true,
			url: func(i int) string { return "http://example.com/miss/" + strconv.Itoa(i) }},
		{desc: "failed POSTs", method: http.MethodPost, wantOpen: true,
			url: func(i int) string { return "http://example.com/api" }},
		{desc: "failed pass-through GETs", method: http.MethodGet, wantOpen: true,
			url: func(i int) string { return "http://example.com/api" }},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			clock := newFakeClock()
			logs := &testLog{}
			// Up for the first call, down from the second.
			o := failingOrigin(t, 1, []string{"Cache-Control", "no-store"}, "up", http.StatusServiceUnavailable)
			h := newTestHandler(t, protectSettings(clock, logs), o)
			// The first answer marks /api hit-for-pass.
			wantAnswer(t, do(t, h, http.MethodGet, "http://example.com/api"), http.StatusOK, "Weir; fwd=uri-miss; detail=no-store", "up")
			// With that success, 19 failures fill the window to minRequests (20).
			for i := 0; i < breaker.DefaultMinRequests-1; i++ {
				if w := do(t, h, tc.method, tc.url(i)); w.Code != http.StatusServiceUnavailable || strings.Contains(w.Header().Get("Cache-Status"), "circuit-open") {
					t.Fatalf("request %d: status %d, Cache-Status %q; want the origin's 503", i+1, w.Code, w.Header().Get("Cache-Status"))
				}
			}
			calls := o.callCount()
			w := do(t, h, http.MethodGet, "http://example.com/next")
			open := w.Header().Get("Cache-Status") == "Weir; fwd=uri-miss; detail=circuit-open; key=example.com"
			if open != tc.wantOpen || open != (o.callCount() == calls) {
				t.Errorf("after %d failures: status %d, Cache-Status %q, origin calls +%d; want breaker open %v",
					breaker.DefaultMinRequests-1, w.Code, w.Header().Get("Cache-Status"), o.callCount()-calls, tc.wantOpen)
			}
		})
	}
}

// missRateSettings are protectSettings with the miss-rate detector throttling after
// minMisses misses within a 10s window.
func missRateSettings(clock *clocktest.Clock, logs *testLog, minMisses int, throttle bool) Settings {
	s := protectSettings(clock, logs)
	s.MissRate = missrate.Settings{Window: 10 * time.Second, MinMisses: minMisses, Throttle: throttle}
	return s
}
