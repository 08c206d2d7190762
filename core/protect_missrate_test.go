package core

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/breaker"
	"github.com/weirproxy/weir/core/limit"
	"github.com/weirproxy/weir/core/missrate"
)

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

// TestMissRateBypass: once a path floods, the first request for each of its URLs goes to the
// origin past the cache (missRate.bypass), and the second is cached as usual.
func TestMissRateBypass(t *testing.T) {
	const bypassed = "Weir; fwd=bypass; detail=flood"
	const stored = "Weir; fwd=uri-miss; stored"
	tests := []struct {
		desc     string
		noBypass bool
		// want are the Cache-Status fields of the first, second and third request for one
		// URL of the flooded path, after its anomaly.
		want []string
	}{
		{desc: "bypass on (the default)", want: []string{bypassed, stored, "Weir; hit; ttl=60"}},
		{desc: "bypass off", noBypass: true, want: []string{stored, "Weir; hit; ttl=60", "Weir; hit; ttl=60"}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			clock := newFakeClock()
			logs := &testLog{}
			o := newScriptOrigin(t, protectAnswer)
			s := missRateSettings(clock, logs, 10, false)
			s.MissRate.NoBypass = tt.noBypass
			h := newTestHandler(t, s, o)
			for i := 0; i < 10; i++ {
				if got := do(t, h, http.MethodGet, "http://example.com/flood?cb="+strconv.Itoa(i)).Header().Get("Cache-Status"); got != stored {
					t.Fatalf("flood request %d before the anomaly: Cache-Status %q, want %q", i, got, stored)
				}
			}
			lines := logs.with("miss_rate_anomaly")
			if want := "bypassed=" + strconv.FormatBool(!tt.noBypass); len(lines) != 1 || !strings.Contains(lines[0], want) {
				t.Fatalf("anomaly lines = %q, want one with %s", lines, want)
			}
			calls := o.count("/flood")
			for i, want := range tt.want {
				w := do(t, h, http.MethodGet, "http://example.com/flood?cb=new")
				if got := w.Header().Get("Cache-Status"); w.Code != http.StatusOK || got != want {
					t.Errorf("request %d for a new URL: status %d, Cache-Status %q; want 200, %q", i+1, w.Code, got, want)
				}
			}
			if got, want := o.count("/flood")-calls, 2; !tt.noBypass && got != want {
				t.Errorf("origin calls for the new URL = %d, want %d (bypassed, then stored)", got, want)
			}
			// Another path is never bypassed.
			if got := do(t, h, http.MethodGet, "http://example.com/other?q=1").Header().Get("Cache-Status"); got != stored {
				t.Errorf("another path during the flood: Cache-Status %q, want %q", got, stored)
			}
		})
	}
}

// TestMissRateBypassTakesTheGate: a flooded path's bypassed misses hold the limiter's share
// of their path as its fetches do: one slot, one in the queue, the rest shed (FR-MR-3,
// FR-LIM-3).
func TestMissRateBypassTakesTheGate(t *testing.T) {
	o := newScriptOrigin(t, limAnswer)
	s := Settings{
		Limiter: limit.Settings{
			MaxConcurrent: 4, MaxPerPartition: 1, MaxQueue: 8, MaxQueuePerPartition: 1,
			MaxQueueWait: 5 * time.Second, AfterFunc: limNeverFires,
		},
		MissRate: missrate.Settings{Window: 10 * time.Second, MinMisses: 10},
	}
	h := newTestHandler(t, s, o)
	search := func(i int) *http.Request { return newRequest("GET", "http://example.com/search?q="+strconv.Itoa(i)) }
	for i := 1; i <= 10; i++ {
		wantCode(t, "flood before the anomaly", serveRequest(t, h, search(i)), 200)
	}
	o.hold(11)
	first := serveAsync(h, search(11))
	o.waitEntered(t, 11)
	second := serveAsync(h, search(12))
	limWaitQueued(t, h, false, 1)

	w := serveRequest(t, h, search(13))
	wantCode(t, "third bypassed query", w, 503)
	if got, want := w.Header().Get("Cache-Status"), "Weir; fwd=bypass; detail=partition-queue-full"; got != want {
		t.Errorf("third bypassed query: Cache-Status = %q, want %q", got, want)
	}
	if w.Header().Get("Retry-After") == "" {
		t.Errorf("third bypassed query: no Retry-After")
	}
	wantCode(t, "other path", serveRequest(t, h, newRequest("GET", "http://example.com/other?q=1")), 200)

	o.release(11)
	for _, w := range []*httptest.ResponseRecorder{awaitAnswer(t, first), awaitAnswer(t, second)} {
		wantCode(t, "bypassed query", w, 200)
		if got, want := w.Header().Get("Cache-Status"), "Weir; fwd=bypass; detail=flood"; got != want {
			t.Errorf("bypassed query: Cache-Status = %q, want %q", got, want)
		}
	}
}
