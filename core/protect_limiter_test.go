package core

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/limit"
	"github.com/weirproxy/weir/internal/await"
)

// The engine's use of the origin concurrency budget (core/limit): which requests hold a slot
// and from which pool, what a shed request is answered, and that a flood on one partition
// leaves the others' latency alone (FR-LIM-1..7). The wiring tests hold origin calls at a gate
// and inject the limiter's timers, so they never sleep; the fairness test measures latency
// and so must.

// TestLimiterEveryOriginContactHoldsASlot: with the only fetch slot held and the only queue
// place taken, every kind of request that would reach the origin without a body is shed at
// once with 503, Retry-After and the reason in Cache-Status, and never reaches the origin
// (FR-LIM-1, FR-LIM-5); with stale-if-error the stale answer is served instead. A request
// with a body draws from the upload pool and goes through (FR-LIM-7).
func TestLimiterEveryOriginContactHoldsASlot(t *testing.T) {
	tests := []struct {
		desc   string
		prime  string // a GET sent first, to store an entry or a hit-for-pass mark
		age    time.Duration
		method string
		url    string
		header []string
		body   string
		// wantStatus and wantCS are the answer's status and Cache-Status; wantOrigin says
		// whether the request reaches the origin.
		wantStatus int
		wantCS     string
		wantOrigin bool
	}{
		{desc: "cacheable miss", method: "GET", url: "/page",
			wantStatus: 503, wantCS: "Weir; fwd=uri-miss; detail=queue-full"},
		{desc: "miss with a query", method: "GET", url: "/search?q=1",
			wantStatus: 503, wantCS: "Weir; fwd=uri-miss; detail=queue-full"},
		{desc: "HEAD miss passed through", method: "HEAD", url: "/page",
			wantStatus: 503, wantCS: "Weir; fwd=uri-miss; detail=queue-full"},
		{desc: "Range without an entry fetched whole", method: "GET", url: "/page", header: []string{"Range", "bytes=0-1"},
			wantStatus: 503, wantCS: "Weir; fwd=uri-miss; detail=queue-full"},
		{desc: "miss with credentials fetched alone", method: "GET", url: "/page", header: []string{"Authorization", "Bearer x"},
			wantStatus: 503, wantCS: "Weir; fwd=uri-miss; detail=queue-full"},
		{desc: "expired entry refetched", prime: "/page", age: 2 * time.Minute, method: "GET", url: "/page",
			wantStatus: 503, wantCS: "Weir; fwd=uri-miss; detail=queue-full"},
		{desc: "revalidation without stale-if-error", prime: "/etag", age: 2 * time.Second, method: "GET", url: "/etag",
			wantStatus: 503, wantCS: "Weir; fwd=stale; detail=queue-full"},
		{desc: "stale-if-error serves the stale answer", prime: "/sie", age: 2 * time.Second, method: "GET", url: "/sie",
			wantStatus: 200, wantCS: "Weir; hit; ttl=-1; detail=queue-full"},
		{desc: "DELETE without a body", method: "DELETE", url: "/page",
			wantStatus: 503, wantCS: "Weir; fwd=method; detail=queue-full"},
		{desc: "POST without a body", method: "POST", url: "/page",
			wantStatus: 503, wantCS: "Weir; fwd=method; detail=queue-full"},
		{desc: "POST with a body uses the upload pool", method: "POST", url: "/page", body: "form=1",
			wantStatus: 200, wantCS: "Weir; fwd=method", wantOrigin: true},
		{desc: "GET with a body uses the upload pool", method: "GET", url: "/page", body: "q=1",
			wantStatus: 200, wantCS: "Weir; fwd=bypass", wantOrigin: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			clock := newFakeClock()
			o := newScriptOrigin(t, limAnswer)
			h := newTestHandler(t, Settings{Now: clock.Now, Limiter: limit.Settings{
				MaxConcurrent: 1, MaxQueue: 1, MaxQueueWait: 5 * time.Second, AfterFunc: limNeverFires,
			}}, o)
			if tc.prime != "" {
				wantCode(t, "priming GET", serveRequest(t, h, newRequest("GET", "http://example.com"+tc.prime)), 200)
				clock.Add(tc.age)
			}
			hold := limFillFetchPool(t, h, o)
			before := o.count(tc.url)

			w := serveRequest(t, h, newBodyRequest(tc.method, "http://example.com"+tc.url, tc.body, tc.header...))
			wantCode(t, tc.method+" "+tc.url, w, tc.wantStatus)
			if got := w.Header().Get("Cache-Status"); got != tc.wantCS {
				t.Errorf("Cache-Status = %q, want %q", got, tc.wantCS)
			}
			if tc.wantStatus == 503 {
				if got := w.Header().Get("Retry-After"); got != "5" {
					t.Errorf("Retry-After = %q, want maxQueueWait in seconds, \"5\"", got)
				}
			}
			if reached := o.count(tc.url) > before; reached != tc.wantOrigin {
				t.Errorf("request reached the origin: %v, want %v", reached, tc.wantOrigin)
			}
			hold.finish(t)
		})
	}
}

// TestLimiterRefusalReasons: each of the limiter's errors is refused with its own reason and
// the queue wait as Retry-After; a client gone while queued (ErrContextDone, wrapping the
// context's error) is nobody's refusal.
func TestLimiterRefusalReasons(t *testing.T) {
	h := &Handler{queueWait: 7 * time.Second}
	gone := fmt.Errorf("%w: %w", limit.ErrContextDone, context.Canceled)
	tests := []struct {
		desc  string
		err   error
		want  *reason
		retry time.Duration
	}{
		{desc: "queue full", err: limit.ErrQueueFull, want: reasonQueueFull, retry: 7 * time.Second},
		{desc: "partition's share full", err: limit.ErrPartitionQueueFull, want: reasonPartitionQueueFull, retry: 7 * time.Second},
		{desc: "waited too long", err: limit.ErrQueueWait, want: reasonQueueWait, retry: 7 * time.Second},
		{desc: "background", err: limit.ErrNoBackgroundSlot, want: reasonBackgroundBusy, retry: 7 * time.Second},
		{desc: "client gone", err: gone, want: reasonClientLeft},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			f := limiterRefusal(h, tc.err)
			if f.why != tc.want || f.retryAfter != tc.retry {
				t.Errorf("got %s, Retry-After %v; want %s, %v", f.why.name, f.retryAfter, tc.want.name, tc.retry)
			}
		})
	}
}

// TestLimiterShedCacheStatusHasOneDetail: a request shed by the limiter says why in one
// Cache-Status detail parameter. RFC 9211 section 2 makes Cache-Status a List of RFC 8941
// Structured Fields whose parameters are an ordered map: one key, one value.
func TestLimiterShedCacheStatusHasOneDetail(t *testing.T) {
	tests := []struct {
		desc  string
		prime string
		url   string
	}{
		{desc: "hit-for-pass", prime: "/nostore", url: "/nostore"},
		{desc: "hit-for-pass with a query", prime: "/nostore?a=1", url: "/nostore?a=1"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			o := newScriptOrigin(t, limAnswer)
			h := newTestHandler(t, Settings{Limiter: limit.Settings{
				MaxConcurrent: 1, MaxQueue: 1, MaxQueueWait: 5 * time.Second, AfterFunc: limNeverFires,
			}}, o)
			serveRequest(t, h, newRequest("GET", "http://example.com"+tc.prime))
			hold := limFillFetchPool(t, h, o)
			w := serveRequest(t, h, newRequest("GET", "http://example.com"+tc.url))
			wantCode(t, "GET "+tc.url, w, 503)
			cs := w.Header().Get("Cache-Status")
			if n := strings.Count(cs, "; detail="); n != 1 || !strings.HasSuffix(cs, "; detail=queue-full") {
				t.Errorf("Cache-Status = %q: %d detail parameters, want exactly one, detail=queue-full", cs, n)
			}
			hold.finish(t)
		})
	}
}

// TestLimiterUploadPool: uploads have a pool and queue of their own: with the upload slot
// held and its queue place taken, one more upload is shed while a GET still reaches the
// origin (FR-LIM-7).
func TestLimiterUploadPool(t *testing.T) {
	o := newScriptOrigin(t, limAnswer)
	h := newTestHandler(t, Settings{Limiter: limit.Settings{
		MaxConcurrent: 1, MaxUpload: 1, MaxQueue: 1, MaxQueueWait: 5 * time.Second, AfterFunc: limNeverFires,
	}}, o)
	o.hold(1)
	first := serveAsync(h, newBodyRequest("POST", "http://example.com/upload/1", "a=1"))
	o.waitEntered(t, 1)
	second := serveAsync(h, newBodyRequest("POST", "http://example.com/upload/2", "a=2"))
	limWaitQueued(t, h, true, 1)

	w := serveRequest(t, h, newBodyRequest("PUT", "http://example.com/upload/3", "a=3"))
	wantCode(t, "third upload", w, 503)
	if got, want := w.Header().Get("Cache-Status"), "Weir; fwd=method; detail=queue-full"; got != want {
		t.Errorf("third upload: Cache-Status = %q, want %q", got, want)
	}
	if n := o.count("/upload/3"); n != 0 {
		t.Errorf("third upload reached the origin %d times, want 0", n)
	}
	wantCode(t, "GET while uploads fill their pool", serveRequest(t, h, newRequest("GET", "http://example.com/page")), 200)
	if st := h.e.limiter.Stats(); st.Upload.HighWater != 1 || st.Fetch.HighWater != 1 {
		t.Errorf("high water: upload %d, fetch %d; want 1 and 1", st.Upload.HighWater, st.Fetch.HighWater)
	}

	o.release(1)
	wantCode(t, "first upload", awaitAnswer(t, first), 200)
	w = awaitAnswer(t, second)
	wantCode(t, "queued upload", w, 200)
	if got, want := w.Body.String(), "POST /upload/2 a=2"; got != want {
		t.Errorf("queued upload: the origin answered %q, want %q: it must reach the origin with its body", got, want)
	}
}

// TestLimiterPartitionCap: one partition (scheme, host, path) never holds more than
// maxPerPartition slots nor more than its share of the queue: distinct queries on one path
// wait or are shed while another path goes straight to the origin (FR-LIM-3).
func TestLimiterPartitionCap(t *testing.T) {
	o := newScriptOrigin(t, limAnswer)
	h := newTestHandler(t, Settings{Limiter: limit.Settings{
		MaxConcurrent: 4, MaxPerPartition: 1, MaxQueue: 8, MaxQueuePerPartition: 1,
		MaxQueueWait: 5 * time.Second, AfterFunc: limNeverFires,
	}}, o)
	o.hold(1)
	first := serveAsync(h, newRequest("GET", "http://example.com/search?q=1"))
	o.waitEntered(t, 1)
	second := serveAsync(h, newRequest("GET", "http://example.com/search?q=2"))
	limWaitQueued(t, h, false, 1)

	w := serveRequest(t, h, newRequest("GET", "http://example.com/search?q=3"))
	wantCode(t, "third query", w, 503)
	if got, want := w.Header().Get("Cache-Status"), "Weir; fwd=uri-miss; detail=partition-queue-full"; got != want {
		t.Errorf("third query: Cache-Status = %q, want %q", got, want)
	}
	if o.count("/search?q=2") != 0 || o.count("/search?q=3") != 0 {
		t.Errorf("queries past the partition's cap reached the origin: q=2 %d times, q=3 %d times; want 0",
			o.count("/search?q=2"), o.count("/search?q=3"))
	}
	wantCode(t, "other path", serveRequest(t, h, newRequest("GET", "http://example.com/other?q=1")), 200)

	o.release(1)
	wantCode(t, "first query", awaitAnswer(t, first), 200)
	wantCode(t, "queued query", awaitAnswer(t, second), 200)
}

// TestLimiterPartitionCapHitForPass: requests for keys marked hit-for-pass, which the hit
// path sends to the origin, count by the same partition: distinct queries on one path share
// its cap, whether they come in origin form (the hit path's lookup) or not (FR-LIM-3).
func TestLimiterPartitionCapHitForPass(t *testing.T) {
	tests := []struct {
		desc       string
		originForm bool
	}{
		{desc: "origin form", originForm: true},
		{desc: "absolute form", originForm: false},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			o := newScriptOrigin(t, limAnswer)
			h := newTestHandler(t, Settings{Limiter: limit.Settings{
				MaxConcurrent: 4, MaxPerPartition: 1, MaxQueue: 8, MaxQueuePerPartition: 1,
				MaxQueueWait: 5 * time.Second, AfterFunc: limNeverFires,
			}}, o)
			req := func(uri string) *http.Request {
				r := newRequest("GET", "http://example.com"+uri)
				if !tc.originForm {
					r.RequestURI = "http://example.com" + uri
				}
				return r
			}
			for _, uri := range []string{"/nostore?q=1", "/nostore?q=2", "/nostore?q=3"} {
				wantCode(t, "priming "+uri, serveRequest(t, h, req(uri)), 200)
			}
			o.hold(4)
			first := serveAsync(h, req("/nostore?q=1"))
			o.waitEntered(t, 4)
			second := serveAsync(h, req("/nostore?q=2"))
			limWaitQueued(t, h, false, 1)

			w := serveRequest(t, h, req("/nostore?q=3"))
			wantCode(t, "third query", w, 503)
			if got, want := w.Header().Get("Cache-Status"), "Weir; fwd=uri-miss; detail=partition-queue-full"; got != want {
				t.Errorf("third query: Cache-Status = %q, want %q", got, want)
			}
			if n := o.count("/nostore?q=2") + o.count("/nostore?q=3"); n != 2 {
				t.Errorf("queries past the partition's cap reached the origin: %d calls beyond the priming ones", n-2)
			}
			wantCode(t, "other path", serveRequest(t, h, req("/other?q=1")), 200)

			o.release(4)
			wantCode(t, "first query", awaitAnswer(t, first), 200)
			w = awaitAnswer(t, second)
			wantCode(t, "queued query", w, 200)
			if got, want := w.Header().Get("Cache-Status"), "Weir; fwd=uri-miss; detail=uncacheable"; got != want {
				t.Errorf("queued query: Cache-Status = %q, want %q", got, want)
			}
		})
	}
}

// TestLimiterQueueWait: a request that waits maxQueueWait without a slot is shed with
// detail=queue-wait, and Retry-After is the wait rounded up to whole seconds (FR-LIM-2,
// FR-LIM-5). The test fires the wait's timer by hand.
func TestLimiterQueueWait(t *testing.T) {
	armed := make(chan func(), 4)
	after := func(d time.Duration, f func()) func() bool {
		armed <- f
		return func() bool { return false }
	}
	o := newScriptOrigin(t, limAnswer)
	h := newTestHandler(t, Settings{Limiter: limit.Settings{
		MaxConcurrent: 1, MaxQueueWait: 2500 * time.Millisecond, AfterFunc: after,
	}}, o)
	hold := limFillFetchPoolOnly(t, h, o)
	waiter := serveAsync(h, newRequest("GET", "http://example.com/page"))
	select {
	case fire := <-armed:
		fire()
	case <-time.After(testWait):
		t.Fatal("hangs: the queued request armed no timer")
	}
	w := awaitAnswer(t, waiter)
	wantCode(t, "queued GET", w, 503)
	if got, want := w.Header().Get("Cache-Status"), "Weir; fwd=uri-miss; detail=queue-wait"; got != want {
		t.Errorf("Cache-Status = %q, want %q", got, want)
	}
	if got := w.Header().Get("Retry-After"); got != "3" {
		t.Errorf("Retry-After = %q, want 2.5s rounded up, \"3\"", got)
	}
	if n := o.count("/page"); n != 0 {
		t.Errorf("shed request reached the origin %d times, want 0", n)
	}
	hold.finish(t)
}

// TestLimiterClientGoneLeavesQueue: a pass-through request whose client hangs up while it
// waits for a slot leaves the queue at once and gets nothing written (FR-LIM-2).
func TestLimiterClientGoneLeavesQueue(t *testing.T) {
	o := newScriptOrigin(t, limAnswer)
	h := newTestHandler(t, Settings{Limiter: limit.Settings{
		MaxConcurrent: 1, MaxQueueWait: 5 * time.Second, AfterFunc: limNeverFires,
	}}, o)
	serveRequest(t, h, newRequest("GET", "http://example.com/nostore"))
	hold := limFillFetchPoolOnly(t, h, o)
	r, cancel := cancellableRequest(newRequest("GET", "http://example.com/nostore"))
	waiter := serveAsync(h, r)
	limWaitQueued(t, h, false, 1)
	cancel()
	w := awaitAnswer(t, waiter)
	if cs := w.Header().Get("Cache-Status"); cs != "" || w.Body.Len() != 0 {
		t.Errorf("answer to a client that left: Cache-Status %q, body %q; want nothing written", cs, w.Body.String())
	}
	if q := h.e.limiter.Stats().Fetch.Queued; q != 0 {
		t.Errorf("queued after the client left = %d, want 0", q)
	}
	if n := o.count("/nostore"); n != 1 {
		t.Errorf("origin requests for /nostore = %d, want 1 (the first)", n)
	}
	hold.finish(t)
}

// TestLimiterRefreshKeepsForegroundReserve: a stale-while-revalidate refresh never waits and
// never takes the last quarter of the pool (FR-LIM-4): with 3 of 4 slots held the stale
// answer is served and no refresh is sent; with the slots free, the next request refreshes.
func TestLimiterRefreshKeepsForegroundReserve(t *testing.T) {
	clock := newFakeClock()
	o := newScriptOrigin(t, limAnswer)
	h := newTestHandler(t, Settings{Now: clock.Now, Limiter: limit.Settings{
		MaxConcurrent: 4, MaxQueueWait: 5 * time.Second, AfterFunc: limNeverFires,
	}}, o)
	wantCode(t, "first GET", serveRequest(t, h, newRequest("GET", "http://example.com/swr")), 200)
	clock.Add(2 * time.Second)

	// Origin calls 2 to 4 hold three of the four slots.
	var held []*pendingAnswer
	for call := 2; call <= 4; call++ {
		o.hold(call)
		held = append(held, serveAsync(h, newRequest("GET", fmt.Sprintf("http://example.com/hold/%d", call))))
		o.waitEntered(t, call)
	}
	w := serveRequest(t, h, newRequest("GET", "http://example.com/swr"))
	wantCode(t, "stale GET with 3 of 4 slots held", w, 200)
	if got, want := w.Header().Get("Cache-Status"), "Weir; hit; ttl=-1; detail=stale-while-revalidate"; got != want {
		t.Errorf("stale GET: Cache-Status = %q, want %q", got, want)
	}
	// The refresh's flight, if one started, is the only one besides the three held.
	waitFor(t, "the refresh to end", func() bool { return h.e.flights.InFlight() == 3 })
	if n := o.count("/swr"); n != 1 {
		t.Errorf("origin requests for /swr with 3 of 4 slots held = %d, want 1: the refresh took the foreground's reserve", n)
	}

	o.releaseAll()
	for _, p := range held {
		wantCode(t, "held GET", awaitAnswer(t, p), 200)
	}
	wantCode(t, "stale GET with the slots free", serveRequest(t, h, newRequest("GET", "http://example.com/swr")), 200)
	// Origin call 5 is the refresh.
	o.waitEntered(t, 5)
	waitIdle(t, h)
	if n := o.count("/swr"); n != 2 {
		t.Errorf("origin requests for /swr with the slots free = %d, want 2 (the refresh)", n)
	}
}

// TestLimiterFloodLeavesOtherPartitionsAlone: a flood of distinct queries on one path holds
// at most maxPerPartition slots, has its excess shed with 503, and leaves every request on
// other paths answered by the origin (FR-LIM-3); their p99 latency against the same
// measurement without the flood is logged (1.2x on a quiet machine), not asserted. A control
// with the partition cap raised to the pool's size shows the flood taking every slot.
//
// Latency is measured, so the test sleeps; the origin's delays dominate the latency, so the
// ratio does not depend on the machine's speed. The machine is shared, so a missed bound is
// measured again, up to limFairAttempts times, every attempt logged: a flood that did hold
// the other paths back misses the bound every time.
//
// Under Yaegi each request costs about a millisecond of interpretation: the flood is smaller
// and slower, and the bound applies to the p90, since the interpreter's own pauses (tens of
// milliseconds, with or without a flood) decide the top percent of 80 samples. The p99 is
// logged.
func TestLimiterFloodLeavesOtherPartitionsAlone(t *testing.T) {
	fc := limFairConfig{
		slots: 16, perPartition: 4, floodClients: 48, workers: 4, samples: 120, percentile: 99,
		otherDelay: 20 * time.Millisecond, floodDelay: 20 * time.Millisecond, queueWait: 50 * time.Millisecond,
	}
	if limInterpreted() {
		fc = limFairConfig{
			slots: 4, perPartition: 2, floodClients: 8, workers: 2, samples: 80, percentile: 90,
			otherDelay: 20 * time.Millisecond, floodDelay: 60 * time.Millisecond, queueWait: 100 * time.Millisecond,
		}
	}
	const bound = 1.2
	o := newLimFairOrigin(fc)
	name := uniqueEngineName(t)
	h := mustNew(t, name, fc.settings(fc.perPartition), o)
	// A first round, not measured, warms the engine's paths.
	warm := fc
	warm.samples = 2 * fc.workers
	limMeasureOthers(t, h, o, warm, "warm")
	passed := false
	var base, during limLatencies
	for attempt := 1; attempt <= limFairAttempts && !passed; attempt++ {
		base = limMeasureOthers(t, h, o, fc, fmt.Sprintf("base%d", attempt))
		flood := limStartEngineFlood(h, fc.floodClients)
		waitFor(t, "the flood holding its partition's cap", func() bool { return atomic.LoadInt64(&o.searchInFlight) >= int64(fc.perPartition) })
		during = limMeasureOthers(t, h, o, fc, fmt.Sprintf("flood%d", attempt))
		fs := flood.stop(t)
		ratio := float64(during.at(fc.percentile)) / float64(base.at(fc.percentile))
		t.Logf("attempt %d: other paths without the flood %s, with it %s: p%d ratio %.2f (bound %.1f); flood %s",
			attempt, base.String(), during.String(), fc.percentile, ratio, bound, fs.String())
		if fs.other > 0 {
			t.Fatalf("flood: %d answers neither 200 nor shed with 503, Retry-After and a limiter detail; first: %s", fs.other, fs.first)
		}
		if fs.shed == 0 {
			t.Fatalf("flood: nothing shed (%s), want its excess refused", fs.String())
		}
		passed = ratio <= bound
	}
	if p := atomic.LoadInt64(&o.searchPeak); p != int64(fc.perPartition) {
		t.Errorf("origin saw at most %d flood fetches at once, want the partition cap %d reached and held", p, fc.perPartition)
	}
	if hw := h.e.limiter.Stats().Fetch.HighWater; hw > fc.slots {
		t.Errorf("limiter high water = %d, want at most %d", hw, fc.slots)
	}
	if !passed {
		// Logged, not asserted: a timed bound fails with the shared machine's load rather
		// than with Weir. The structure is asserted: the flood held at its cap and shed
		// beyond it, and every request of the other paths answered 200 by the origin.
		t.Logf("p%d of other paths grew from %v to %v under the flood in each of %d attempts (%.1fx expected on a quiet machine)",
			fc.percentile, base.at(fc.percentile), during.at(fc.percentile), limFairAttempts, bound)
	}

	// Control: the same flood with the partition cap raised to the pool's size.
	hc := mustNew(t, name, fc.settings(fc.slots), o)
	flood := limStartEngineFlood(hc, fc.floodClients)
	waitFor(t, "the flood holding every slot", func() bool { return atomic.LoadInt64(&o.searchInFlight) >= int64(fc.slots) })
	// A quarter of the samples: nearly all wait behind the flood, so few suffice to see it.
	fcControl := fc
	fcControl.samples = fc.samples / 4
	control := limMeasureOthersAnyAnswer(t, hc, o, fcControl, "control")
	fs := flood.stop(t)
	t.Logf("control without a partition cap: other paths %s (without the flood %s); flood %s", control.String(), base.String(), fs.String())
	if p := atomic.LoadInt64(&o.searchPeak); p < int64(fc.slots) {
		t.Errorf("control: the flood held at most %d slots without the partition cap, want all %d", p, fc.slots)
	}
}

// limFairAttempts bounds the measurements of TestLimiterFloodLeavesOtherPartitionsAlone.
const limFairAttempts = 3

// limFairConfig sizes the fairness test.
type limFairConfig struct {
	slots, perPartition int
	floodClients        int
	workers, samples    int
	// percentile is the latency percentile the bound applies to.
	percentile             int
	otherDelay, floodDelay time.Duration
	queueWait              time.Duration
}

// settings are the engine's settings with the partition cap perPartition. The flood's
// partition may queue every flood client, so its excess waits maxQueueWait and is shed with
// queue-wait rather than refused at once in a busy loop.
func (fc limFairConfig) settings(perPartition int) Settings {
	return Settings{Log: discardLog, Limiter: limit.Settings{
		MaxConcurrent: fc.slots, MaxPerPartition: perPartition, MaxQueue: 4 * fc.floodClients,
		MaxQueuePerPartition: 2 * fc.floodClients, MaxQueueWait: fc.queueWait,
	}}
}

// limFairOrigin answers /search after floodDelay, counting how many it serves at once, and
// any other path after otherDelay, both cacheable.
type limFairOrigin struct {
	fc             limFairConfig
	searchInFlight int64
	searchPeak     int64

	// mu guards entered.
	mu sync.Mutex
	// entered is when each other path's request reached the origin, so that a slow answer
	// can be told apart: time spent before the origin (the engine and the limiter's queue)
	// or after (the machine's scheduling of the origin's sleep).
	entered map[string]time.Time
}

func newLimFairOrigin(fc limFairConfig) *limFairOrigin {
	return &limFairOrigin{fc: fc, entered: map[string]time.Time{}}
}

// enteredAt is when the request for path reached the origin, and whether it did.
func (o *limFairOrigin) enteredAt(path string) (time.Time, bool) {
	o.mu.Lock()
	at, ok := o.entered[path]
	o.mu.Unlock()
	return at, ok
}

func (o *limFairOrigin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/search" {
		n := atomic.AddInt64(&o.searchInFlight, 1)
		for {
			p := atomic.LoadInt64(&o.searchPeak)
			if n <= p || atomic.CompareAndSwapInt64(&o.searchPeak, p, n) {
				break
			}
		}
		time.Sleep(o.fc.floodDelay)
		atomic.AddInt64(&o.searchInFlight, -1)
	} else {
		now := time.Now()
		o.mu.Lock()
		o.entered[r.URL.Path] = now
		o.mu.Unlock()
		time.Sleep(o.fc.otherDelay)
	}
	w.Header()["Cache-Control"] = []string{"max-age=60"}
	io.WriteString(w, r.URL.RequestURI())
}

// limLatencies are the sorted latencies of one measurement, and the sorted times the
// requests took to reach the origin.
type limLatencies struct {
	sorted []time.Duration
	before []time.Duration
}

// at is the p-th percentile (nearest rank).
func (l limLatencies) at(p int) time.Duration {
	return l.sorted[(len(l.sorted)*p+99)/100-1]
}

func (l limLatencies) String() string {
	before := "none reached it"
	if n := len(l.before); n > 0 {
		before = l.before[(n*99+99)/100-1].Round(10 * time.Microsecond).String()
	}
	return fmt.Sprintf("p50 %v p90 %v p99 %v (p99 before the origin %s)", l.at(50).Round(10*time.Microsecond),
		l.at(90).Round(10*time.Microsecond), l.at(99).Round(10*time.Microsecond), before)
}

// limMeasureOthers sends fc.samples cacheable misses, each on a path of its own, from
// fc.workers workers one after the other, and checks every answer.
func limMeasureOthers(t *testing.T, h *Handler, o *limFairOrigin, fc limFairConfig, tag string) limLatencies {
	t.Helper()
	return limMeasure(t, h, o, fc, tag, true)
}

// limMeasureOthersAnyAnswer is limMeasureOthers accepting shed answers too.
func limMeasureOthersAnyAnswer(t *testing.T, h *Handler, o *limFairOrigin, fc limFairConfig, tag string) limLatencies {
	t.Helper()
	return limMeasure(t, h, o, fc, tag, false)
}

func limMeasure(t *testing.T, h *Handler, o *limFairOrigin, fc limFairConfig, tag string, strict bool) limLatencies {
	t.Helper()
	took := make([]time.Duration, fc.samples)
	before := make([]time.Duration, fc.samples)
	problems := make([]string, fc.workers)
	await.Goroutines(t, fc.workers, 4*testWait, fmt.Sprintf("%s: %d requests on other paths", tag, fc.samples), func(wk int) {
		for i := wk; i < fc.samples; i += fc.workers {
			url := fmt.Sprintf("http://example.com/other/%s/%d", tag, i)
			r := httptest.NewRequest("GET", url, nil)
			w := httptest.NewRecorder()
			began := time.Now()
			h.ServeHTTP(w, r)
			took[i] = time.Since(began)
			before[i] = -1
			if at, ok := o.enteredAt(r.URL.Path); ok {
				before[i] = at.Sub(began)
			}
			cs := w.Header().Get("Cache-Status")
			if strict && problems[wk] == "" && (w.Code != 200 || cs != "Weir; fwd=uri-miss; stored") {
				problems[wk] = fmt.Sprintf("%s: status %d, Cache-Status %q; want 200, \"Weir; fwd=uri-miss; stored\"", url, w.Code, cs)
			}
		}
	})
	for _, p := range problems {
		if p != "" {
			t.Fatalf("%s: %s", tag, p)
		}
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	var reached []time.Duration
	for _, b := range before {
		if b >= 0 {
			reached = append(reached, b)
		}
	}
	sort.Slice(reached, func(i, j int) bool { return reached[i] < reached[j] })
	return limLatencies{sorted: took, before: reached}
}

// limEngineFlood is a flood of distinct queries on /search by a fixed number of clients.
type limEngineFlood struct {
	stopped chan struct{}
	done    chan struct{}

	// mu guards st.
	mu sync.Mutex
	st limFloodTally
}

// limFloodTally counts a flood's answers.
type limFloodTally struct {
	ok, shed, other int
	first           string
}

func (s limFloodTally) String() string {
	return fmt.Sprintf("%d answered, %d shed, %d other", s.ok, s.shed, s.other)
}

var limFloodSeq int64

func limStartEngineFlood(h *Handler, clients int) *limEngineFlood {
	f := &limEngineFlood{stopped: make(chan struct{}), done: make(chan struct{})}
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-f.stopped:
					return
				default:
				}
				url := fmt.Sprintf("http://example.com/search?q=%d", atomic.AddInt64(&limFloodSeq, 1))
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest("GET", url, nil))
				f.count(url, w)
			}
		}()
	}
	go func() {
		wg.Wait()
		close(f.done)
	}()
	return f
}

func (f *limEngineFlood) count(url string, w *httptest.ResponseRecorder) {
	cs := w.Header().Get("Cache-Status")
	f.mu.Lock()
	switch {
	case w.Code == 200:
		f.st.ok++
	case w.Code == 503 && w.Header().Get("Retry-After") == "1" &&
		(strings.HasSuffix(cs, "detail=queue-wait") || strings.HasSuffix(cs, "detail=partition-queue-full") || strings.HasSuffix(cs, "detail=queue-full")):
		f.st.shed++
	default:
		f.st.other++
		if f.st.first == "" {
			f.st.first = fmt.Sprintf("%s: status %d, Retry-After %q, Cache-Status %q", url, w.Code, w.Header().Get("Retry-After"), cs)
		}
	}
	f.mu.Unlock()
}

func (f *limEngineFlood) stop(t *testing.T) limFloodTally {
	t.Helper()
	close(f.stopped)
	select {
	case <-f.done:
	case <-time.After(4 * testWait):
		t.Fatal("flood clients hang after being stopped")
	}
	f.mu.Lock()
	st := f.st
	f.mu.Unlock()
	return st
}

// limAnswer answers by path: /nostore no-store, /sie max-age=1 with stale-if-error, /swr
// max-age=1 with stale-while-revalidate, /etag max-age=1 with a validator; anything else
// max-age=60. The body is the method, the request target and the request's body.
func limAnswer(n int, w http.ResponseWriter, r *http.Request) {
	body := ""
	if r.Body != nil {
		b, _ := io.ReadAll(r.Body)
		body = string(b)
	}
	cc := "max-age=60"
	switch r.URL.Path {
	case "/nostore":
		cc = "no-store"
	case "/sie":
		cc = "max-age=1, stale-if-error=60"
	case "/swr":
		cc = "max-age=1, stale-while-revalidate=60"
	case "/etag":
		cc = "max-age=1"
		w.Header()["Etag"] = []string{`"v1"`}
	}
	w.Header()["Cache-Control"] = []string{cc}
	io.WriteString(w, r.Method+" "+r.URL.RequestURI()+" "+body)
}

// limHold is what limFillFetchPool holds: the slot's request and the queued one.
type limHold struct {
	o      *scriptOrigin
	holder *pendingAnswer
	filler *pendingAnswer
	call   int
}

// limFillFetchPool takes a one-slot, one-place fetch pool: a GET held at the origin holds the
// slot and a second GET waits in the queue.
func limFillFetchPool(t *testing.T, h *Handler, o *scriptOrigin) *limHold {
	t.Helper()
	hold := limFillFetchPoolOnly(t, h, o)
	hold.filler = serveAsync(h, newRequest("GET", "http://example.com/fill"))
	limWaitQueued(t, h, false, 1)
	return hold
}

// limFillFetchPoolOnly holds a one-slot fetch pool's slot with a GET held at the origin, as
// the origin's next call: every request before it has been answered.
func limFillFetchPoolOnly(t *testing.T, h *Handler, o *scriptOrigin) *limHold {
	t.Helper()
	hold := &limHold{o: o, call: o.callCount() + 1}
	o.hold(hold.call)
	hold.holder = serveAsync(h, newRequest("GET", "http://example.com/hold"))
	o.waitEntered(t, hold.call)
	return hold
}

// finish releases the held GET and checks that it and the queued one were answered.
func (hd *limHold) finish(t *testing.T) {
	t.Helper()
	hd.o.release(hd.call)
	wantCode(t, "GET holding the slot", awaitAnswer(t, hd.holder), 200)
	if hd.filler != nil {
		wantCode(t, "GET queued behind it", awaitAnswer(t, hd.filler), 200)
	}
}

// limWaitQueued waits until n requests wait in the upload or the fetch pool.
func limWaitQueued(t *testing.T, h *Handler, upload bool, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d queued (upload pool %v)", n, upload), func() bool {
		st := h.e.limiter.Stats()
		if upload {
			return st.Upload.Queued == n
		}
		return st.Fetch.Queued == n
	})
}

// limNeverFires is a limiter timer that never fires: a waiter waits until granted.
var limNeverFires = func(d time.Duration, f func()) func() bool {
	return func() bool { return true }
}

// limInterpreted reports whether the test runs under Yaegi: there runtime.Caller sees the
// interpreter's own frames rather than this file.
func limInterpreted() bool {
	_, file, _, ok := runtime.Caller(0)
	return !ok || !strings.HasSuffix(file, "limit_engine_test.go")
}
