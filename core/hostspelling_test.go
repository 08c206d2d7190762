package core

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/limit"
)

// hostSpellings are spellings of one host that Traefik routes to the same router and origin;
// the first is its canonical key.
var hostSpellings = []string{"example.com", "EXAMPLE.com", "example.com.", "example.com:1", "Example.COM:8080"}

// spelled is a GET of uri (origin form) on host as spelled.
func spelled(host, uri string) *http.Request {
	r := newRequest("GET", "http://example.com"+uri)
	r.Host = host
	return r
}

// TestHostSpellingsShareLimiterPartition: spellings of one host share a partition's cap and
// queue share, through the cache's fetch and through hit-for-pass (FR-LIM-3): a third
// spelling past the share is refused, not given a partition of its own.
func TestHostSpellingsShareLimiterPartition(t *testing.T) {
	for _, path := range []string{"/search", "/nostore"} {
		t.Run(path, func(t *testing.T) {
			o := newScriptOrigin(t, limAnswer)
			h := newTestHandler(t, Settings{Limiter: limit.Settings{
				MaxConcurrent: 4, MaxPerPartition: 1, MaxQueue: 8, MaxQueuePerPartition: 1,
				MaxQueueWait: 5 * time.Second, AfterFunc: limNeverFires,
			}}, o)
			primed := 0
			if path == "/nostore" {
				// Each key marked hit-for-pass under its own spelling: the hit path passes them.
				for i, host := range hostSpellings[:3] {
					wantCode(t, "priming "+host, serveRequest(t, h, spelled(host, path+"?q="+strconv.Itoa(i))), 200)
				}
				primed = 3
			}
			o.hold(primed + 1)
			first := serveAsync(h, spelled(hostSpellings[0], path+"?q=0"))
			o.waitEntered(t, primed+1)
			second := serveAsync(h, spelled(hostSpellings[1], path+"?q=1"))
			limWaitQueued(t, h, false, 1)
			w := serveRequest(t, h, spelled(hostSpellings[2], path+"?q=2"))
			wantCode(t, "third spelling", w, 503)
			if got := w.Header().Get("Cache-Status"); !strings.HasSuffix(got, "detail=partition-queue-full") {
				t.Errorf("third spelling: Cache-Status %q, want detail=partition-queue-full", got)
			}
			o.release(primed + 1)
			wantCode(t, "first spelling", awaitAnswer(t, first), 200)
			wantCode(t, "queued spelling", awaitAnswer(t, second), 200)
			if got := o.count(path); got != primed+2 {
				t.Errorf("origin calls for %s: %d, want %d", path, got, primed+2)
			}
		})
	}
}

// TestHostSpellingsShareHostCap: limiter.maxPerHost counts every spelling of a host as the
// one host: a second spelling queues behind the first, another host does not.
func TestHostSpellingsShareHostCap(t *testing.T) {
	o := newScriptOrigin(t, limAnswer)
	h := newTestHandler(t, Settings{Limiter: limit.Settings{
		MaxConcurrent: 4, MaxPerHost: 1, MaxQueue: 8, MaxQueuePerPartition: 8,
		MaxQueueWait: 5 * time.Second, AfterFunc: limNeverFires,
	}}, o)
	o.hold(1)
	first := serveAsync(h, spelled("example.com", "/a"))
	o.waitEntered(t, 1)
	second := serveAsync(h, spelled("Example.COM:8080", "/b"))
	limWaitQueued(t, h, false, 1)
	wantCode(t, "another host", serveRequest(t, h, spelled("other.example", "/c")), 200)
	if got := o.count("/b"); got != 0 {
		t.Errorf("a second spelling past the host cap reached the origin %d times, want 0 while the first holds the slot", got)
	}
	o.release(1)
	wantCode(t, "first spelling", awaitAnswer(t, first), 200)
	wantCode(t, "queued spelling", awaitAnswer(t, second), 200)
}

// TestHostSpellingsShareAdmission: past the knee, spellings of a host in flight count
// against its one share, and a spelling never seen is that host, not a name no router
// expects.
func TestHostSpellingsShareAdmission(t *testing.T) {
	o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Write([]byte("ok"))
	})
	var lag int64
	h := newTestHandler(t, Settings{Log: discardLog, Admission: AdmissionSettings{
		KneeInFlight: 2, HostKneeInFlight: 1,
		Lag: func() time.Duration { return time.Duration(atomic.LoadInt64(&lag)) },
	}}, o)
	front := h.Front()
	wantCode(t, "seen under the knee", serveRequest(t, front, spelled("example.com", "/x")), 200)
	o.hold(2)
	o.hold(3)
	first := serveAsync(front, spelled("EXAMPLE.com", "/p1"))
	second := serveAsync(front, spelled("example.com:1", "/p2"))
	o.waitEntered(t, 2)
	o.waitEntered(t, 3)
	w := serveRequest(t, front, spelled("Example.COM.:8080", "/p3"))
	wantCode(t, "a third spelling past the knee", w, 503)
	if got, want := w.Header().Get("Cache-Status"), "Weir; detail="+reasonAdmissionHost.name; got != want {
		t.Errorf("third spelling: Cache-Status %q, want %q", got, want)
	}
	o.release(2)
	o.release(3)
	wantCode(t, "first spelling", awaitAnswer(t, first), 200)
	wantCode(t, "second spelling", awaitAnswer(t, second), 200)
}

// TestHostSpellingsShareMissRate: a cache-busting flood spread over spellings of a host is
// one partition's flood to the miss-rate detector.
func TestHostSpellingsShareMissRate(t *testing.T) {
	clock := newFakeClock()
	logs := &testLog{}
	o := newScriptOrigin(t, protectAnswer)
	h := newTestHandler(t, missRateSettings(clock, logs, 10, true), o)
	for i := 0; i < 10; i++ {
		wantCode(t, "before the threshold", do2(t, h, spelled(hostSpellings[i%len(hostSpellings)], "/c/flood?cb="+strconv.Itoa(i))), 200)
	}
	lines := logs.with("miss_rate_anomaly")
	if len(lines) != 1 || !strings.Contains(lines[0], "partition=http://example.com/c/flood ") {
		t.Fatalf("anomaly lines %q, want one for partition http://example.com/c/flood", lines)
	}
	w := do2(t, h, spelled("EXAMPLE.COM:80", "/c/flood?cb=10"))
	if got := w.Header().Get("Cache-Status"); w.Code != 503 || !strings.HasSuffix(got, "detail=miss-rate") {
		t.Errorf("a further spelling: status %d, Cache-Status %q; want 503, detail=miss-rate", w.Code, got)
	}
	if got := o.count("/c/flood"); got != 10 {
		t.Errorf("origin calls %d, want 10", got)
	}
}

// do2 serves r with h, failing with "hangs" past testWait.
func do2(t *testing.T, h *Handler, r *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	return serveRequest(t, h, r)
}

// TestCacheKeyKeepsHostAsSent: an answer fetched for one spelling of a host never answers
// another: the cache key holds the host as sent, since an origin may tell them apart
// (ARCHITECTURE.md, "Invariants").
func TestCacheKeyKeepsHostAsSent(t *testing.T) {
	o := countingOrigin(t, []string{"Cache-Control", "max-age=600"})
	h := newTestHandler(t, Settings{}, o)
	w := serveRequest(t, h, spelled("example.com:1", "/page"))
	wantCode(t, "example.com:1", w, 200)
	for i, host := range []string{"example.com", "EXAMPLE.com", "example.com."} {
		w := serveRequest(t, h, spelled(host, "/page"))
		if got, want := w.Body.String(), "v"+strconv.Itoa(i+2); got != want {
			t.Errorf("%s after example.com:1: body %q, Cache-Status %q; want %q, fetched for it", host, got, w.Header().Get("Cache-Status"), want)
		}
	}
	w = serveRequest(t, h, spelled("example.com:1", "/page"))
	if got := w.Body.String(); got != "v1" || !strings.HasPrefix(w.Header().Get("Cache-Status"), statusHit) {
		t.Errorf("example.com:1 again: body %q, Cache-Status %q; want v1, a hit", got, w.Header().Get("Cache-Status"))
	}
	wantCalls(t, o, 4)
}
