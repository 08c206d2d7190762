package core

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/httpcache"
	"github.com/weirproxy/weir/core/missrate"
)

// What the miss-rate detector costs the engine (FR-MR-1). It is always on: there is no setting
// that turns it off, so its share is measured as the detector's calls alone, with the same
// requests and detector as the engine's, against a whole request through the engine:
//
//	BenchmarkMissRateEngineHit / BenchmarkMissRateHitShare    a hit on the general path
//	BenchmarkMissRateEngineMiss / BenchmarkMissRateMissShare  a miss that fetches
//
// BenchmarkMissRateHitRatio, BenchmarkMissRateQueryHitRatio and BenchmarkMissRateMissRatio
// time the engine and the detector's share in alternate blocks of one run and report the
// share as "detector-%", which a shared, busy machine skews less than two separate runs. The
// hit path tells the detector of hits on URLs with a query (BenchmarkMissRateQueryHitRatio),
// not of those without one (BenchmarkMissRateEngineFastHit). Run them compiled and under
// Yaegi, whose costs are what Traefik pays:
//
//	go test -run '^$' -bench MissRate ./core/
//	YAEGI_TEST_FLAGS="-bench MissRate -run ^$" scripts/yaegi-test.sh core

// missRatePaths is how many paths the miss benchmarks cycle through: spread over the
// detector's 64 slots, with the clock moving 10ms a request, no slot comes near minMisses in a
// window, which is the common miss (no anomaly, nothing judged).
const missRatePaths = 100

// missRateClock is a clock a benchmark moves by hand, without a lock: a benchmark loop runs on
// one goroutine, and a fetch reads the clock while its leader waits.
type missRateClock struct{ t time.Time }

func (c *missRateClock) now() time.Time { return c.t }

// missRateBenchHandler returns a handler whose origin answers every request fresh for an
// hour, and its clock.
func missRateBenchHandler(b *testing.B) (*Handler, *missRateClock) {
	b.Helper()
	clock := &missRateClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	origin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=3600")
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("answer"))
	})
	// A name of its own for each run: the testing package runs a benchmark several times,
	// and an engine (with its detector) lives as long as the process under its name.
	h := mustNew(b, uniqueEngineName(b), Settings{Now: func() time.Time { return clock.now() }, Log: discardLog}, origin)
	return h, clock
}

// missRateRequests returns n requests for distinct paths with a query, optionally with
// Cache-Control: no-cache, which makes every one of them a miss that fetches. Their targets
// are in absolute form, which the hit path leaves to the general path.
func missRateRequests(n int, noCache bool) []*http.Request {
	rs := make([]*http.Request, n)
	for i := range rs {
		r := httptest.NewRequest(http.MethodGet, "http://example.com/catalog/item-"+strconv.Itoa(i)+"?page=2&sort=price", nil)
		if noCache {
			r.Header.Set("Cache-Control", "no-cache")
		}
		rs[i] = r
	}
	return rs
}

// BenchmarkMissRateEngineHit is a fresh hit on the general path, which tells the detector of
// the hit.
func BenchmarkMissRateEngineHit(b *testing.B) {
	h, _ := missRateBenchHandler(b)
	r := missRateRequests(1, false)[0]
	h.ServeHTTP(httptest.NewRecorder(), r)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
}

// BenchmarkMissRateHitShare is what the detector adds to BenchmarkMissRateEngineHit: the
// request's partition and missrate.Hit.
func BenchmarkMissRateHitShare(b *testing.B) {
	h, _ := missRateBenchHandler(b)
	r := missRateRequests(1, false)[0]
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		missrate.Hit(h.missRate, httpcache.Partition(r))
	}
}

// BenchmarkMissRatePartition is the part of BenchmarkMissRateHitShare that is the partition
// alone: the engine computes it for the detector on a hit.
func BenchmarkMissRatePartition(b *testing.B) {
	r := missRateRequests(1, false)[0]
	var n int
	for i := 0; i < b.N; i++ {
		n += len(httpcache.Partition(r))
	}
	if n == 0 {
		b.Fatal("empty partition")
	}
}

// BenchmarkMissRateBreakerCheck is the part of BenchmarkMissRateMissShare that asks whether
// the upstream's breaker is open, which the engine does for the detector alone.
func BenchmarkMissRateBreakerCheck(b *testing.B) {
	h, clock := missRateBenchHandler(b)
	r := missRateRequests(1, true)[0]
	for i := 0; i < b.N; i++ {
		if breakerOpen(h, r.Host, r.URL.Path, clock.t) {
			b.Fatal("breaker open")
		}
	}
}

// BenchmarkMissRateEngineMiss is a miss through the engine that fetches from a trivial origin
// and stores the answer, cycling over missRatePaths keys.
func BenchmarkMissRateEngineMiss(b *testing.B) {
	h, clock := missRateBenchHandler(b)
	rs := missRateRequests(missRatePaths, true)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		clock.t = clock.t.Add(10 * time.Millisecond)
		h.ServeHTTP(httptest.NewRecorder(), rs[i%missRatePaths])
	}
}

// BenchmarkMissRateMissShare is what the detector adds to BenchmarkMissRateEngineMiss: the
// request's partition, the breaker check that keeps refused fetches out of the counts, and
// missrate.Miss, with the same requests and clock steps.
func BenchmarkMissRateMissShare(b *testing.B) {
	h, clock := missRateBenchHandler(b)
	rs := missRateRequests(missRatePaths, true)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		clock.t = clock.t.Add(10 * time.Millisecond)
		r := rs[i%missRatePaths]
		if breakerOpen(h, r.Host, r.URL.Path, clock.t) {
			b.Fatal("breaker open")
		}
		if a := missrate.Miss(h.missRate, httpcache.Partition(r), r.URL.RawQuery, clock.t); a != nil {
			b.Fatalf("anomaly on an ordinary miss load: %+v", a)
		}
	}
}

// BenchmarkMissRateEngineFastHit is a fresh hit of a URL without a query, which the engine
// serves without telling the detector: the reference for the hit path's cost.
func BenchmarkMissRateEngineFastHit(b *testing.B) {
	h, _ := missRateBenchHandler(b)
	benchServe(b, h, "/catalog/item", statusHit)
}

// missRateBlock is how many requests a ratio benchmark times in a row before switching between
// the engine and the detector alone, so that both see the same load on a shared machine.
const missRateBlock = 100

// BenchmarkMissRateHitRatio reports the detector's share of a hit on the general path, in
// percent of the engine's whole hit (the metric "detector-%"), timing the two in alternate
// blocks of one run.
func BenchmarkMissRateHitRatio(b *testing.B) {
	h, _ := missRateBenchHandler(b)
	r := missRateRequests(1, false)[0]
	missRateHitRatio(b, h, r, func() { missrate.Hit(h.missRate, httpcache.Partition(r)) })
}

// BenchmarkMissRateQueryHitRatio is BenchmarkMissRateHitRatio for a hit on the hit path: a
// URL with a query, in origin form as a server hands it on. The share is queryHit's count,
// on a partition cut from the key.
func BenchmarkMissRateQueryHitRatio(b *testing.B) {
	h, _ := missRateBenchHandler(b)
	r := missRateRequests(1, false)[0]
	r.RequestURI = r.URL.RequestURI()
	key := httpcache.Key(&h.keyer, r)
	n := len(key) - len(r.URL.RawQuery) - 1
	missRateHitRatio(b, h, r, func() { missrate.Hit(h.missRate, key[:n]) })
}

// missRateHitRatio times h serving r, a hit, against share, in alternate blocks.
func missRateHitRatio(b *testing.B, h *Handler, r *http.Request, share func()) {
	h.ServeHTTP(httptest.NewRecorder(), r)
	var engine, shared time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i += missRateBlock {
		t0 := time.Now()
		for j := 0; j < missRateBlock; j++ {
			h.ServeHTTP(httptest.NewRecorder(), r)
		}
		t1 := time.Now()
		for j := 0; j < missRateBlock; j++ {
			share()
		}
		engine += t1.Sub(t0)
		shared += time.Since(t1)
	}
	b.ReportMetric(100*float64(shared)/float64(engine), "detector-%")
}

// BenchmarkMissRateMissRatio reports the detector's share of a miss that fetches, in percent
// of the engine's whole miss, timed as BenchmarkMissRateHitRatio.
func BenchmarkMissRateMissRatio(b *testing.B) {
	h, clock := missRateBenchHandler(b)
	// Two detectors' worth of traffic on one clock: the engine's misses and the share's each
	// count in a detector of their own, so neither sees the other's.
	h2, _ := missRateBenchHandler(b)
	rs := missRateRequests(missRatePaths, true)
	var engine, share time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i += missRateBlock {
		t0 := time.Now()
		for j := 0; j < missRateBlock; j++ {
			clock.t = clock.t.Add(10 * time.Millisecond)
			h.ServeHTTP(httptest.NewRecorder(), rs[(i+j)%missRatePaths])
		}
		t1 := time.Now()
		for j := 0; j < missRateBlock; j++ {
			r := rs[(i+j)%missRatePaths]
			if !breakerOpen(h2, r.Host, r.URL.Path, clock.t) {
				missrate.Miss(h2.missRate, httpcache.Partition(r), r.URL.RawQuery, clock.t)
			}
		}
		engine += t1.Sub(t0)
		share += time.Since(t1)
	}
	b.ReportMetric(100*float64(share)/float64(engine), "detector-%")
}
