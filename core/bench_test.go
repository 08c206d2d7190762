package core

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/budget"
	"github.com/weirproxy/weir/internal/redistest"
)

// BenchmarkHit measures one fresh hit from the memory store, the path that decides Weir's
// throughput inside Traefik. Run it under Yaegi too (scripts/yaegi-test.sh with
// YAEGI_TEST_FLAGS="-bench Hit -run ^$"): interpreted cost is what Traefik pays.
func BenchmarkHit(b *testing.B) {
	benchHit(b, "bench-hit", "/a/b")
}

// BenchmarkHitQuery is BenchmarkHit on a URL with a query string, sent in the order Weir's
// key keeps its parameters (sorted by name), as real traffic's ?page=2 and ?v=hash mostly are.
func BenchmarkHitQuery(b *testing.B) {
	benchHit(b, "bench-hit-query", "/a/b?page=2&v=5f3c9a")
}

// BenchmarkHitQueryUnsorted is a hit on a URL whose query is not in the key's order: the
// general path normalises it.
func BenchmarkHitQueryUnsorted(b *testing.B) {
	benchHit(b, "bench-hit-query-unsorted", "/a/b?v=5f3c9a&page=2")
}

func benchHit(b *testing.B, name, uri string) {
	body := strings.Repeat("x", 1024)
	origin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=3600")
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte(body))
	})
	h, err := New(name, Settings{}, origin)
	if err != nil {
		b.Fatal(err)
	}
	benchServe(b, h, uri, statusHit)
}

// BenchmarkPassThrough measures an answer that may not be stored, after the first. The
// clock stands still, so that the breakers' sample of pass-through requests (passSampler)
// is the first request, whatever a run's speed: the count is of the unrecorded request.
func BenchmarkPassThrough(b *testing.B) {
	origin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Write([]byte("x"))
	})
	h, err := New("bench-pass", Settings{Now: newFakeClock().Now}, origin)
	if err != nil {
		b.Fatal(err)
	}
	benchServe(b, h, "/a/b", "Weir; fwd=uri-miss; detail=uncacheable")
}

// BenchmarkPassThroughPacing is BenchmarkPassThrough with pacing set for another host: what
// a pass-through request of a host without pacing pays while pacing is on (the clock still).
func BenchmarkPassThroughPacing(b *testing.B) {
	origin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Write([]byte("x"))
	})
	s := Settings{Now: newFakeClock().Now, Pacing: []Pace{{Name: "feeds.example.org", Rate: budget.Rate{N: 3, Per: 10 * time.Second}}}}
	h, err := New("bench-pass-pacing", s, origin)
	if err != nil {
		b.Fatal(err)
	}
	benchServe(b, h, "/a/b", "Weir; fwd=uri-miss; detail=uncacheable")
}

// BenchmarkHitBudget is BenchmarkHit behind a client budget no request exceeds: what the
// budgets cost a hit when they are on.
func BenchmarkHitBudget(b *testing.B) {
	benchFrontHit(b, "bench-hit-budget", Settings{Budgets: BudgetSettings{Client: budget.Rate{N: 1000000000, Per: time.Second}, Burst: time.Second}})
}

// BenchmarkHitAdmission is BenchmarkHit behind admission under its knee: what admission
// costs a hit when it is on.
func BenchmarkHitAdmission(b *testing.B) {
	benchFrontHit(b, "bench-hit-admission", Settings{Admission: AdmissionSettings{KneeInFlight: 1000,
		Lag: func() time.Duration { return 0 }}})
}

// BenchmarkHitAdmissionProtect is BenchmarkHitAdmission with two admission.protect prefixes
// the request is not under: what checking them costs every request (setting.UnderPrefix).
func BenchmarkHitAdmissionProtect(b *testing.B) {
	benchFrontHit(b, "bench-hit-admission-protect", Settings{Admission: AdmissionSettings{KneeInFlight: 1000,
		Protect: []string{"/health", "/ready/"}, Lag: func() time.Duration { return 0 }}})
}

// benchFrontHit measures a fresh hit through h.Front() of a handler with settings s.
func benchFrontHit(b *testing.B, name string, s Settings) {
	body := strings.Repeat("x", 1024)
	origin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=3600")
		w.Write([]byte(body))
	})
	h, err := New(name, s, origin)
	if err != nil {
		b.Fatal(err)
	}
	front := h.Front()
	r := httptest.NewRequest(http.MethodGet, "http://example.com/a/b", nil)
	r.RequestURI = "/a/b"
	front.ServeHTTP(httptest.NewRecorder(), r)
	w := httptest.NewRecorder()
	front.ServeHTTP(w, r)
	if got := w.Header().Get("Cache-Status"); !strings.HasPrefix(got, statusHit) {
		b.Fatalf("second request: Cache-Status %q, want a hit", got)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		front.ServeHTTP(httptest.NewRecorder(), r)
	}
}

// benchServe serves a GET of uri on example.com with h twice, fails unless the second
// answer's Cache-Status starts with want, then serves it b.N times, timing those. h is a
// *Handler, as Traefik holds it: a call through an interface costs more under Yaegi.
func benchServe(b *testing.B, h *Handler, uri, want string) {
	r := httptest.NewRequest(http.MethodGet, "http://example.com"+uri, nil)
	r.RequestURI = uri
	h.ServeHTTP(httptest.NewRecorder(), r)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if got := w.Header().Get("Cache-Status"); !strings.HasPrefix(got, want) {
		b.Fatalf("second request: Cache-Status %q, want %q", got, want)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
}

// BenchmarkBare is the origin alone, to subtract from the others.
func BenchmarkBare(b *testing.B) {
	origin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Write([]byte("x"))
	})
	r := httptest.NewRequest(http.MethodGet, "http://example.com/a/b", nil)
	r.RequestURI = "/a/b"
	for i := 0; i < b.N; i++ {
		origin.ServeHTTP(httptest.NewRecorder(), r)
	}
}

// BenchmarkColdKeyCoalescing sends 8 concurrent requests for a key nothing is stored for,
// round after round, and reports the origin calls per round: coalescing makes it 1
// (FR-COA-1); anything above 1.004 means requests slip past the flight.
func BenchmarkColdKeyCoalescing(b *testing.B) {
	var calls int64
	origin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		atomic.AddInt64(&calls, 1)
		w.Header().Set("Cache-Control", "max-age=3600")
		w.Write([]byte("cold"))
	})
	h, err := New("bench-cold-"+strconv.Itoa(b.N), Settings{}, origin)
	if err != nil {
		b.Fatal(err)
	}
	const callers = 8
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		url := "http://example.com/cold/" + strconv.Itoa(i)
		start := make(chan struct{})
		done := make(chan struct{}, callers)
		for j := 0; j < callers; j++ {
			go func(url string) {
				r := httptest.NewRequest(http.MethodGet, url, nil)
				r.RequestURI = r.URL.RequestURI()
				<-start
				h.ServeHTTP(httptest.NewRecorder(), r)
				done <- struct{}{}
			}(url)
		}
		close(start)
		for j := 0; j < callers; j++ {
			<-done
		}
	}
	b.ReportMetric(float64(atomic.LoadInt64(&calls))/float64(b.N), "origin-calls/round")
}

// BenchmarkHitRedis is BenchmarkHit from a shared Redis store with store.nearCache off:
// every hit reads and decodes the entry from the server (the route scripts/bench-redis.sh
// calls redis-get). Under Yaegi it counts what such a hit costs Traefik
// (scripts/yaegi-cost.sh core BenchmarkHitRedis).
func BenchmarkHitRedis(b *testing.B) {
	srv := redistest.Start(b, redistest.Config{})
	body := strings.Repeat("x", 1024)
	origin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=3600")
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte(body))
	})
	// A store timeout of a second, not timeouts.store's 50ms: under callgrind every call
	// runs tens of times slower, and a timed-out read would count a miss's work as a hit's.
	h, err := New("bench-hit-redis", Settings{StoreURL: "redis://" + srv.Addr, StoreNoNearCache: true, StoreTimeout: time.Second}, origin)
	if err != nil {
		b.Fatal(err)
	}
	benchServe(b, h, "/a/b", statusHit)
}
