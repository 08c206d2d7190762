package core

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

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
				wantAnswer(t, w, tc.status, "Weir; hit; ttl="+st.ttl+"; detail=negative", "origin unavailable, retry later\n")
				if got := w.Header().Get("Retry-After"); got != tc.wantRetryAfter[i] {
					t.Errorf("request %d: Retry-After = %q, want %q", i+2, got, tc.wantRetryAfter[i])
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
