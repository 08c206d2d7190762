package e2e

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The circuit breaker (FR-CB-1..5) and the negative cache (FR-NEG-1..4) through a real
// Traefik. Each test is bounded in requests and time and prints what it saw.

// Settings of the brown-out test's breaker: shorter than the defaults (window 10s, openFor 5s,
// maxOpenFor 60s) so that a trip, two failed probes and a recovery fit in under a minute.
const (
	cbWindow     = 5 * time.Second
	cbOpenFor    = 2 * time.Second
	cbMaxOpenFor = 8 * time.Second
	// cbJitter is the breaker's fixed jitter (breaker.DefaultJitter): each open period is
	// varied by up to 20% either way, and reflected below maxOpenFor at the cap.
	cbJitter = 0.2
)

// The brown-out timeline, from the start of the client loop.
const (
	cbBrownoutAt = 5 * time.Second
	cbOutageAt   = 12 * time.Second
	cbRecoverAt  = 26 * time.Second
	cbEnd        = 38 * time.Second
	// cbRate is the client loop's pace, in requests per second.
	cbRate = 50
	// cbMaxInFlight bounds the client's concurrent requests.
	cbMaxInFlight = 64
	// cbBrownoutDelay is added to every origin answer during the brown-out, and every fifth
	// answer is a 500.
	cbBrownoutDelay = 200 * time.Millisecond
)

// Phases of the origin.
const (
	cbHealthy = iota
	cbBrownout
	cbOutage
	cbRecovered
)

var cbPhaseNames = []string{"healthy", "brownout", "outage", "recovered"}

func cbPhase(d time.Duration) int {
	switch {
	case d < cbBrownoutAt:
		return cbHealthy
	case d < cbOutageAt:
		return cbBrownout
	case d < cbRecoverAt:
		return cbOutage
	}
	return cbRecovered
}

// cbReply is one client request of the brown-out loop.
type cbReply struct {
	sent       time.Duration // since the loop began
	path       string
	cached     bool // the path's answers are cacheable with stale-if-error
	status     int
	cs         cacheStatus
	retryAfter string
	err        error
}

func (r cbReply) circuitOpen() bool { return r.cs.params["detail"] == "circuit-open" }

func (r cbReply) stale() bool {
	ttl, ok := r.cs.ttl()
	return r.status == http.StatusOK && r.cs.hit() && ok && ttl < 0
}

// cbHit is one request that reached the origin.
type cbHit struct {
	at     time.Duration // since the loop began
	path   string
	status int
}

// cbOrigin serves the brown-out paths and records every request that reaches it.
type cbOrigin struct {
	begin int64 // UnixNano of the loop's start; 0 before it
	n     int64 // answers served during the brown-out, every fifth a 500

	// mu guards hits.
	mu   sync.Mutex
	hits []cbHit
}

func (o *cbOrigin) handler(cacheControl string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var since time.Duration
		if b := atomic.LoadInt64(&o.begin); b != 0 {
			since = time.Duration(time.Now().UnixNano() - b)
		}
		status := http.StatusOK
		switch cbPhase(since) {
		case cbBrownout:
			time.Sleep(cbBrownoutDelay)
			if atomic.AddInt64(&o.n, 1)%5 == 0 {
				status = http.StatusInternalServerError
			}
		case cbOutage:
			status = http.StatusServiceUnavailable
		}
		if atomic.LoadInt64(&o.begin) != 0 {
			o.mu.Lock()
			o.hits = append(o.hits, cbHit{at: since, path: r.URL.Path, status: status})
			o.mu.Unlock()
		}
		if status != http.StatusOK {
			w.WriteHeader(status)
			io.WriteString(w, "origin failing")
			return
		}
		w.Header().Set("Cache-Control", cacheControl)
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "ok "+r.URL.Path)
	}
}

func (o *cbOrigin) snapshot() []cbHit {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]cbHit(nil), o.hits...)
}

// TestBreakerBrownout drives a client loop at 50 requests a second over five cacheable
// paths (max-age=1, stale-if-error=300) and three no-store paths while the origin is healthy,
// browns out (200ms slower, a fifth of answers 500), fails hard (every answer 503) and
// recovers. The breaker runs with window 5s, openFor 2s, maxOpenFor 8s (shorter than the
// defaults, to fit the test in a minute).
//
// It asserts: the brown-out's 500s do not open the breaker (countStatus500 is off); the
// breaker opens within 5s of the outage; while it is open the origin sees only single probes,
// spaced by the open periods (about openFor, doubling on each failed probe); cacheable paths
// are served stale and no-store paths get 503 with Retry-After; after the recovery the breaker
// closes within the open period then running, and every answer comes from the origin again.
func TestBreakerBrownout(t *testing.T) {
	o := newOrigin(t)
	cbo := &cbOrigin{}
	var paths []string
	cachedPath := map[string]bool{}
	for i := 0; i < 5; i++ {
		p := fmt.Sprintf("/cb/c%d", i)
		o.Handle(p, cbo.handler("max-age=1, stale-if-error=300"))
		paths = append(paths, p)
		cachedPath[p] = true
	}
	for i := 0; i < 3; i++ {
		p := fmt.Sprintf("/cb/n%d", i)
		o.Handle(p, cbo.handler("no-store"))
		paths = append(paths, p)
	}
	conf := specConfig(t)
	conf["breaker"] = map[string]interface{}{
		"scope": "host", "window": cbWindow.String(), "minRequests": "20", "failureRatio": "0.5",
		"openFor": cbOpenFor.String(), "maxOpenFor": cbMaxOpenFor.String(), "countStatus500": "false",
	}
	conf["negative"] = map[string]interface{}{"ttl": "2s", "maxEntries": "10000"}
	tr := startTraefik(t, o, cachedRoute("cb", "/cb", "weir-cb", conf))

	replies := cbLoop(t, tr, cbo, paths, cachedPath)
	hits := cbo.snapshot()
	t.Logf("%d requests, %d origin hits\n%s", len(replies), len(hits), cbTimeline(replies, hits))

	for _, r := range replies {
		if r.err != nil {
			t.Fatalf("request for %s at %v: %v", r.path, r.sent.Round(time.Millisecond), r.err)
		}
	}

	// The brown-out's 500s are the origin answering: no refusal before the outage.
	openAt := time.Duration(-1)
	for _, r := range replies {
		if r.circuitOpen() {
			if r.sent < cbOutageAt {
				t.Errorf("circuit-open at %v, before the outage (%v): the brown-out's 500s opened the breaker", r.sent.Round(time.Millisecond), cbOutageAt)
			}
			if openAt < 0 || r.sent < openAt {
				openAt = r.sent
			}
		}
	}
	if openAt < 0 {
		t.Fatalf("the breaker never opened (no answer with detail=circuit-open)")
	}
	t.Logf("breaker first seen open at %v, %v after the outage began", openAt.Round(time.Millisecond), (openAt - cbOutageAt).Round(time.Millisecond))
	if openAt-cbOutageAt > 5*time.Second {
		t.Errorf("breaker opened %v after the outage began, want within 5s", (openAt - cbOutageAt).Round(time.Millisecond))
	}

	// While open, the origin sees single probes, each open period about twice the one before.
	// A fetch the breaker let through just before it opened may reach the origin a moment
	// after the first refusal: hits within 100ms of it are not probes.
	var probes []cbHit
	for _, h := range hits {
		if h.at > openAt+100*time.Millisecond && h.at < cbRecoverAt {
			probes = append(probes, h)
		}
	}
	// The open period that follows the i-th failed probe is openFor*2^i, capped at maxOpenFor.
	period := 2 * cbOpenFor
	for i := 1; i < len(probes); i++ {
		gap := probes[i].at - probes[i-1].at
		// The shortest an open period can be: its base less the jitter, and less a little for
		// the time between the origin's answer and the breaker's record of it.
		least := time.Duration(float64(period)*(1-cbJitter)) - 150*time.Millisecond
		if period >= cbMaxOpenFor {
			least = time.Duration(float64(cbMaxOpenFor)*(1-cbJitter)) - 150*time.Millisecond
		}
		if gap < least {
			t.Errorf("origin requests %v (%s) and %v (%s) while open are %v apart, want at least %v: more than one request per open period",
				probes[i-1].at.Round(time.Millisecond), probes[i-1].path, probes[i].at.Round(time.Millisecond), probes[i].path,
				gap.Round(time.Millisecond), least.Round(time.Millisecond))
		}
		if period < cbMaxOpenFor {
			period *= 2
		}
	}
	var probeList []string
	for _, p := range probes {
		probeList = append(probeList, fmt.Sprintf("%v %s %d", p.at.Round(time.Millisecond), p.path, p.status))
	}
	t.Logf("origin requests while the breaker was open (probes): %s", strings.Join(probeList, "; "))
	failedProbes := 0
	for _, p := range probes {
		if p.status != http.StatusOK {
			failedProbes++
		}
	}

	// While open: cacheable paths are served stale, the others get 503 with Retry-After.
	staleOpen, refusedOpen := 0, 0
	for _, r := range replies {
		if r.sent < openAt || r.sent >= cbRecoverAt {
			continue
		}
		if r.cached {
			if !r.stale() {
				t.Errorf("%s at %v while open: status %d, Cache-Status %q, want a stale answer", r.path, r.sent.Round(time.Millisecond), r.status, r.cs)
			}
			if r.circuitOpen() {
				staleOpen++
			}
			continue
		}
		if r.status != http.StatusServiceUnavailable {
			t.Errorf("%s at %v while open: status %d, Cache-Status %q, want 503", r.path, r.sent.Round(time.Millisecond), r.status, r.cs)
			continue
		}
		if r.circuitOpen() {
			refusedOpen++
			ra, err := strconv.Atoi(r.retryAfter)
			if err != nil || ra < 1 || time.Duration(ra)*time.Second > cbMaxOpenFor+time.Second {
				t.Errorf("%s at %v refused with Retry-After %q, want 1 to %v seconds", r.path, r.sent.Round(time.Millisecond), r.retryAfter, cbMaxOpenFor.Seconds())
			}
		}
	}
	t.Logf("while open: %d stale answers with detail=circuit-open, %d refusals with 503 and Retry-After", staleOpen, refusedOpen)
	if staleOpen == 0 || refusedOpen == 0 {
		t.Errorf("while open: %d stale answers with detail=circuit-open and %d refusals, want both", staleOpen, refusedOpen)
	}

	// After the recovery, the next probe closes the breaker within the open period then
	// running: at most openFor*2^k (plus jitter, capped at maxOpenFor) after its start.
	closeAt := time.Duration(-1)
	for _, h := range hits {
		if h.at >= cbRecoverAt && h.status == http.StatusOK {
			closeAt = h.at
			break
		}
	}
	if closeAt < 0 {
		t.Fatalf("the origin saw no request after it recovered: the breaker never closed")
	}
	bound := time.Duration(float64(cbOpenFor)*math.Pow(2, float64(failedProbes))*(1+cbJitter)) + time.Second
	if bound > cbMaxOpenFor+time.Second {
		bound = cbMaxOpenFor + time.Second
	}
	t.Logf("closed at %v, %v after the recovery (%d failed probes, bound %v)", closeAt.Round(time.Millisecond), (closeAt - cbRecoverAt).Round(time.Millisecond), failedProbes, bound)
	if closeAt-cbRecoverAt > bound {
		t.Errorf("breaker closed %v after the recovery, want within %v", (closeAt - cbRecoverAt).Round(time.Millisecond), bound)
	}
	fromOrigin := 0
	for _, r := range replies {
		if r.sent < closeAt+500*time.Millisecond {
			continue
		}
		if r.status != http.StatusOK || r.circuitOpen() {
			t.Errorf("%s at %v after closing: status %d, Cache-Status %q, want 200", r.path, r.sent.Round(time.Millisecond), r.status, r.cs)
		}
		if !r.cs.hit() {
			fromOrigin++
		}
	}
	if fromOrigin == 0 {
		t.Errorf("no answer came from the origin after the breaker closed")
	}
}

// cbLoop sends requests at cbRate a second, cycling through paths, for cbEnd, and returns
// every reply in the order sent.
func cbLoop(t *testing.T, tr *Traefik, cbo *cbOrigin, paths []string, cached map[string]bool) []cbReply {
	t.Helper()
	replies := make([]cbReply, 0, int(cbEnd.Seconds()*cbRate)+cbRate)
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, cbMaxInFlight)
	skipped := 0
	ticker := time.NewTicker(time.Second / cbRate)
	defer ticker.Stop()
	begin := time.Now()
	atomic.StoreInt64(&cbo.begin, begin.UnixNano())
	for i := 0; ; i++ {
		sent := time.Since(begin)
		if sent >= cbEnd {
			break
		}
		select {
		case sem <- struct{}{}:
			wg.Add(1)
			go func(path string, sent time.Duration) {
				defer wg.Done()
				r := cbSend(tr, path)
				<-sem
				r.sent = sent
				r.cached = cached[path]
				mu.Lock()
				replies = append(replies, r)
				mu.Unlock()
			}(paths[i%len(paths)], sent)
		default:
			skipped++
		}
		<-ticker.C
	}
	wg.Wait()
	if skipped > 0 {
		t.Logf("client skipped %d ticks with %d requests in flight", skipped, cbMaxInFlight)
	}
	sort.Slice(replies, func(i, j int) bool { return replies[i].sent < replies[j].sent })
	return replies
}

func cbSend(tr *Traefik, path string) cbReply {
	r, err := fetch(context.Background(), tr.Client(), requestTimeout, http.MethodGet, tr.URL(path), nil)
	return cbReply{path: path, status: r.status, cs: r.cacheStatus(), retryAfter: r.header.Get("Retry-After"), err: err}
}

// cbTimeline is a table of the loop, one line a second: requests sent, origin hits, 503s,
// stale answers, refusals by the breaker (circuit-open), and the breaker state those suggest.
func cbTimeline(replies []cbReply, hits []cbHit) string {
	secs := int(cbEnd / time.Second)
	type row struct{ req, hits, fails, s503, stale, open, fresh int }
	rows := make([]row, secs)
	for _, r := range replies {
		s := int(r.sent / time.Second)
		if s >= secs {
			continue
		}
		rows[s].req++
		if r.status == http.StatusServiceUnavailable {
			rows[s].s503++
		}
		if r.stale() {
			rows[s].stale++
		}
		if r.circuitOpen() {
			rows[s].open++
		}
		if !r.cs.hit() && !r.circuitOpen() {
			rows[s].fresh++
		}
	}
	for _, h := range hits {
		s := int(h.at / time.Second)
		if s >= 0 && s < secs {
			rows[s].hits++
			if h.status != http.StatusOK {
				rows[s].fails++
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%4s %-9s %4s %6s %5s %4s %5s %6s %s\n", "sec", "phase", "req", "o-hits", "o-err", "503", "stale", "c-open", "breaker")
	for s, r := range rows {
		state := "closed"
		switch {
		case r.open > 0 && r.hits == 0:
			state = "open"
		case r.open > 0:
			state = "open+probe"
		}
		fmt.Fprintf(&b, "%4d %-9s %4d %6d %5d %4d %5d %6d %s\n", s, cbPhaseNames[cbPhase(time.Duration(s)*time.Second)],
			r.req, r.hits, r.fails, r.s503, r.stale, r.open, state)
	}
	return b.String()
}

// TestNegativeCacheRetryLoop: a client retrying one failing URL as fast as it can (the origin
// answers 503 with Retry-After: 5 and nothing is stored) reaches the origin once: the others
// get the remembered 503 with a line of text for negative.ttl (2s), then the breaker's 503, which
// the origin's Retry-After opened. A 500, a 404 and a request with Authorization are not
// remembered: every retry reaches the origin (FR-NEG-1, FR-NEG-2, FR-NEG-4). The breaker's
// minRequests is raised out of reach so that no failure ratio opens it. The loop's thousands
// of negative answers on one URL raise no miss_rate_anomaly.
func TestNegativeCacheRetryLoop(t *testing.T) {
	const (
		ttl      = 2 * time.Second
		loopFor  = 3 * time.Second
		maxLoops = 20000
	)
	o := newOrigin(t)
	fail := func(status int, retryAfter string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			w.WriteHeader(status)
			io.WriteString(w, "origin failing")
		}
	}
	o.Handle("/neg/503", fail(http.StatusServiceUnavailable, "5"))
	o.Handle("/neg/500", fail(http.StatusInternalServerError, ""))
	o.Handle("/neg/404", fail(http.StatusNotFound, ""))
	o.Handle("/neg/auth", fail(http.StatusServiceUnavailable, ""))
	o.Handle("/neg/502", fail(http.StatusBadGateway, ""))
	o.Handle("/neg/504", fail(http.StatusGatewayTimeout, ""))
	conf := specConfig(t)
	conf["negative"] = map[string]interface{}{"ttl": ttl.String(), "maxEntries": "10000"}
	conf["breaker"] = map[string]interface{}{"minRequests": "100000"}
	tr := startTraefik(t, o, cachedRoute("neg", "/neg", "weir-neg", conf))

	// The origin's 503 says Retry-After: 5, which opens the breaker of its host (the loop's
	// Host of its own, leaving the other subtests' alone) for 5s: the negative entry answers
	// for its ttl, then the breaker until the 5s are up.
	t.Run("retry loop on a 503", func(t *testing.T) {
		loopHost := map[string]string{"Host": "loop.example"}
		began := time.Now()
		n, negative, open := 0, 0, 0
		for time.Since(began) < loopFor && n < maxLoops {
			r := send(t, tr, http.MethodGet, "/neg/503", loopHost)
			n++
			if r.status != http.StatusServiceUnavailable {
				t.Fatalf("request %d: status %d, want 503", n, r.status)
			}
			cs := r.cacheStatus()
			if cs.params["detail"] == "circuit-open" {
				open++
				if ra, err := strconv.Atoi(r.header.Get("Retry-After")); cs.params["key"] != "loop.example" || err != nil || ra < 1 || ra > 6 {
					t.Errorf("request %d: Cache-Status %q, Retry-After %q; want the breaker of loop.example with what is left of the origin's 5s",
						n, cs, r.header.Get("Retry-After"))
				}
				continue
			}
			if cs.params["detail"] != "negative" {
				continue
			}
			negative++
			if ttlLeft, ok := cs.ttl(); !cs.hit() || !ok || ttlLeft < 1 || ttlLeft > 2 {
				t.Errorf("request %d: Cache-Status %q, want \"Weir; hit; ttl=N; detail=negative\" with N of 1 or 2", n, cs)
			}
			// The origin's Retry-After (5s) counts down from the failure that was remembered.
			if ra, err := strconv.Atoi(r.header.Get("Retry-After")); r.body != "origin unavailable, retry later\n" || err != nil || ra < 1 || ra > 5 {
				t.Errorf("request %d: body %q, Retry-After %q; want the refusal's line and what is left of the origin's Retry-After 5", n, short(r.body), r.header.Get("Retry-After"))
			}
		}
		elapsed := time.Since(began)
		hits := o.Count("/neg/503")
		most := int64(math.Ceil(elapsed.Seconds()/ttl.Seconds())) + 1
		t.Logf("%d sequential requests in %v: %d reached the origin, %d answered from negative entries (at most %d allowed), %d by the open breaker",
			n, elapsed.Round(time.Millisecond), hits, negative, most, open)
		if hits > most {
			t.Errorf("origin requests = %d in %v, want at most ceil(duration/ttl)+1 = %d", hits, elapsed.Round(time.Millisecond), most)
		}
		if hits != 1 {
			t.Errorf("origin requests = %d in %v, want 1: the origin said Retry-After: 5", hits, elapsed.Round(time.Millisecond))
		}
		if negative == 0 || open == 0 {
			t.Errorf("%d negative answers and %d from the open breaker, want both: the entry for its ttl, then the breaker", negative, open)
		}
		if int64(n)-hits != int64(negative+open) {
			t.Errorf("%d requests, %d origin requests, %d negative answers, %d from the breaker: every other request should be one of those",
				n, hits, negative, open)
		}
		// Negative answers are the cache's: a retry loop on one URL is no cache-busting flood.
		if lines := mrAnomalies(t, tr, "weir-neg"); len(lines) > 0 {
			t.Errorf("the retry loop on one URL raised %d miss_rate_anomaly line(s), want none: %q", len(lines), lines)
		}
	})

	// Every 502, 503 or 504 Weir makes says when to come back: for a negative entry of an
	// origin that named no Retry-After, the entry's time left.
	for _, status := range []int{http.StatusBadGateway, http.StatusGatewayTimeout} {
		t.Run(fmt.Sprintf("a negative %d says when to come back", status), func(t *testing.T) {
			path := fmt.Sprintf("/neg/%d", status)
			if r := get(t, tr, path); r.status != status {
				t.Fatalf("first: status %d, want the origin's %d", r.status, status)
			}
			r := get(t, tr, path)
			ra, err := strconv.Atoi(r.header.Get("Retry-After"))
			if r.status != status || r.cacheStatus().params["detail"] != "negative" || err != nil || ra < 1 || ra > 2 {
				t.Errorf("second: status %d, Cache-Status %q, Retry-After %q; want %d from the negative entry with Retry-After 1 or 2 (negative.ttl 2s)",
					r.status, r.cacheStatus(), r.header.Get("Retry-After"), status)
			}
		})
	}

	tests := []struct {
		desc   string
		path   string
		header map[string]string
		status int
	}{
		{desc: "a 500 is not remembered", path: "/neg/500", status: http.StatusInternalServerError},
		{desc: "a 404 is not remembered", path: "/neg/404", status: http.StatusNotFound},
		{desc: "a 503 with Authorization is not remembered", path: "/neg/auth",
			header: map[string]string{"Authorization": "Bearer secret"}, status: http.StatusServiceUnavailable},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			const n = 10
			for i := 0; i < n; i++ {
				r := send(t, tr, http.MethodGet, tc.path, tc.header)
				if r.status != tc.status || r.cacheStatus().params["detail"] == "negative" {
					t.Errorf("request %d: status %d, Cache-Status %q; want the origin's %d", i+1, r.status, r.cacheStatus(), tc.status)
				}
			}
			wantCount(t, o, tc.path, n)
		})
	}
}
