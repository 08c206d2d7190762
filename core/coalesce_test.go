package core

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// startFollowers sends n requests for url once the leader's origin call is under way, and
// waits until all have joined its flight.
func startFollowers(t *testing.T, h *Handler, url string, n int, header ...string) []*pendingAnswer {
	t.Helper()
	out := make([]*pendingAnswer, n)
	for i := range out {
		out[i] = serveAsync(h, newRequest(http.MethodGet, url, header...))
	}
	waitFollowers(t, h, url, n)
	return out
}

// startFlight starts a leader for url, waits until its fetch is origin call number call (which
// the test holds), and starts n followers of its flight.
func startFlight(t *testing.T, h *Handler, o *scriptOrigin, url string, call, n int) (*pendingAnswer, []*pendingAnswer) {
	t.Helper()
	leader := serveAsync(h, newRequest(http.MethodGet, url))
	o.waitEntered(t, call)
	return leader, startFollowers(t, h, url, n)
}

// FR-COA-1: concurrent requests for one key share one origin fetch; followers say collapsed.
func TestCoalesceOneFetch(t *testing.T) {
	o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Write([]byte("shared " + strconv.Itoa(n)))
	})
	o.hold(1)
	h := newFrozenHandler(t, o)
	const url = "http://example.com/c"
	const n = 10
	leader, followers := startFlight(t, h, o, url, 1, n-1)
	o.release(1)

	wantAnswer(t, awaitAnswer(t, leader), 200, "Weir; fwd=uri-miss; stored", "shared 1")
	for _, f := range followers {
		wantAnswer(t, awaitAnswer(t, f), 200, "Weir; fwd=uri-miss; collapsed", "shared 1")
	}
	wantCalls(t, o, 1)
	wantAnswer(t, do(t, h, http.MethodGet, url), 200, "Weir; hit; ttl=60", "shared 1")
}

// FR-COA-1 under contention: requests arriving together, none sequenced, still make one
// fetch as long as the origin has not answered.
func TestCoalesceAllArriveTogether(t *testing.T) {
	o := staticOrigin(t, 200, []string{"Cache-Control", "max-age=60"}, "x")
	o.hold(1)
	h := newFrozenHandler(t, o)
	const url = "http://example.com/together"
	const n = 8
	start := make(chan struct{})
	answers := make(chan *httptest.ResponseRecorder, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			w := httptest.NewRecorder()
			h.ServeHTTP(w, newRequest(http.MethodGet, url))
			answers <- w
		}()
	}
	close(start)
	o.waitEntered(t, 1)
	waitFollowers(t, h, url, n-1)
	o.release(1)
	wg.Wait()
	close(answers)
	collapsed := 0
	for w := range answers {
		if w.Body.String() != "x" {
			t.Errorf("body = %q, want x", w.Body.String())
		}
		if strings.HasSuffix(w.Header().Get("Cache-Status"), "; collapsed") {
			collapsed++
		}
	}
	if collapsed != n-1 {
		t.Errorf("collapsed answers = %d, want %d", collapsed, n-1)
	}
	wantCalls(t, o, 1)
}

// FR-COA-2: the fetch runs detached: a leader that hangs up does not cancel it, followers
// still get the answer, and it is stored.
func TestCoalesceLeaderHangsUp(t *testing.T) {
	originCtxErr := make(chan error, 1)
	o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		originCtxErr <- r.Context().Err()
		w.Header().Set("Cache-Control", "max-age=60")
		w.Write([]byte("survived"))
	})
	o.hold(1)
	h := newFrozenHandler(t, o)
	const url = "http://example.com/hangup"
	req, cancel := cancellableRequest(newRequest(http.MethodGet, url))
	defer cancel()
	leader := serveAsync(h, req)
	o.waitEntered(t, 1)
	followers := startFollowers(t, h, url, 3)

	cancel()
	select {
	case <-leader.done:
	case <-time.After(testWait):
		t.Fatal("leader hangs after its client left")
	}
	o.release(1)
	if err := <-originCtxErr; err != nil {
		t.Errorf("origin's request context: %v, want not cancelled", err)
	}
	for _, f := range followers {
		wantAnswer(t, awaitAnswer(t, f), 200, "Weir; fwd=uri-miss; collapsed", "survived")
	}
	waitIdle(t, h)
	wantAnswer(t, do(t, h, http.MethodGet, url), 200, "Weir; hit; ttl=60", "survived")
	wantCalls(t, o, 1)
}

// A follower that hangs up leaves at once; the others are not disturbed.
func TestCoalesceFollowerHangsUp(t *testing.T) {
	o := staticOrigin(t, 200, []string{"Cache-Control", "max-age=60"}, "ok")
	o.hold(1)
	h := newFrozenHandler(t, o)
	const url = "http://example.com/fhangup"
	leader := serveAsync(h, newRequest(http.MethodGet, url))
	o.waitEntered(t, 1)
	req, cancel := cancellableRequest(newRequest(http.MethodGet, url))
	gone := serveAsync(h, req)
	waitFollowers(t, h, url, 1)
	cancel()
	select {
	case <-gone.done:
	case <-time.After(testWait):
		t.Fatal("follower hangs after its client left")
	}
	o.release(1)
	wantAnswer(t, awaitAnswer(t, leader), 200, "Weir; fwd=uri-miss; stored", "ok")
}

// FR-COA-3: a flight older than LeaderMaxAge takes no followers: the next request leads a
// new fetch, while the old one still answers those who joined it.
func TestCoalesceLeaderMaxAge(t *testing.T) {
	clock := newFakeClock()
	o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=600")
		w.Write([]byte("answer " + strconv.Itoa(n)))
	})
	o.hold(1)
	h := newTestHandler(t, Settings{Now: clock.Now, LeaderMaxAge: 10 * time.Second}, o)
	const url = "http://example.com/old"
	first := serveAsync(h, newRequest(http.MethodGet, url))
	o.waitEntered(t, 1)
	early := startFollowers(t, h, url, 1)

	clock.Add(11 * time.Second)
	wantAnswer(t, do(t, h, http.MethodGet, url), 200, "Weir; fwd=uri-miss; stored", "answer 2")

	o.release(1)
	wantAnswer(t, awaitAnswer(t, first), 200, "Weir; fwd=uri-miss; stored", "answer 1")
	wantAnswer(t, awaitAnswer(t, early[0]), 200, "Weir; fwd=uri-miss; collapsed", "answer 1")
	wantCalls(t, o, 2)
}

// FR-COA-4: a follower waits at most FollowerMaxWait, then serves stale if allowed, or
// else fetches on its own. This test uses a real timer.
func TestCoalesceFollowerMaxWait(t *testing.T) {
	tests := []struct {
		desc     string
		cc       string
		advance  time.Duration
		wantCode int
		wantCS   string
		wantBody string
		wantHits int
	}{
		{desc: "stale-if-error allows stale", cc: "max-age=10, stale-if-error=600", advance: 20 * time.Second,
			wantCode: 200, wantCS: "Weir; hit; ttl=-10; detail=coalesce-timeout", wantBody: "v1", wantHits: 2},
		{desc: "nothing stored", cc: "no-store", advance: time.Second,
			wantCode: 200, wantCS: "Weir; fwd=uri-miss; detail=coalesce-timeout", wantBody: "v3", wantHits: 3},
		{desc: "stale without permission", cc: "max-age=10, must-revalidate, stale-if-error=600", advance: 20 * time.Second,
			wantCode: 200, wantCS: "Weir; fwd=uri-miss; detail=coalesce-timeout", wantBody: "v3", wantHits: 3},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			clock := newFakeClock()
			o := countingOrigin(t, []string{"Cache-Control", tc.cc, "Etag", `"e"`})
			h := newTestHandler(t, Settings{Now: clock.Now, FollowerMaxWait: 20 * time.Millisecond, HitForMissTTL: time.Nanosecond}, o)
			url := "http://example.com/wait"
			// Call 1 stores (or not) what the follower may fall back on.
			do(t, h, http.MethodGet, url)
			// Past the hit-for-miss mark a no-store answer leaves.
			clock.Add(tc.advance)
			o.hold(2)
			leader := serveAsync(h, newRequest(http.MethodGet, url))
			o.waitEntered(t, 2)
			w := awaitAnswer(t, serveAsync(h, newRequest(http.MethodGet, url)))
			o.release(2)
			awaitAnswer(t, leader)
			wantAnswer(t, w, tc.wantCode, tc.wantCS, tc.wantBody)
			wantCalls(t, o, tc.wantHits)
		})
	}
}

// FR-COA-5, FR-COA-6: an origin error, or a panic in the fetch, goes to every waiter; each
// serves stale if stale-if-error allows it, and no follower retries. A panic is recovered
// and logged, answered 502 with nothing stored, and the flight is released.
func TestCoalesceOriginFailureToEveryWaiter(t *testing.T) {
	tests := []struct {
		desc string
		// panics: the failing origin call panics; otherwise it answers 503.
		panics         bool
		stored         bool
		wantCode       int
		wantLeaderCS   string
		wantFollowerCS string
		wantBody       string // "" leaves the body unchecked
	}{
		{desc: "error, nothing stored", wantCode: 503,
			wantLeaderCS: "Weir; fwd=uri-miss; detail=origin-error", wantFollowerCS: "Weir; fwd=uri-miss; collapsed; detail=origin-error",
			wantBody: "down"},
		{desc: "error, stale-if-error", stored: true, wantCode: 200,
			wantLeaderCS: "Weir; hit; ttl=-20; detail=stale-if-error", wantFollowerCS: "Weir; hit; ttl=-20; detail=stale-if-error",
			wantBody: "good"},
		{desc: "panic, nothing stored", panics: true, wantCode: 502,
			wantLeaderCS: "Weir; fwd=uri-miss; detail=origin-panic", wantFollowerCS: "Weir; fwd=uri-miss; collapsed; detail=origin-panic"},
		{desc: "panic, stale-if-error", panics: true, stored: true, wantCode: 200,
			wantLeaderCS: "Weir; hit; ttl=-20; detail=stale-if-error", wantFollowerCS: "Weir; hit; ttl=-20; detail=stale-if-error",
			wantBody: "good"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			clock := newFakeClock()
			logs := &testLog{}
			failCall := 1
			if tc.stored {
				failCall = 2
			}
			o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
				if n == failCall && tc.panics {
					panic("origin bug")
				}
				if n == failCall {
					w.WriteHeader(http.StatusServiceUnavailable)
					w.Write([]byte("down"))
					return
				}
				w.Header().Set("Cache-Control", "max-age=10, stale-if-error=600")
				w.Write([]byte("good"))
			})
			h := newTestHandler(t, Settings{Now: clock.Now, Log: func(msg string) { logs.add(msg) }}, o)
			const url = "http://example.com/err"
			if tc.stored {
				do(t, h, http.MethodGet, url)
				clock.Add(30 * time.Second)
			}
			o.hold(failCall)
			leader, followers := startFlight(t, h, o, url, failCall, 4)
			o.release(failCall)
			wantFailure := func(who string, w *httptest.ResponseRecorder, cs string) {
				t.Helper()
				if w.Code != tc.wantCode || w.Header().Get("Cache-Status") != cs {
					t.Errorf("%s: %d %q, want %d %q", who, w.Code, w.Header().Get("Cache-Status"), tc.wantCode, cs)
				}
				if got := w.Body.String(); tc.wantBody != "" && got != tc.wantBody {
					t.Errorf("%s: body = %q, want %q", who, got, tc.wantBody)
				}
			}
			wantFailure("leader", awaitAnswer(t, leader), tc.wantLeaderCS)
			for _, f := range followers {
				wantFailure("follower", awaitAnswer(t, f), tc.wantFollowerCS)
			}
			// Followers do not retry.
			wantCalls(t, o, failCall)
			if !tc.panics {
				return
			}
			if got := h.e.flights.InFlight(); got != 0 {
				t.Errorf("flights after the panic = %d, want 0", got)
			}
			if logged := logs.all(); len(logged) != 1 || !strings.Contains(logged[0], "panicked") || !strings.Contains(logged[0], "origin bug") {
				t.Errorf("log = %q, want one line about the panic", logged)
			}
			// The flight was released: the next request leads a new fetch.
			if w := do(t, h, http.MethodGet, url); w.Code != 200 || w.Body.String() != "good" {
				t.Errorf("after the panic: %d %q, want a fresh answer", w.Code, w.Body.String())
			}
		})
	}
}

// An origin error carrying one client's state goes to the other waiters without it.
func TestCoalesceOriginErrorStripsPrivateState(t *testing.T) {
	tests := []struct {
		desc             string
		header           []string
		wantFollowerBody string
	}{
		{desc: "Set-Cookie", header: []string{"Set-Cookie", "session=leader"}, wantFollowerBody: "error page"},
		{desc: "private", header: []string{"Cache-Control", "private", "X-User", "leader"}, wantFollowerBody: ""},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
				for i := 0; i+1 < len(tc.header); i += 2 {
					w.Header().Set(tc.header[i], tc.header[i+1])
				}
				w.WriteHeader(http.StatusBadGateway)
				w.Write([]byte("error page"))
			})
			o.hold(1)
			h := newFrozenHandler(t, o)
			const url = "http://example.com/err-private"
			leader, followers := startFlight(t, h, o, url, 1, 2)
			o.release(1)
			w := awaitAnswer(t, leader)
			if w.Code != 502 || w.Body.String() != "error page" || w.Header().Get(tc.header[0]) != tc.header[1] {
				t.Errorf("leader: %d %q %v, want its own whole answer", w.Code, w.Body.String(), w.Header())
			}
			for _, f := range followers {
				w := awaitAnswer(t, f)
				if w.Code != 502 {
					t.Errorf("follower status = %d, want 502", w.Code)
				}
				if got := w.Body.String(); got != tc.wantFollowerBody {
					t.Errorf("follower body = %q, want %q", got, tc.wantFollowerBody)
				}
				for _, k := range []string{"Set-Cookie", "X-User"} {
					if v := w.Header().Get(k); v != "" {
						t.Errorf("follower got %s: %q", k, v)
					}
				}
			}
		})
	}
}

// Private answers never reach another client through coalescing: followers of an answer that
// cannot be shared look up once more and then fetch on their own; the key then skips
// coalescing for HitForMissTTL.
func TestCoalesceUnshareableAnswer(t *testing.T) {
	tests := []struct {
		desc   string
		header []string
		reason string
	}{
		{desc: "Set-Cookie", header: []string{"Cache-Control", "max-age=60", "Set-Cookie", "session=SECRET"}, reason: "set-cookie"},
		{desc: "private", header: []string{"Cache-Control", "private, max-age=60"}, reason: "private"},
		{desc: "no-store", header: []string{"Cache-Control", "no-store"}, reason: "no-store"},
		{desc: "no freshness", header: []string{"Content-Type", "text/plain"}, reason: "no-freshness"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			clock := newFakeClock()
			o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
				for i := 0; i+1 < len(tc.header); i += 2 {
					// Each client gets its own cookie; only the leader's says SECRET.
					v := tc.header[i+1]
					if n > 1 {
						v = strings.Replace(v, "SECRET", "mine"+strconv.Itoa(n), 1)
					}
					w.Header().Set(tc.header[i], v)
				}
				if n == 1 {
					w.Header().Set("X-For", "SECRET")
					w.Write([]byte("SECRET for the leader"))
					return
				}
				w.Header().Set("X-For", strconv.Itoa(n))
				w.Write([]byte("for call " + strconv.Itoa(n)))
			})
			o.hold(1)
			h := newTestHandler(t, Settings{Now: clock.Now, HitForMissTTL: 30 * time.Second}, o)
			const url = "http://example.com/private"
			leader, followers := startFlight(t, h, o, url, 1, 3)
			o.release(1)

			wantAnswer(t, awaitAnswer(t, leader), 200, "Weir; fwd=uri-miss; detail="+tc.reason, "SECRET for the leader")
			for _, f := range followers {
				w := awaitAnswer(t, f)
				if strings.Contains(w.Body.String(), "SECRET") || strings.Contains(strings.Join(w.Header()["Set-Cookie"], ""), "SECRET") ||
					w.Header().Get("X-For") == "SECRET" {
					t.Errorf("a follower got the leader's private answer: %v %q", w.Header(), w.Body.String())
				}
				if got := w.Header().Get("Cache-Status"); got != "Weir; fwd=uri-miss; detail=uncacheable" {
					t.Errorf("follower Cache-Status = %q, want Weir; fwd=uri-miss; detail=uncacheable", got)
				}
				if !strings.HasPrefix(w.Body.String(), "for call ") {
					t.Errorf("follower body = %q, want its own answer", w.Body.String())
				}
			}
			if got := o.callCount(); got != 4 {
				t.Errorf("origin calls = %d, want 4: one per follower after the leader", got)
			}

			// Hit-for-miss: two concurrent requests both reach the origin.
			o.hold(5)
			first := serveAsync(h, newRequest(http.MethodGet, url))
			o.waitEntered(t, 5)
			w := do(t, h, http.MethodGet, url)
			if got := w.Header().Get("Cache-Status"); got != "Weir; fwd=uri-miss; detail=uncacheable" {
				t.Errorf("during hit-for-miss: Cache-Status = %q, want uncacheable", got)
			}
			o.release(5)
			awaitAnswer(t, first)

			// Past HitForMissTTL the key is coalesced again.
			clock.Add(31 * time.Second)
			w = do(t, h, http.MethodGet, url)
			if got := w.Header().Get("Cache-Status"); got != "Weir; fwd=uri-miss; detail="+tc.reason {
				t.Errorf("after HitForMissTTL: Cache-Status = %q, want Weir; fwd=uri-miss; detail=%s", got, tc.reason)
			}
		})
	}
}

// A 304 that sets a cookie or turns the answer private updates it for its own client only:
// it is neither stored nor shared with the flight's followers.
func TestCoalesceRevalidationWithPrivateState(t *testing.T) {
	tests := []struct {
		desc   string
		header []string
	}{
		{desc: "Set-Cookie", header: []string{"Set-Cookie", "session=SECRET"}},
		{desc: "private", header: []string{"Cache-Control", "private, max-age=60", "X-User", "SECRET"}},
		{desc: "no-store", header: []string{"Cache-Control", "no-store", "X-User", "SECRET"}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			clock := newFakeClock()
			o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Etag", `"e"`)
				if n == 2 {
					for i := 0; i+1 < len(tc.header); i += 2 {
						w.Header().Set(tc.header[i], tc.header[i+1])
					}
					w.WriteHeader(http.StatusNotModified)
					return
				}
				w.Header().Set("Cache-Control", "max-age=10")
				w.Write([]byte("public body"))
			})
			const url = "http://example.com/reval-private"
			h := storedThenAged(t, clock, o, url, 20*time.Second)
			o.hold(2)
			leader, followers := startFlight(t, h, o, url, 2, 2)
			o.release(2)
			w := awaitAnswer(t, leader)
			if w.Code != 200 || w.Body.String() != "public body" {
				t.Errorf("leader: %d %q, want 200 public body", w.Code, w.Body.String())
			}
			if got := w.Header().Get(tc.header[0]); got != tc.header[1] {
				t.Errorf("leader's %s = %q, want its own %q", tc.header[0], got, tc.header[1])
			}
			if got := w.Header().Get("Cache-Status"); !strings.HasPrefix(got, "Weir; fwd=stale; detail=") {
				t.Errorf("leader's Cache-Status = %q, want Weir; fwd=stale; detail=...", got)
			}
			check := func(who string, w *httptest.ResponseRecorder) {
				t.Helper()
				if strings.Contains(strings.Join(w.Header()["Set-Cookie"], ""), "SECRET") || w.Header().Get("X-User") == "SECRET" {
					t.Errorf("%s got the leader's private fields: %v", who, w.Header())
				}
			}
			for _, f := range followers {
				check("follower", awaitAnswer(t, f))
			}
			waitIdle(t, h)
			check("a later request", do(t, h, http.MethodGet, url))
		})
	}
}

// An answer too large to hold streams to the leader; followers fetch on their own.
func TestCoalesceTooLargeAnswer(t *testing.T) {
	big := strings.Repeat("x", 4096)
	o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Write([]byte(big[:2048]))
		w.Write([]byte(big[2048:]))
	})
	o.hold(1)
	h := newTestHandler(t, Settings{Now: newFakeClock().Now, MaxEntrySize: 1024}, o)
	const url = "http://example.com/big"
	leader, followers := startFlight(t, h, o, url, 1, 2)
	o.release(1)
	wantAnswer(t, awaitAnswer(t, leader), 200, "Weir; fwd=uri-miss; detail=too-large", big)
	for _, f := range followers {
		wantAnswer(t, awaitAnswer(t, f), 200, "Weir; fwd=uri-miss; detail=uncacheable", big)
	}
	wantCalls(t, o, 3)
}

// FR-COA-8: a request with Authorization that finds nothing stored neither waits on nor
// leads a shared fetch.
func TestCoalesceAuthorizationFetchesAlone(t *testing.T) {
	o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Write([]byte("for " + r.Header.Get("Authorization") + strconv.Itoa(n)))
	})
	o.hold(1)
	h := newFrozenHandler(t, o)
	const url = "http://example.com/auth"
	leader := serveAsync(h, newRequest(http.MethodGet, url))
	o.waitEntered(t, 1)
	// The flight for url is blocked; the credentialed request does not join it.
	w := awaitAnswer(t, serveAsync(h, newRequest(http.MethodGet, url, "Authorization", "Bearer alice")))
	wantAnswer(t, w, 200, "Weir; fwd=uri-miss; detail=authorization", "for Bearer alice2")
	if got := h.e.flights.InFlight(); got != 1 {
		t.Errorf("flights = %d, want only the blocked one", got)
	}
	o.release(1)
	wantAnswer(t, awaitAnswer(t, leader), 200, "Weir; fwd=uri-miss; stored", "for 1")
	// Once stored, a credentialed request is served from storage.
	wantAnswer(t, do(t, h, http.MethodGet, url, "Authorization", "Bearer bob"), 200, "Weir; hit; ttl=60", "for 1")
}

// A credentialed answer that says public is stored and shared.
func TestCoalesceAuthorizationPublicIsShared(t *testing.T) {
	o := staticOrigin(t, 200, []string{"Cache-Control", "public, max-age=60"}, "public")
	h := newFrozenHandler(t, o)
	const url = "http://example.com/auth-public"
	wantAnswer(t, do(t, h, http.MethodGet, url, "Authorization", "Bearer alice"), 200, "Weir; fwd=uri-miss; stored", "public")
	wantAnswer(t, do(t, h, http.MethodGet, url), 200, "Weir; hit; ttl=60", "public")
}

// A follower whose request selects another variant than the leader's answer does not get
// that answer.
func TestCoalesceVaryOtherVariant(t *testing.T) {
	o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("Vary", "Accept-Language")
		w.Write([]byte("lang=" + r.Header.Get("Accept-Language")))
	})
	o.hold(1)
	h := newFrozenHandler(t, o)
	const url = "http://example.com/vary-coalesce"
	leader := serveAsync(h, newRequest(http.MethodGet, url, "Accept-Language", "en"))
	o.waitEntered(t, 1)
	same := serveAsync(h, newRequest(http.MethodGet, url, "Accept-Language", "en"))
	other := serveAsync(h, newRequest(http.MethodGet, url, "Accept-Language", "fr"))
	waitFollowers(t, h, url, 2)
	o.release(1)
	wantAnswer(t, awaitAnswer(t, leader), 200, "Weir; fwd=uri-miss; stored", "lang=en")
	wantAnswer(t, awaitAnswer(t, same), 200, "Weir; fwd=uri-miss; collapsed", "lang=en")
	w := awaitAnswer(t, other)
	if got := w.Body.String(); got != "lang=fr" {
		t.Errorf("other variant's follower got %q, want lang=fr", got)
	}
}

// A stale-while-revalidate refresh is itself a flight: requests that must wait (a client's
// no-cache) join it instead of starting another fetch.
func TestCoalesceJoinsBackgroundRefresh(t *testing.T) {
	const url = "http://example.com/refresh-join"
	h, o, _ := staleWhileRevalidating(t, url, 20*time.Second)
	o.hold(2)
	wantAnswer(t, do(t, h, http.MethodGet, url), 200, "Weir; hit; ttl=-10; detail=stale-while-revalidate", "v1")
	o.waitEntered(t, 2)
	waiting := serveAsync(h, newRequest(http.MethodGet, url, "Cache-Control", "no-cache"))
	waitFollowers(t, h, url, 1)
	o.release(2)
	wantAnswer(t, awaitAnswer(t, waiting), 200, "Weir; fwd=stale; collapsed", "v2")
	wantCalls(t, o, 2)
}

// An answer to a credentialed request that may not be shared says nothing about the answer
// others get: the key is neither marked uncacheable nor emptied of what it holds.
func TestCoalesceAuthorizationAnswerLeavesKeyAlone(t *testing.T) {
	clock := newFakeClock()
	o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=10, stale-if-error=600")
		if r.Header.Get("Authorization") != "" {
			w.Write([]byte("personal"))
			return
		}
		w.Write([]byte("public " + strconv.Itoa(n)))
	})
	h := newTestHandler(t, Settings{Now: clock.Now}, o)
	const url = "http://example.com/auth-alone"

	// Nothing stored: the credentialed request fetches alone and leaves no mark.
	wantAnswer(t, do(t, h, http.MethodGet, url, "Authorization", "Bearer alice"), 200, "Weir; fwd=uri-miss; detail=authorization", "personal")
	wantAnswer(t, do(t, h, http.MethodGet, url), 200, "Weir; fwd=uri-miss; stored", "public 2")

	// A stale entry: the credentialed request revalidates, and the stale entry stays for
	// others (here within stale-if-error).
	clock.Add(20 * time.Second)
	wantAnswer(t, do(t, h, http.MethodGet, url, "Authorization", "Bearer alice"), 200, "Weir; fwd=stale; detail=authorization", "personal")
	o.answer = func(n int, w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }
	wantAnswer(t, do(t, h, http.MethodGet, url), 200, "Weir; hit; ttl=-10; detail=stale-if-error", "public 2")
}
