package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/admin"
)

// A brown-out stopped by the slow-call rule, through a real Traefik: the origin turns 200ms
// slower and answers a fifth of its requests with 500, under a steady client load of
// cacheable misses; with the setting docs/protections.md gives for it ("Sizing the
// breaker"), the breaker opens within 5s and the origin then sees only probes.

// The brown-out test's numbers.
const (
	// boRate is the client's pace, in requests a second, each for a URL of its own.
	boRate = 40
	// boHealthy is how long the origin is healthy first: the window (10s, the default) fills
	// with fast successes, which the brown-out's slow calls must outweigh.
	boHealthy = 10 * time.Second
	// boBrownout is how long the brown-out lasts.
	boBrownout = 12 * time.Second
	// boDelay is what the brown-out adds to every answer; every fifth answer is a 500.
	boDelay = 200 * time.Millisecond
	// boPaths spreads the URLs over paths, so that no path's origin slots
	// (limiter.maxPerPartition) hold a request back.
	boPaths = 8
	// boHost is every request's Host: the breaker's key.
	boHost = "brownout.example.com"
	// boOpenFor is breaker.openFor's default, less its jitter (20%): the least time between
	// two requests that reach the origin while the breaker is open.
	boOpenFor = 4 * time.Second
)

// boSettings is the breaker's setting for a brown-out, as docs/protections.md gives it:
// window and minRequests at their defaults (10s, 20).
var boSettings = map[string]interface{}{"slowCall": "150ms", "slowCallRatio": "0.3", "countStatus500": "true"}

// boOrigin serves the brown-out paths and records when each request reached it.
type boOrigin struct {
	// begin is the UnixNano of the load's start, brownout that of the brown-out's; 0 before.
	begin    int64
	brownout int64
	// n counts the brown-out's answers, every fifth a 500.
	n int64

	// mu guards at.
	mu sync.Mutex
	at []time.Duration // since begin
}

func (o *boOrigin) serve(w http.ResponseWriter, r *http.Request) {
	now := time.Now().UnixNano()
	if b := atomic.LoadInt64(&o.begin); b != 0 {
		o.mu.Lock()
		o.at = append(o.at, time.Duration(now-b))
		o.mu.Unlock()
	}
	if atomic.LoadInt64(&o.brownout) != 0 {
		time.Sleep(boDelay)
		if atomic.AddInt64(&o.n, 1)%5 == 0 {
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, "browned out")
			return
		}
	}
	w.Header().Set("Cache-Control", "max-age=60")
	io.WriteString(w, "ok "+r.URL.RequestURI())
}

// hitsAfter returns the times, since the load began, of the requests that reached the origin
// after d.
func (o *boOrigin) hitsAfter(d time.Duration) []time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []time.Duration
	for _, at := range o.at {
		if at > d {
			out = append(out, at)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// boReply is one reply of the load, its times since the load began.
type boReply struct {
	sent, got   time.Duration
	status      int
	circuitOpen bool
	err         error
}

// boWatch polls the admin's state of the breaker every 100ms until stop is closed, and
// returns when it first saw the breaker open (since begin; -1 if never) and why.
func boWatch(tr *Traefik, prefix string, begin time.Time, stop chan struct{}) (openAt time.Duration, reason string) {
	openAt = -1
	auth := map[string]string{"Authorization": "Bearer " + mfToken}
	for {
		select {
		case <-stop:
			return openAt, reason
		case <-time.After(100 * time.Millisecond):
		}
		r, err := fetch(context.Background(), tr.Client(), requestTimeout, "GET", tr.URL(prefix+"/_weir/api/state"), auth)
		if err != nil {
			continue
		}
		var st admin.State
		if json.Unmarshal([]byte(r.body), &st) != nil {
			continue
		}
		for _, b := range st.Breakers {
			if b.Key == boHost && b.State != "closed" && openAt < 0 {
				openAt = time.Since(begin)
				reason = b.Reason
			}
		}
	}
}

// boLoad sends boRate requests a second for new URLs until d has passed since begin, and
// returns every reply.
func boLoad(tr *Traefik, prefix string, begin time.Time, d time.Duration) []boReply {
	var mu sync.Mutex
	var replies []boReply
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	tick := time.NewTicker(time.Second / boRate)
	defer tick.Stop()
	for i := 0; time.Since(begin) < d; i++ {
		select {
		case sem <- struct{}{}:
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				sent := time.Since(begin)
				url := tr.URL(fmt.Sprintf("%s/p%d?i=%d", prefix, i%boPaths, i))
				r, err := fetch(context.Background(), tr.Client(), requestTimeout, "GET", url, map[string]string{"Host": boHost})
				<-sem
				br := boReply{sent: sent, got: time.Since(begin), status: r.status, err: err,
					circuitOpen: err == nil && circuitOpenAt(r, boHost)}
				mu.Lock()
				replies = append(replies, br)
				mu.Unlock()
			}(i)
		default:
			// Traefik is behind: the client skips a beat rather than pile requests up.
		}
		<-tick.C
	}
	wg.Wait()
	sort.Slice(replies, func(i, j int) bool { return replies[i].sent < replies[j].sent })
	return replies
}

// TestSlowCallsStopBrownout: under 40 cacheable misses a second, the origin browns out (200ms
// slower, a fifth of its answers 500) after 10s healthy. With breaker.slowCall 150ms,
// slowCallRatio 0.3 and countStatus500 (window and minRequests at their defaults), the breaker
// opens on slow calls within 5s of the brown-out's start, by the admin's state and by the
// clients' answers; from then on the origin sees only probes, one an open period, and the
// clients get 503 circuit-open.
func TestSlowCallsStopBrownout(t *testing.T) {
	const prefix = "/bo"
	o := newOrigin(t)
	bo := &boOrigin{}
	for i := 0; i < boPaths; i++ {
		o.Handle(fmt.Sprintf("%s/p%d", prefix, i), bo.serve)
	}
	tr := startTraefik(t, o, mfRoute(t, prefix, boSettings))

	begin := time.Now()
	atomic.StoreInt64(&bo.begin, begin.UnixNano())
	stop := make(chan struct{})
	var openAt time.Duration
	var reason string
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		openAt, reason = boWatch(tr, prefix, begin, stop)
	}()
	// The brown-out starts boHealthy after the load, on the test's clock.
	brownoutTimer := time.AfterFunc(boHealthy, func() { atomic.StoreInt64(&bo.brownout, time.Now().UnixNano()) })
	defer brownoutTimer.Stop()
	replies := boLoad(tr, prefix, begin, boHealthy+boBrownout)
	close(stop)
	<-watched
	bAt := boHealthy
	if b := atomic.LoadInt64(&bo.brownout); b != 0 {
		bAt = time.Duration(b - begin.UnixNano())
	}

	// The first refusal, and the clients' answers on either side of the brown-out's start.
	refusedAt, refusedGot := time.Duration(-1), time.Duration(-1)
	var healthy, healthyOK, open, errs int
	for _, r := range replies {
		switch {
		case r.err != nil:
			errs++
		case r.sent < bAt:
			healthy++
			if r.status == http.StatusOK {
				healthyOK++
			}
		case r.circuitOpen:
			open++
			if refusedAt < 0 {
				refusedAt = r.sent
				refusedGot = r.got
			}
		}
	}
	t.Logf("%d requests: %d while healthy (%d answered 200), %d refused circuit-open, %d errors; brown-out at %v",
		len(replies), healthy, healthyOK, open, errs, bAt.Round(time.Millisecond))
	if errs > 0 || healthyOK != healthy || healthy < int(boHealthy.Seconds())*boRate/2 {
		t.Errorf("while healthy: %d of %d requests answered 200, %d errors in all; want every one, at least %d",
			healthyOK, healthy, errs, int(boHealthy.Seconds())*boRate/2)
	}
	if refusedAt < 0 || openAt < 0 {
		t.Fatalf("the breaker never opened: first refusal at %v, first seen open by the admin at %v", refusedAt, openAt)
	}
	t.Logf("brown-out at %v; the admin saw the breaker open (%s) %v after it, the first refusal was sent %v after it",
		bAt.Round(time.Millisecond), reason, (openAt - bAt).Round(time.Millisecond), (refusedAt - bAt).Round(time.Millisecond))
	if reason != "slow-calls" {
		t.Errorf("the breaker opened by %q, want slow-calls", reason)
	}
	for what, at := range map[string]time.Duration{"seen open by the admin": openAt, "first refusal sent": refusedAt} {
		if at < bAt || at-bAt > 5*time.Second {
			t.Errorf("%s %v after the brown-out began, want within 5s", what, (at - bAt).Round(time.Millisecond))
		}
	}

	// After the first refusal came back, what reaches the origin are probes: a request let
	// through before the breaker opened reaches the origin at once, within the 300ms
	// allowed; a probe comes an open period after the trip (openFor, 5s less its jitter),
	// and the next, after a probe slower than slowCall, an open period later.
	probes := bo.hitsAfter(refusedGot + 300*time.Millisecond)
	var list []string
	for _, p := range probes {
		list = append(list, p.Round(time.Millisecond).String())
	}
	t.Logf("origin requests after the first refusal (probes): %s", strings.Join(list, " "))
	last := refusedAt
	for _, p := range probes {
		if p-last < boOpenFor-300*time.Millisecond {
			t.Errorf("origin requests at %v and %v while open, %v apart: want one an open period (at least %v)",
				last.Round(time.Millisecond), p.Round(time.Millisecond), (p - last).Round(time.Millisecond), boOpenFor)
		}
		last = p
	}
	if stayed := boHealthy + boBrownout - refusedAt; len(probes) > int(stayed/boOpenFor)+1 {
		t.Errorf("%d origin requests in the %v the breaker stayed open, want at most one every %v", len(probes), stayed.Round(time.Millisecond), boOpenFor)
	}
}
