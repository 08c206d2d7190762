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
// pass-through request finds no breaker while every breaker of the engine is closed, one
// atomic load (breaker.AllClosed) rather than a lookup and a lock; once one is open, each
// pass-through request asks its own host's breaker.
func TestPassThroughWhileEveryBreakerIsClosed(t *testing.T) {
	clock := newFakeClock()
	o := newScriptOrigin(t, protectAnswer)
	h := newTestHandler(t, protectSettings(clock, &testLog{}), o)
	h.markPass("http://a.example/ok/pass", clock.Now())
	h.markPass("http://example.com/ok/pass", clock.Now())
	w := do(t, h, http.MethodGet, "http://a.example/ok/pass")
	wantAnswer(t, w, http.StatusOK, "Weir; fwd=uri-miss; detail=uncacheable", "ok")
	if n := h.e.breakers.Len(); n != 0 {
		t.Errorf("breakers after a pass-through request with none open = %d, want 0: it looked its breaker up", n)
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

// TestNegativeCache: a 502, 503 or 504 on a key with nothing stored is remembered for
// negative.ttl: the remembered status, the origin's Retry-After, no body, no origin contact
// (FR-NEG-1, FR-NEG-2). A 500, a 4xx and a failure of a request with credentials are not
// (FR-NEG-4).
func TestNegativeCache(t *testing.T) {
	tests := []struct {
		desc         string
		url          string
		header       []string
		wantNegative bool
		status       int
		// wantRetryAfter is the Retry-After of each answer from the negative entry: the
		// origin's own as it counts down, else the entry's time left.
		wantRetryAfter []string
		// obeyed: the origin's Retry-After opened the breaker for 7s, which still holds
		// the request after the negative entry's ttl.
		obeyed bool
	}{
		{desc: "503 is remembered", url: "/s/503/a", wantNegative: true, status: 503, wantRetryAfter: []string{"2", "1", "1"}},
		{desc: "503 with Retry-After is remembered and obeyed", url: "/r/503/a", wantNegative: true, status: 503,
			wantRetryAfter: []string{"7", "6", "6"}, obeyed: true},
		{desc: "502 is remembered", url: "/s/502/a", wantNegative: true, status: 502, wantRetryAfter: []string{"2", "1", "1"}},
		{desc: "504 is remembered", url: "/s/504/a", wantNegative: true, status: 504, wantRetryAfter: []string{"2", "1", "1"}},
		{desc: "500 is not", url: "/s/500/a", status: 500},
		{desc: "404 is not", url: "/s/404/a", status: 404},
		{desc: "429 is not", url: "/s/429/a", status: 429},
		{desc: "503 with Authorization is not", url: "/s/503/a", header: []string{"Authorization", "Bearer x"}, status: 503},
		{desc: "503 with a cookie is not", url: "/s/503/a", header: []string{"Cookie", "session=1"}, status: 503},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			clock := newFakeClock()
			logs := &testLog{}
			o := newScriptOrigin(t, protectAnswer)
			h := newTestHandler(t, protectSettings(clock, logs), o)
			url := "http://example.com" + tc.url

			first := do(t, h, http.MethodGet, url, tc.header...)
			if first.Code != tc.status || first.Body.String() != "failed" {
				t.Fatalf("first: status %d body %q, want the origin's %d", first.Code, first.Body.String(), tc.status)
			}
			steps := []struct {
				advance time.Duration
				ttl     string
			}{{0, "2"}, {time.Second, "1"}, {999 * time.Millisecond, "1"}}
			for i, st := range steps {
				clock.Add(st.advance)
				w := do(t, h, http.MethodGet, url, tc.header...)
				if !tc.wantNegative {
					if w.Header().Get("Cache-Status") == "" || strings.Contains(w.Header().Get("Cache-Status"), "negative") {
						t.Errorf("request %d: Cache-Status = %q, want a forwarded answer", i+2, w.Header().Get("Cache-Status"))
					}
					if got := o.callCount(); got != i+2 {
						t.Errorf("request %d: origin calls = %d, want %d", i+2, got, i+2)
					}
					continue
				}
				wantAnswer(t, w, tc.status, "Weir; hit; ttl="+st.ttl+"; detail=negative", "")
				if got := w.Header().Get("Retry-After"); got != tc.wantRetryAfter[i] {
					t.Errorf("request %d: Retry-After = %q, want %q", i+2, got, tc.wantRetryAfter[i])
				}
				if got := w.Header().Get("Content-Length"); got != "0" {
					t.Errorf("request %d: Content-Length = %q, want 0", i+2, got)
				}
				if got := o.callCount(); got != 1 {
					t.Errorf("request %d: origin calls = %d, want 1", i+2, got)
				}
			}
			if !tc.wantNegative {
				return
			}
			clock.Add(time.Millisecond)
			w := do(t, h, http.MethodGet, url, tc.header...)
			if tc.obeyed {
				wantAnswer(t, w, http.StatusServiceUnavailable, "Weir; fwd=uri-miss; detail=circuit-open; key=example.com",
					"origin unavailable, retry later\n")
				if got := w.Header().Get("Retry-After"); got != "5" {
					t.Errorf("after the ttl: Retry-After = %q, want the 5s left of the origin's 7", got)
				}
				if got := o.callCount(); got != 1 {
					t.Errorf("after the ttl: origin calls = %d, want 1", got)
				}
				return
			}
			if got := w.Header().Get("Cache-Status"); got != "Weir; fwd=uri-miss; detail=origin-error" {
				t.Errorf("after the ttl: Cache-Status = %q, want the origin's answer", got)
			}
			if got := o.callCount(); got != 2 {
				t.Errorf("after the ttl: origin calls = %d, want 2", got)
			}
		})
	}
}

// TestNegativeCacheAnswersHead: a negative entry answers HEAD as it answers GET: the
// remembered status without reaching the origin (FR-NEG-1). A HEAD retry loop (a health
// check, a client probing a failing URL) is the same burst the entry exists to absorb.
func TestNegativeCacheAnswersHead(t *testing.T) {
	clock := newFakeClock()
	logs := &testLog{}
	o := newScriptOrigin(t, protectAnswer)
	h := newTestHandler(t, protectSettings(clock, logs), o)
	first := do(t, h, http.MethodGet, "http://example.com/s/503/h")
	if first.Code != http.StatusServiceUnavailable || o.callCount() != 1 {
		t.Fatalf("GET: status %d, origin calls %d; want the origin's 503", first.Code, o.callCount())
	}
	for i := 0; i < 3; i++ {
		w := do(t, h, http.MethodHead, "http://example.com/s/503/h")
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Cache-Status") != "Weir; hit; ttl=2; detail=negative" {
			t.Errorf("HEAD %d: status %d, Cache-Status %q; want 503 from the negative entry", i+1, w.Code, w.Header().Get("Cache-Status"))
		}
	}
	if got := o.callCount(); got != 1 {
		t.Errorf("origin calls = %d, want 1: HEAD went past the negative entry", got)
	}
}

// TestNegativeCacheNotOverStale: a key with a stale answer stored is never answered from a
// negative entry: each request tries the origin again (or serves stale if allowed).
func TestNegativeCacheNotOverStale(t *testing.T) {
	clock := newFakeClock()
	logs := &testLog{}
	// The validator keeps the entry past its freshness, to be revalidated; the origin is down
	// from the second call.
	o := failingOrigin(t, 1, []string{"Cache-Control", "max-age=1", "Etag", `"v1"`}, "v1", http.StatusServiceUnavailable)
	h := newTestHandler(t, protectSettings(clock, logs), o)
	do(t, h, http.MethodGet, "http://example.com/a")
	clock.Add(2 * time.Second)
	for i := 0; i < 3; i++ {
		wantAnswer(t, do(t, h, http.MethodGet, "http://example.com/a"), http.StatusServiceUnavailable, "Weir; fwd=stale; detail=origin-error", "down")
	}
	wantCalls(t, o, 4)
}

// TestBreakerLearnsFrom: the breaker counts the cache's own fetches and unsafe methods
// (FR-CB-1, FR-CB-2), not requests passed through for hit-for-pass keys: seeing their status
// would put a writer of Weir's under every pass-through answer, which costs microseconds per
// call in Yaegi (see Handler.pass). An open breaker still stops pass-through requests, and a
// probe among them is recorded.
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
		{desc: "failed pass-through GETs are not counted", method: http.MethodGet, wantOpen: false,
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

// TestMissRateThrottle: a flood of distinct queries on one path raises one anomaly, logged
// once; with throttling the flooded partition gets one origin fetch per window, the rest 503
// with Retry-After (or stale, detail=miss-rate), and other partitions are left alone; the
// throttle ends after a window without the flood (FR-MR-1, FR-MR-2).
func TestMissRateThrottle(t *testing.T) {
	clock := newFakeClock()
	logs := &testLog{}
	o := newScriptOrigin(t, protectAnswer)
	h := newTestHandler(t, missRateSettings(clock, logs, 10, true), o)
	flood := func(i int) string { return "http://example.com/c/flood?cb=" + strconv.Itoa(i) }
	fetched := func(what string, i int) {
		t.Helper()
		calls := o.count("/c/flood")
		w := do(t, h, http.MethodGet, flood(i))
		if w.Code != http.StatusOK || o.count("/c/flood") != calls+1 {
			t.Errorf("%s (cb=%d): status %d, Cache-Status %q, origin calls +%d; want fetched",
				what, i, w.Code, w.Header().Get("Cache-Status"), o.count("/c/flood")-calls)
		}
	}
	throttled := func(what string, i int, retryAfter string) {
		t.Helper()
		calls := o.count("/c/flood")
		w := do(t, h, http.MethodGet, flood(i))
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != retryAfter ||
			w.Header().Get("Cache-Status") != "Weir; fwd=uri-miss; detail=miss-rate" {
			t.Errorf("%s (cb=%d): status %d, Retry-After %q, Cache-Status %q; want 503, %q, detail=miss-rate",
				what, i, w.Code, w.Header().Get("Retry-After"), w.Header().Get("Cache-Status"), retryAfter)
		}
		if o.count("/c/flood") != calls {
			t.Errorf("%s (cb=%d): reached the origin", what, i)
		}
	}
	other := 0
	otherServed := func(what string) {
		t.Helper()
		w := do(t, h, http.MethodGet, "http://example.com/other?q="+strconv.Itoa(other))
		other++
		if w.Code != http.StatusOK || o.count("/other") != other {
			t.Errorf("%s: other partition got status %d, Cache-Status %q, origin calls %d; want 200 from the origin, %d calls",
				what, w.Code, w.Header().Get("Cache-Status"), o.count("/other"), other)
		}
	}

	for i := 0; i < 9; i++ {
		fetched("before the threshold", i)
	}
	if n := len(logs.with("miss_rate_anomaly")); n != 0 {
		t.Fatalf("%d anomalies before minMisses, want none", n)
	}
	// The miss that crosses the threshold is the window's one fetch.
	fetched("the miss that raises the anomaly", 9)
	lines := logs.with("miss_rate_anomaly")
	if len(lines) != 1 {
		t.Fatalf("anomaly lines = %d, want 1: %q", len(lines), lines)
	}
	for _, want := range []string{"partition=http://example.com/c/flood ", "varying=cb ", "throttled=true", "misses=10"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("anomaly line %q lacks %q", lines[0], want)
		}
	}
	for i := 10; i < 30; i++ {
		throttled("flood in the first window", i, "10")
	}
	otherServed("during the flood")
	clock.Add(5 * time.Second)
	throttled("halfway through the window", 30, "5")
	otherServed("halfway through the window")

	// The window that ended held 21 misses: still a flood, so one more fetch, then refusals.
	clock.Add(5 * time.Second)
	fetched("first miss of the second window", 31)
	throttled("second miss of the second window", 32, "10")
	stale := do(t, h, http.MethodGet, flood(0))
	if got, want := stale.Header().Get("Cache-Status"), "Weir; hit; ttl=-9; detail=miss-rate"; stale.Code != http.StatusOK || got != want {
		t.Errorf("stale key while throttled: status %d, Cache-Status %q; want 200, %q", stale.Code, got, want)
	}
	otherServed("second window")

	// The second window held 3 misses: the flood is over, the flag clears.
	clock.Add(10 * time.Second)
	fetched("after the flood", 40)
	fetched("after the flood", 41)
	otherServed("after the flood")

	if n := len(logs.with("miss_rate_anomaly")); n != 1 {
		t.Errorf("anomaly lines = %d, want exactly 1: %q", n, logs.with("miss_rate_anomaly"))
	}
	if got, want := o.count("/c/flood"), 13; got != want {
		t.Errorf("origin calls for the flooded path = %d, want %d (10 before, 1 in the second window, 2 after)", got, want)
	}
}

// TestMissRateReportOnly: without throttle the flood is logged once and every miss is
// still fetched.
func TestMissRateReportOnly(t *testing.T) {
	clock := newFakeClock()
	logs := &testLog{}
	o := newScriptOrigin(t, protectAnswer)
	h := newTestHandler(t, missRateSettings(clock, logs, 10, false), o)
	for i := 0; i < 40; i++ {
		w := do(t, h, http.MethodGet, "http://example.com/flood?cb="+strconv.Itoa(i))
		if w.Code != http.StatusOK {
			t.Fatalf("request %d: status %d, Cache-Status %q, want 200", i, w.Code, w.Header().Get("Cache-Status"))
		}
	}
	if got := o.count("/flood"); got != 40 {
		t.Errorf("origin calls = %d, want 40", got)
	}
	lines := logs.with("miss_rate_anomaly")
	if len(lines) != 1 || !strings.Contains(lines[0], "throttled=false") || !strings.Contains(lines[0], "varying=cb") {
		t.Errorf("anomaly lines = %q, want one with throttled=false and varying=cb", lines)
	}
}

// TestMissRateCountsQueryHits: hits on URLs with a query count as lookups of their path, on
// the hit path as on the general one: a path whose pages (?page=N) are mostly hits is not a flood
// when a few new pages miss, and its misses are not throttled (FR-MR-1).
func TestMissRateCountsQueryHits(t *testing.T) {
	clock := newFakeClock()
	logs := &testLog{}
	o := newScriptOrigin(t, protectAnswer)
	h := newTestHandler(t, missRateSettings(clock, logs, 10, true), o)
	page := func(i int) string { return "http://example.com/list?page=" + strconv.Itoa(i) }
	for i := 1; i <= 9; i++ {
		if got := do(t, h, http.MethodGet, page(i)).Header().Get("Cache-Status"); got != "Weir; fwd=uri-miss; stored" {
			t.Fatalf("page %d: Cache-Status %q, want a miss, stored", i, got)
		}
	}
	for i := 0; i < 180; i++ {
		if got := do(t, h, http.MethodGet, page(1+i%9)).Header().Get("Cache-Status"); got != "Weir; hit; ttl=60" {
			t.Fatalf("GET %s: Cache-Status %q, want a hit", page(1+i%9), got)
		}
	}
	// Two more misses in the window: 11 of 191 lookups.
	for i := 10; i <= 11; i++ {
		w := do(t, h, http.MethodGet, page(i))
		if got := w.Header().Get("Cache-Status"); w.Code != http.StatusOK || got != "Weir; fwd=uri-miss; stored" {
			t.Errorf("page %d: status %d, Cache-Status %q; want 200, a miss, stored", i, w.Code, got)
		}
	}
	if lines := logs.with("miss_rate_anomaly"); len(lines) != 0 {
		t.Errorf("a path answered mostly from the cache raised %d anomalies, want none: %q", len(lines), lines)
	}
}

// TestMissRateIgnoresCacheAnswers: the detector looks for a flood of distinct keys that
// turns the cache into a pass-through (FR-MR-1). Answers the cache gives from what it holds
// (a negative entry, a stale answer while the breaker is open) are not such misses: however
// often one key is asked for, no anomaly is raised, and with throttling on the key is not
// held to one fetch per window once the origin is back.
func TestMissRateIgnoresCacheAnswers(t *testing.T) {
	const requests = 600 // over missRate.minMisses (500) within one window
	tests := []struct {
		desc  string
		setup func(t *testing.T, h *Handler, o *scriptOrigin)
		url   string
		cache string
	}{
		{desc: "a retry storm answered by the negative cache", url: "http://example.com/s/503/storm",
			setup: func(t *testing.T, h *Handler, o *scriptOrigin) {}, cache: "detail=negative"},
		{desc: "a busy stale key while the breaker is open", url: "http://example.com/c/busy",
			setup: func(t *testing.T, h *Handler, o *scriptOrigin) {
				do(t, h, http.MethodGet, "http://example.com/c/busy")
				tripBreaker(t, h, o)
			}, cache: "detail=circuit-open"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			clock := newFakeClock()
			logs := &testLog{}
			s := protectSettings(clock, logs)
			s.MissRate = missrate.Settings{Throttle: true}
			o := newScriptOrigin(t, protectAnswer)
			h := newTestHandler(t, s, o)
			tc.setup(t, h, o)
			clock.Add(1500 * time.Millisecond)
			other := 0
			first := ""
			for i := 0; i < requests; i++ {
				if i%100 == 0 && i > 0 {
					// Within the negative ttl: the answers stay the cache's.
					clock.Add(10 * time.Millisecond)
				}
				w := do(t, h, http.MethodGet, tc.url)
				if cs := w.Header().Get("Cache-Status"); i > 0 && !strings.Contains(cs, tc.cache) {
					if other == 0 {
						first = "request " + strconv.Itoa(i) + ": " + cs
					}
					other++
				}
			}
			if other > 0 {
				t.Errorf("%d answers without %s, the first %s", other, tc.cache, first)
			}
			if lines := logs.with("miss_rate_anomaly"); len(lines) != 0 {
				t.Errorf("one key answered from the cache %d times raised %d anomalies, want none: %q", requests, len(lines), lines)
			}
		})
	}
}

// TestMissRateIgnoresRefusalsWhileProbing: while a half-open breaker's probe is out (which
// lasts as long as the origin takes to answer it, up to timeouts.origin), every other fetch is
// refused just as while the breaker is open, and a busy key answered stale meanwhile is one
// key, not a flood: no anomaly, no throttle.
func TestMissRateIgnoresRefusalsWhileProbing(t *testing.T) {
	const requests = 600 // over missRate.minMisses (500) within one window
	clock := newFakeClock()
	logs := &testLog{}
	o := failingOrigin(t, 1, []string{"Cache-Control", "max-age=1, stale-if-error=60"}, "cached", http.StatusServiceUnavailable)
	s := protectSettings(clock, logs)
	s.MissRate = missrate.Settings{Throttle: true}
	h := newTestHandler(t, s, o)
	do(t, h, http.MethodGet, "http://example.com/busy")
	// With that success, 19 failures fill the window to minRequests (20) and open it.
	for i := 0; i < breaker.DefaultMinRequests-1; i++ {
		do(t, h, http.MethodGet, "http://example.com/f/"+strconv.Itoa(i))
	}
	clock.Add(5 * time.Second)
	probeCall := breaker.DefaultMinRequests + 1
	o.hold(probeCall)
	probe := serveAsync(h, newRequest(http.MethodGet, "http://example.com/probe"))
	o.waitEntered(t, probeCall)

	other := 0
	first := ""
	for i := 0; i < requests; i++ {
		w := do(t, h, http.MethodGet, "http://example.com/busy")
		if cs := w.Header().Get("Cache-Status"); cs != "Weir; hit; ttl=-4; detail=circuit-open" {
			if other == 0 {
				first = "request " + strconv.Itoa(i) + ": " + cs
			}
			other++
		}
	}
	o.release(probeCall)
	awaitAnswer(t, probe)
	if other > 0 {
		t.Errorf("%d answers other than stale with detail=circuit-open while the probe was out, the first %s", other, first)
	}
	if lines := logs.with("miss_rate_anomaly"); len(lines) != 0 {
		t.Errorf("one key answered stale %d times while the probe was out raised %d anomalies, want none: %q", requests, len(lines), lines)
	}
	if got, want := o.callCount(), probeCall; got != want {
		t.Errorf("origin calls = %d, want %d: only the probe while half-open", got, want)
	}
}
