package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// A breaker shared through the store, end to end: two Traefik processes share one Redis; a
// breaker that opens on one is open on the other within a second (core/breakersync.go), and
// a breaker of one middleware does not open another's.

// Bounds and pacing of TestSharedBreaker.
const (
	// sbFails is how many failing GETs A gets at most; the breaker wants minRequests (20).
	sbFails = 25
	// sbEvery is B's pace while it waits for the shared deadline.
	sbEvery = 50 * time.Millisecond
	// sbOpenWithin is the requirement: open on B within 1s of opening on A.
	sbOpenWithin = time.Second
	// sbWaitAtMost bounds B's loop, past sbOpenWithin, to tell "late" from "never".
	sbWaitAtMost = 3 * time.Second
	// sbMaxOK is how many /ok paths the origin knows.
	sbMaxOK = 100
	// sbSyncEvery mirrors core's breakerSyncEvery: an instance reads the shared deadline
	// at most this often, and only while fetching.
	sbSyncEvery = 500 * time.Millisecond
	// sbOpenFor is breaker.openFor; Retry-After may be up to 20% longer (breaker jitter).
	sbOpenFor = 5 * time.Second
)

// sbArrivals records when requests reached the origin.
type sbArrivals struct {
	// mu guards at.
	mu sync.Mutex
	at []time.Time
}

func (a *sbArrivals) handler(status int, cacheControl string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.at = append(a.at, time.Now())
		a.mu.Unlock()
		if cacheControl != "" {
			w.Header().Set("Cache-Control", cacheControl)
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		io.WriteString(w, "origin "+r.URL.Path)
	}
}

// since counts the arrivals at or after t.
func (a *sbArrivals) since(t time.Time) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, at := range a.at {
		if !at.Before(t) {
			n++
		}
	}
	return n
}

func (a *sbArrivals) total() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.at)
}

func circuitOpen(r reply) bool {
	return r.status == http.StatusServiceUnavailable && r.cacheStatus().params["detail"] == "circuit-open"
}

// TestSharedBreaker: A and B share one Redis (breaker minRequests 20, openFor 5s, scope host
// by default: A and B are asked for one Host, so one breaker key; negative entries for 1ns
// so they never answer in the breaker's place). 25 failing GETs through A open A's breaker,
// which writes its deadline to Redis. B, fetching a new cacheable URL every
// 50ms, must then answer 503 circuit-open within 1s of A, having let few requests through to
// the origin meanwhile. A second middleware on the same Redis must not be opened by it.
func TestSharedBreaker(t *testing.T) {
	requireE2ERedis(t)
	rd := startRedis(t, 0)
	o := newOrigin(t)
	var fails, oks, others sbArrivals
	for i := 1; i <= sbFails; i++ {
		o.Handle(fmt.Sprintf("/fail/%d", i), fails.handler(http.StatusServiceUnavailable, ""))
	}
	for i := 0; i <= sbMaxOK; i++ {
		o.Handle(fmt.Sprintf("/ok/%d", i), oks.handler(http.StatusOK, "max-age=60"))
		o.Handle(fmt.Sprintf("/other/%d", i), others.handler(http.StatusOK, "max-age=60"))
	}
	conf := func() map[string]interface{} {
		return map[string]interface{}{
			"store":    map[string]interface{}{"url": rd.URL(0)},
			"breaker":  map[string]interface{}{"minRequests": "20", "openFor": "5s"},
			"negative": map[string]interface{}{"ttl": "1ns"},
		}
	}
	d := Dynamic{
		Routes: []Route{
			{Name: "sb", Rule: "PathPrefix(`/fail`) || PathPrefix(`/ok`)", Middleware: "weir-sb"},
			{Name: "sbother", Rule: "PathPrefix(`/other`)", Middleware: "weir-sb-other"},
		},
		Middlewares: map[string]map[string]interface{}{"weir-sb": conf(), "weir-sb-other": conf()},
	}
	a, b := startPair(t, o, d)

	// Warm B: its engine, breaker and store connection exist before A trips, as in a fleet
	// already serving. The fetch also starts one read of the shared deadline.
	warmAt := time.Now()
	warm := callT(t, b, http.MethodGet, "/ok/0")
	if warm.status != http.StatusOK {
		t.Fatalf("warm GET /ok/0 on B: status %d (%s), want 200", warm.status, warm.cacheStatus())
	}

	// Trip A.
	var tripT time.Time
	var lastFail time.Time
	sent := 0
	for i := 1; i <= sbFails; i++ {
		r := callT(t, a, http.MethodGet, fmt.Sprintf("/fail/%d", i))
		sent = i
		if circuitOpen(r) {
			tripT = time.Now()
			break
		}
		if r.status != http.StatusServiceUnavailable {
			t.Fatalf("GET /fail/%d on A: status %d (%s), want the origin's 503", i, r.status, r.cacheStatus())
		}
		lastFail = time.Now()
	}
	if tripT.IsZero() {
		t.Fatalf("A's breaker did not open after %d failing GETs (origin saw %d)", sbFails, fails.total())
	}
	t.Logf("A: breaker open on GET %d (origin saw %d failures) %v after B's warm GET; circuit-open %v after the last failure answered",
		sent, fails.total(), tripT.Sub(warmAt).Round(time.Millisecond), tripT.Sub(lastFail).Round(time.Microsecond))

	// B: a new cacheable URL every sbEvery until it answers circuit-open.
	var openB time.Time
	var openReply reply
	n := 0
	var statuses []string
	for time.Since(tripT) < sbWaitAtMost && n < sbMaxOK {
		n++
		began := time.Now()
		r := callT(t, b, http.MethodGet, fmt.Sprintf("/ok/%d", n))
		if circuitOpen(r) {
			openB, openReply = time.Now(), r
			break
		}
		statuses = append(statuses, fmt.Sprintf("+%v %d %q in %v", began.Sub(tripT).Round(time.Millisecond),
			r.status, r.cacheStatus(), r.took.Round(time.Millisecond)))
		if r.status != http.StatusOK {
			t.Errorf("GET /ok/%d on B: status %d (%s), want 200 or 503 circuit-open", n, r.status, r.cacheStatus())
		}
		if rest := sbEvery - time.Since(began); rest > 0 {
			time.Sleep(rest)
		}
	}
	keys, kerr := rd.Do("KEYS", "*breaker*")
	if kerr != nil {
		keys = "KEYS: " + kerr.Error()
	}
	okAfter := oks.since(tripT)
	if openB.IsZero() {
		t.Fatalf("B never answered circuit-open in %v after A opened (%d GETs, origin saw %d /ok after T); "+
			"breaker keys in Redis: %q; B's answers: %s", sbWaitAtMost, n, okAfter, keys, strings.Join(statuses, "; "))
	}
	took := openB.Sub(tripT)
	t.Logf("B's answers before circuit-open: %s", strings.Join(statuses, "; "))
	t.Logf("B: circuit-open %v after A (on GET %d, %d answered 200 first); origin saw %d /ok requests after T; "+
		"Retry-After %s, Cache-Status %q; breaker keys in Redis: %q",
		took.Round(time.Millisecond), n, n-1, okAfter, openReply.header.Get("Retry-After"), openReply.cacheStatus(), keys)
	if took > sbOpenWithin {
		t.Errorf("B opened %v after A, want within %v", took.Round(time.Millisecond), sbOpenWithin)
	}
	// B reads the deadline at most every sbSyncEvery: at B's pace that is about
	// sbSyncEvery/sbEvery fetches before a read, one more while it runs.
	if max := int(sbSyncEvery/sbEvery) + 2; okAfter > max {
		t.Errorf("origin saw %d /ok requests from B after A opened, want at most %d", okAfter, max)
	}
	// The deadline B holds is A's: about openFor from A's trip, not one B made up.
	ra, err := strconv.Atoi(openReply.header.Get("Retry-After"))
	if maxRA := int((sbOpenFor*6/5 + time.Second - 1) / time.Second); err != nil || ra < 1 || ra > maxRA {
		t.Errorf("B's circuit-open Retry-After = %q, want 1..%d (A's openFor %v with jitter)",
			openReply.header.Get("Retry-After"), maxRA, sbOpenFor)
	}

	// Once open, B lets nothing through to the origin.
	before := oks.total()
	for i := 1; i <= 3; i++ {
		n++
		if r := callT(t, b, http.MethodGet, fmt.Sprintf("/ok/%d", n)); !circuitOpen(r) {
			t.Errorf("GET /ok/%d on B after its breaker opened: status %d (%s), want 503 circuit-open", n, r.status, r.cacheStatus())
		}
	}
	if got := oks.total() - before; got != 0 {
		t.Errorf("origin saw %d /ok requests from B while its breaker was open, want 0", got)
	}

	// Another middleware sharing the Redis has breakers of its own, for the same host (the
	// default scope, host): A's trip must not open them. Its first fetch starts a read of the
	// shared deadline; the next ones would see what that read found.
	var otherOpen []string
	for i := 1; i <= 4; i++ {
		r := callT(t, b, http.MethodGet, fmt.Sprintf("/other/%d", i))
		if r.status != http.StatusOK {
			otherOpen = append(otherOpen, fmt.Sprintf("GET /other/%d: %d (%s)", i, r.status, r.cacheStatus()))
		}
		time.Sleep(2 * sbEvery)
	}
	t.Logf("B, middleware weir-sb-other: %d of 4 GETs refused, origin saw %d", len(otherOpen), others.total())
	if len(otherOpen) > 0 {
		t.Errorf("weir-sb's breaker opened on A also opened weir-sb-other's on B, another middleware with "+
			"its own upstream: breakers of one host (or of scope engine) share their key in the store unless "+
			"core/breakersync.go puts the middleware name in it; %s", strings.Join(otherOpen, "; "))
	}
}
