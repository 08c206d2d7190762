package core

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/httpcache"
	"github.com/weirproxy/weir/core/limit"
	"github.com/weirproxy/weir/core/missrate"
)

// What the origin concurrency budget adds to a fetch (FR-LIM-1). Every miss, refresh and
// pass-through takes a slot, and no setting turns the limiter off, so the cost is measured two
// ways: a whole miss with the default pool and with a pool too large ever to fill (the same
// path to a slot: the cost does not depend on the pool's size), and the origin gate's enter
// and leave alone as a miss calls them, to set against the miss; and a miss shed from a full
// partition, as two in five of a flood's answers are; and a miss whose origin is a compiled
// reverse proxy, as Traefik's is. Run them under Yaegi too:
// YAEGI_TEST_FLAGS="-bench 'Limiter|Gate' -run ^$" scripts/yaegi-test.sh core.

// BenchmarkLimiterMiss is a cacheable miss on a key of its own, with the default limiter.
func BenchmarkLimiterMiss(b *testing.B) {
	limBenchMiss(b, limit.Settings{})
}

// BenchmarkLimiterMissHuge is BenchmarkLimiterMiss with a pool that never fills.
func BenchmarkLimiterMissHuge(b *testing.B) {
	limBenchMiss(b, limit.Settings{MaxConcurrent: 1 << 30, MaxPerPartition: 1 << 30})
}

// BenchmarkLimiterShed is a miss shed with queue-wait, as a flood's are when its partition
// holds its cap: the partition's one slot is held, and the wait is bounded at 1µs.
func BenchmarkLimiterShed(b *testing.B) {
	h := limBenchHandler(b, limit.Settings{MaxConcurrent: 4, MaxPerPartition: 1, MaxQueueWait: time.Microsecond})
	held := httptest.NewRequest(http.MethodGet, "http://example.com/k/x", nil)
	if limit.Take(h.e.limiter, httpcache.Partition(held), held.Host, false) == nil {
		b.Fatal("the partition's slot was not free")
	}
	// The requests are built before the clock starts: only the miss and its refusal are
	// measured.
	limBenchServe(b, h, limBenchOriginForm(b.N), http.StatusServiceUnavailable)
}

// BenchmarkLimiterMissProxied is a cacheable miss on a key of its own, in origin form as
// Traefik hands it on, whose next handler is a compiled reverse proxy to a local server, as
// Traefik's is: the proxy calls the recorder's methods from compiled code, through the
// wrappers Yaegi makes for an interpreted value handed over as an http.ResponseWriter.
func BenchmarkLimiterMissProxied(b *testing.B) {
	// Distinct queries of one path: past missRate.minMisses, missRate.bypass would send
	// them past the cache (BenchmarkMissBypassedProxied measures that).
	s := Settings{Log: discardLog, MissRate: missrate.Settings{NoBypass: true}}
	h := mustNew(b, uniqueEngineName(b), s, limBenchProxy(b))
	limBenchServe(b, h, limBenchOriginForm(b.N), http.StatusOK)
}

// BenchmarkMissBypassedProxied is BenchmarkLimiterMissProxied on a path the miss-rate
// detector has flagged: each key asked for the first time goes past the cache
// (missRate.bypass, FR-MR-3), as a cache-busting flood's requests do.
func BenchmarkMissBypassedProxied(b *testing.B) {
	// The default thresholds, over a window no run outlasts: the flood's judged misses are
	// one in ten, as in Traefik.
	s := Settings{Log: discardLog, MissRate: missrate.Settings{Window: time.Hour}}
	h := mustNew(b, uniqueEngineName(b), s, limBenchProxy(b))
	// Keys of this run's own (b.N grows, and runs may share an engine's cache): 500 to
	// flag the path (missRate.minMisses), then the first-asked keys measured.
	bypassRuns++
	reqs := make([]*http.Request, b.N+missrate.DefaultMinMisses+1)
	for i := range reqs {
		q := "/b" + strconv.Itoa(bypassRuns) + "/x?q=" + strconv.Itoa(i)
		reqs[i] = httptest.NewRequest(http.MethodGet, "http://example.com"+q, nil)
		reqs[i].RequestURI = q
	}
	for _, r := range reqs[:missrate.DefaultMinMisses] {
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, reqs[missrate.DefaultMinMisses])
	if got := w.Header().Get("Cache-Status"); got != "Weir; fwd=bypass; detail=flood" {
		b.Fatalf("Cache-Status %q, want the miss bypassed", got)
	}
	reqs = reqs[missrate.DefaultMinMisses+1:]
	limBenchServe(b, h, reqs, http.StatusOK)
}

// limBenchProxy is a compiled reverse proxy, as Traefik's, to a local server answering
// every request fresh for an hour; the server closes with b.
func limBenchProxy(b *testing.B) http.Handler {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Cache-Control"] = []string{"max-age=3600"}
		w.Write([]byte("x"))
	}))
	b.Cleanup(func() { srv.Close() })
	u, err := url.Parse(srv.URL)
	if err != nil {
		b.Fatal(err)
	}
	return httputil.NewSingleHostReverseProxy(u)
}

// bypassRuns numbers BenchmarkMissBypassedProxied's runs.
var bypassRuns int

// limBenchOriginForm returns n requests for keys of their own on one path, in origin form
// as Traefik hands them on (RequestURI "/k/x?q=N"), so that ServeHTTP takes its path for
// them (httptest.NewRequest gives the absolute form).
func limBenchOriginForm(n int) []*http.Request {
	reqs := make([]*http.Request, n)
	for i := range reqs {
		q := "/k/x?q=" + strconv.Itoa(i)
		reqs[i] = httptest.NewRequest(http.MethodGet, "http://example.com"+q, nil)
		reqs[i].RequestURI = q
	}
	return reqs
}

// BenchmarkGateEnterLeave is the origin gate's part of a miss: the breaker's permit, taking
// a free slot and giving both back.
func BenchmarkGateEnterLeave(b *testing.B) {
	h := limBenchHandler(b, limit.Settings{})
	r := httptest.NewRequest(http.MethodGet, "http://example.com/k/1", nil)
	req, cancel := fetchRequest(h, r, nil)
	defer cancel()
	ctx := req.Context()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t, refused := enter(h, ctx, httpcache.Partition(req), req.Host, req.URL.Path, false, wayRecord)
		if t == nil {
			b.Fatal(refused)
		}
		leave(h, t, http.StatusOK, time.Millisecond, nil)
	}
}

// BenchmarkLimiterPassThrough is a request for a key marked hit-for-pass: straight to the
// origin, holding a slot.
func BenchmarkLimiterPassThrough(b *testing.B) {
	origin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Cache-Control"] = []string{"no-store"}
		w.Write([]byte("x"))
	})
	h := mustNew(b, uniqueEngineName(b), Settings{Log: discardLog}, origin)
	r := httptest.NewRequest(http.MethodGet, "http://example.com/a/b", nil)
	h.ServeHTTP(httptest.NewRecorder(), r)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
}

func limBenchMiss(b *testing.B, ls limit.Settings) {
	h := limBenchHandler(b, ls)
	// The requests are built before the clock starts: only the miss is measured.
	reqs := make([]*http.Request, b.N)
	for i := range reqs {
		reqs[i] = httptest.NewRequest(http.MethodGet, "http://example.com/k/"+strconv.Itoa(i), nil)
	}
	limBenchServe(b, h, reqs, http.StatusOK)
}

// limBenchServe starts the clock and serves reqs with h, one an operation, each answered
// with status want.
func limBenchServe(b *testing.B, h *Handler, reqs []*http.Request, want int) {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, reqs[i])
		if w.Code != want {
			b.Fatalf("status %d, want %d", w.Code, want)
		}
	}
}

func limBenchHandler(b *testing.B, ls limit.Settings) *Handler {
	origin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Cache-Control"] = []string{"max-age=3600"}
		w.Write([]byte("x"))
	})
	// Each run of the function (b.N grows) gets a fresh engine and cache. Distinct queries
	// of one path (BenchmarkLimiterShed) stay on the cache's path past missRate.minMisses.
	s := Settings{Log: discardLog, Limiter: ls, MissRate: missrate.Settings{NoBypass: true}}
	return mustNew(b, uniqueEngineName(b), s, origin)
}
