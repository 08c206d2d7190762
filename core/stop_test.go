package core

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/breaker"
	"github.com/weirproxy/weir/internal/clocktest"
)

// The breaker's rules as the gate feeds them: the origin's 429 and Retry-After, slow calls,
// several probes, and bulkheads per path (breaker.countStatus429, breaker.slowCall,
// breaker.probes, breaker.paths). Every test runs on a fake clock with the jitter at its
// middle.

// stopOrigin answers by the first segment of the path, every answer no-store so that each
// request of a fresh URL reaches it:
//
//	/429ra/...   429 with Retry-After: 3
//	/429/...     429
//	/503date/... 503 with Retry-After an HTTP date 10s ahead of the clock
//	/slow/...    200, after moving the clock on by 300ms
//	/search/...  503 while *down is set, else 200
//	otherwise    200
func stopOrigin(t *testing.T, clock *clocktest.Clock, down *int32) *scriptOrigin {
	return newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		kind := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 2)[0]
		switch {
		case kind == "429ra":
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusTooManyRequests)
		case kind == "429":
			w.WriteHeader(http.StatusTooManyRequests)
		case kind == "503date":
			w.Header().Set("Retry-After", clock.Now().Add(10*time.Second).Format(http.TimeFormat))
			w.WriteHeader(http.StatusServiceUnavailable)
		case kind == "slow":
			clock.Add(300 * time.Millisecond)
		case (kind == "search" || kind == "all") && atomic.LoadInt32(down) != 0:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		w.Write([]byte("answer"))
	})
}

// wantRefused fails the test unless w is the breaker's 503 naming key with Retry-After
// retryAfter.
func wantRefused(t *testing.T, what string, w interface {
	Header() http.Header
}, code int, key, retryAfter string) {
	t.Helper()
	cs := w.Header().Get("Cache-Status")
	if code != http.StatusServiceUnavailable || !strings.HasSuffix(cs, "; detail=circuit-open; key="+key) ||
		w.Header().Get("Retry-After") != retryAfter {
		t.Errorf("%s: %d, Cache-Status %q, Retry-After %q; want 503 circuit-open naming %s, Retry-After %s",
			what, code, cs, w.Header().Get("Retry-After"), key, retryAfter)
	}
}

// TestOriginRetryAfterOpensTheBreaker: a 429, or a 503, with Retry-After opens the host's
// breaker at once, for that long: nothing reaches the origin until then, clients get 503 with
// the time left, then one probe goes. breaker.countStatus429: false makes a 429 the origin's
// answer to pass on.
func TestOriginRetryAfterOpensTheBreaker(t *testing.T) {
	tests := []struct {
		desc      string
		path      string
		ignore429 bool
		status    int
		open      time.Duration // 0: not opened
		event     string
	}{
		{desc: "429 with seconds", path: "/429ra/", status: 429, open: 3 * time.Second,
			event: "scope=example.com reason=retry-after status=429 retry_after=3s open_for=3s"},
		{desc: "503 with a date", path: "/503date/", status: 503, open: 10 * time.Second,
			event: "scope=example.com reason=retry-after status=503 retry_after=10s open_for=10s"},
		{desc: "429 not counted", path: "/429ra/", ignore429: true, status: 429},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			clock := newFakeClock()
			logs := &testLog{}
			s := protectSettings(clock, logs)
			s.Breaker.OpenFor = time.Second
			s.BreakerIgnoreStatus429 = tc.ignore429
			o := stopOrigin(t, clock, new(int32))
			h := newTestHandler(t, s, o)
			wantCode(t, "the origin's refusal", do(t, h, "GET", "http://example.com"+tc.path+"0"), tc.status)
			w := do(t, h, "GET", "http://example.com/ok/1")
			if tc.open == 0 {
				wantCode(t, "the next request", w, 200)
				wantCalls(t, o, 2)
				if got := logs.with("event=breaker_opened "); len(got) != 0 {
					t.Errorf("breaker_opened lines %q, want none", got)
				}
				return
			}
			secs := itoa(int64(tc.open / time.Second))
			wantRefused(t, "at once", w, w.Code, "example.com", secs)
			clock.Add(tc.open - time.Millisecond)
			w = do(t, h, "GET", "http://example.com/ok/2")
			wantRefused(t, "1ms before the end", w, w.Code, "example.com", "1")
			wantCalls(t, o, 1)
			if got := logs.with("event=breaker_opened "); len(got) != 1 || !strings.Contains(got[0], tc.event) {
				t.Errorf("breaker_opened lines %q, want one with %q", got, tc.event)
			}
			clock.Add(time.Millisecond)
			wantCode(t, "the probe", do(t, h, "GET", "http://example.com/ok/3"), 200)
			wantCalls(t, o, 2)
			if got := logs.with("event=breaker_closed "); len(got) != 1 {
				t.Errorf("breaker_closed lines %q, want one after the probe", got)
			}
			if got := logs.with("event=breaker_opened "); len(got) != 1 {
				t.Errorf("breaker_opened lines after the probe %q, want still one", got)
			}
			wantCode(t, "after the probe", do(t, h, "GET", "http://example.com/ok/4"), 200)
		})
	}
}

// TestStatus429CountsAsFailure: a 429 without Retry-After counts toward the failure ratio,
// unless breaker.countStatus429 is off.
func TestStatus429CountsAsFailure(t *testing.T) {
	for _, ignore := range []bool{false, true} {
		clock := newFakeClock()
		s := protectSettings(clock, &testLog{})
		s.BreakerIgnoreStatus429 = ignore
		o := stopOrigin(t, clock, new(int32))
		h := newTestHandler(t, s, o)
		for i := 0; i < breaker.DefaultMinRequests; i++ {
			do(t, h, "GET", "http://example.com/429/"+itoa(int64(i)))
		}
		w := do(t, h, "GET", "http://example.com/ok/next")
		if ignore {
			wantCode(t, "with countStatus429 off", w, 200)
			continue
		}
		wantRefused(t, "after 20 429s", w, w.Code, "example.com", "5")
	}
}

// TestSlowCallsOpenTheBreaker: with breaker.slowCall, successes slower than it open the
// breaker once they are slowCallRatio of minRequests results, and the event says so.
func TestSlowCallsOpenTheBreaker(t *testing.T) {
	clock := newFakeClock()
	logs := &testLog{}
	s := protectSettings(clock, logs)
	s.Breaker.MinRequests = 4
	s.Breaker.SlowCall = 200 * time.Millisecond
	o := stopOrigin(t, clock, new(int32))
	h := newTestHandler(t, s, o)
	do(t, h, "GET", "http://example.com/ok/0")
	do(t, h, "GET", "http://example.com/slow/0")
	wantCode(t, "1 slow of 3, under minRequests", do(t, h, "GET", "http://example.com/ok/1"), 200)
	wantCode(t, "the second slow call, a success", do(t, h, "GET", "http://example.com/slow/1"), 200)
	w := do(t, h, "GET", "http://example.com/ok/2")
	wantRefused(t, "2 slow of 4", w, w.Code, "example.com", "5")
	wantCalls(t, o, 4)
	want := "scope=example.com reason=slow-calls ratio=0.5 slow=2 requests=4 slow_call=200ms open_for=5s"
	if got := logs.with("event=breaker_opened "); len(got) != 1 || !strings.Contains(got[0], want) {
		t.Errorf("breaker_opened lines %q, want one with %q", got, want)
	}
}

// TestProbesCloseAfterN: with breaker.probes 3 the breaker closes after three probes in a
// row succeed, breaker.probeInterval apart; in between, requests are refused with the time
// to the next probe. A probe slower than breaker.slowCall opens it again.
func TestProbesCloseAfterN(t *testing.T) {
	clock := newFakeClock()
	logs := &testLog{}
	s := protectSettings(clock, logs)
	s.Breaker.MinRequests = 4
	s.Breaker.Probes = 3
	s.Breaker.ProbeInterval = 2 * time.Second
	s.Breaker.SlowCall = 200 * time.Millisecond
	down := int32(1)
	o := stopOrigin(t, clock, &down)
	h := newTestHandler(t, s, o)
	for i := 0; i < 4; i++ {
		do(t, h, "GET", "http://example.com/all/"+itoa(int64(i)))
	}
	atomic.StoreInt32(&down, 0)
	clock.Add(5 * time.Second)
	calls := o.callCount()
	for i := 1; i <= 3; i++ {
		wantCode(t, "probe "+itoa(int64(i)), do(t, h, "GET", "http://example.com/ok/p"+itoa(int64(i))), 200)
		calls++
		wantCalls(t, o, calls)
		if i == 3 {
			break
		}
		w := do(t, h, "GET", "http://example.com/ok/between"+itoa(int64(i)))
		wantRefused(t, "between probes", w, w.Code, "example.com", "2")
		wantCalls(t, o, calls)
		if got := logs.with("event=breaker_closed "); len(got) != 0 {
			t.Fatalf("breaker_closed after %d probes: %q", i, got)
		}
		clock.Add(2 * time.Second)
	}
	if got := logs.with("event=breaker_closed "); len(got) != 1 {
		t.Errorf("breaker_closed lines %q, want one after the third probe", got)
	}
	wantCode(t, "after three probes", do(t, h, "GET", "http://example.com/ok/after"), 200)

	// Opened again: a slow probe reopens it.
	atomic.StoreInt32(&down, 1)
	for i := 0; i < 4; i++ {
		do(t, h, "GET", "http://example.com/all/again"+itoa(int64(i)))
	}
	clock.Add(5 * time.Second)
	wantCode(t, "the slow probe", do(t, h, "GET", "http://example.com/slow/probe"), 200)
	w := do(t, h, "GET", "http://example.com/ok/after-slow")
	wantRefused(t, "after the slow probe", w, w.Code, "example.com", "10")
	if got := logs.with("reason=probe-slow"); len(got) != 1 {
		t.Errorf("lines with reason=probe-slow %q, want one", got)
	}
}

// TestBreakerPaths: with breaker.paths, a failing /search opens its own breaker; /checkout
// and the host's other paths keep flowing, and the refusal names the bulkhead.
func TestBreakerPaths(t *testing.T) {
	clock := newFakeClock()
	logs := &testLog{}
	s := protectSettings(clock, logs)
	s.BreakerPaths = []string{"/search", "/checkout"}
	down := int32(1)
	o := stopOrigin(t, clock, &down)
	h := newTestHandler(t, s, o)
	for i := 0; i < breaker.DefaultMinRequests; i++ {
		do(t, h, "GET", "http://example.com/search/"+itoa(int64(i)))
	}
	w := do(t, h, "GET", "http://example.com/search/next")
	wantRefused(t, "/search", w, w.Code, "example.com/search", "5")
	w = do(t, h, "POST", "http://example.com/search/form")
	wantRefused(t, "POST /search", w, w.Code, "example.com/search", "5")
	calls := o.callCount()
	for _, p := range []string{"/checkout/pay", "/checkout", "/other", "/searchlight"} {
		wantCode(t, p, do(t, h, "GET", "http://example.com"+p), 200)
		calls++
		wantCalls(t, o, calls)
	}
	if got := logs.with("event=breaker_opened "); len(got) != 1 || !strings.Contains(got[0], "scope=example.com/search ") {
		t.Errorf("breaker_opened lines %q, want one for example.com/search", got)
	}
	st := (operator{e: h.e}).State(clock.Now())
	found := false
	for _, b := range st.Breakers {
		if b.Key == "example.com/search" && b.State == "open" {
			found = true
		}
	}
	if !found {
		t.Errorf("admin state %+v, want example.com/search open", st.Breakers)
	}
	// The operator closes the bulkhead by the key the page lists.
	if err := (operator{e: h.e}).CloseBreaker("example.com/search"); err != nil {
		t.Fatalf("CloseBreaker() = %v", err)
	}
	atomic.StoreInt32(&down, 0)
	wantCode(t, "/search after the close", do(t, h, "GET", "http://example.com/search/closed"), 200)
}
