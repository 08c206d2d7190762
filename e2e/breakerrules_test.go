package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The breaker's rules for an origin that says stop, a slow origin, careful half-opening and
// bulkheads per path (breaker.countStatus429, slowCall, probes, paths), through a real
// Traefik. Each test is bounded in requests and time and prints what it saw.

// hitLog records when requests reached an origin handler.
type hitLog struct {
	// mu guards at and status.
	mu     sync.Mutex
	at     []time.Time
	status []int
}

func (l *hitLog) add(status int) {
	l.mu.Lock()
	l.at = append(l.at, time.Now())
	l.status = append(l.status, status)
	l.mu.Unlock()
}

func (l *hitLog) times() []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Time(nil), l.at...)
}

// circuitOpenAt tells a breaker's 503 naming key, with Retry-After.
func circuitOpenAt(r reply, key string) bool {
	cs := r.cacheStatus()
	return r.status == http.StatusServiceUnavailable && cs.params["detail"] == "circuit-open" &&
		cs.params["key"] == key && r.header.Get("Retry-After") != ""
}

// breakerRoute is the route /br through a Weir middleware whose breaker has settings b.
func breakerRoute(t *testing.T, b map[string]interface{}) Dynamic {
	conf := specConfig(t)
	conf["breaker"] = b
	return cachedRoute("br", "/br", "weir-br", conf)
}

// shopHost is the Host of every request of these tests: the breakers' scope key.
var shopHost = map[string]string{"Host": "shop.example.com"}

// TestBreakerObeysRetryAfter: an origin answering 429 with Retry-After: 3 gets no request for
// 3 seconds, clients get 503 naming the host with the time left, and then one probe goes,
// whose success lets requests through again.
func TestBreakerObeysRetryAfter(t *testing.T) {
	o := newOrigin(t)
	hits := &hitLog{}
	var refused int32
	o.Handle("/br/ra", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if atomic.CompareAndSwapInt32(&refused, 0, 1) {
			hits.add(429)
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, "slow down")
			return
		}
		hits.add(200)
		io.WriteString(w, "ok")
	})
	tr := startTraefik(t, o, breakerRoute(t, map[string]interface{}{"openFor": "1s", "maxOpenFor": "10s"}))

	if r := send(t, tr, "GET", "/br/ra?i=0", shopHost); r.status != http.StatusTooManyRequests {
		t.Fatalf("first request: %d %q, want the origin's 429", r.status, r.body)
	}
	begin := time.Now()
	var refusals, oks int
	var firstOK time.Duration = -1
	for i := 1; time.Since(begin) < 5*time.Second; i++ {
		sent := time.Since(begin)
		r := send(t, tr, "GET", "/br/ra?i="+strconv.Itoa(i), shopHost)
		switch {
		case circuitOpenAt(r, "shop.example.com"):
			refusals++
			ra, _ := strconv.Atoi(r.header.Get("Retry-After"))
			// The origin's 3s, up to 20% longer (the jitter), rounded up to whole seconds.
			if ra < 1 || ra > 4 {
				t.Errorf("refusal at %v: Retry-After %q, want 1 to 4", sent.Round(time.Millisecond), r.header.Get("Retry-After"))
			}
		case r.status == http.StatusOK:
			oks++
			if firstOK < 0 {
				firstOK = sent
			}
		default:
			t.Errorf("request at %v: %d %q, want 503 circuit-open naming shop.example.com or 200",
				sent.Round(time.Millisecond), r.status, r.cacheStatus())
		}
		if firstOK < 0 && sent > 2500*time.Millisecond && r.status == http.StatusOK {
			t.Errorf("request at %v reached the origin within its Retry-After", sent.Round(time.Millisecond))
		}
		time.Sleep(50 * time.Millisecond)
	}
	at := hits.times()
	t.Logf("%d refusals, %d answers from the origin; the origin's hits after its 429: %d", refusals, oks, len(at)-1)
	if len(at) < 2 {
		t.Fatalf("the origin saw no request after its 429: no probe")
	}
	gap := at[1].Sub(at[0])
	t.Logf("first request after the 429 reached the origin %v after it (Retry-After: 3)", gap.Round(time.Millisecond))
	if gap < 3*time.Second-10*time.Millisecond || gap > 4*time.Second {
		t.Errorf("the probe reached the origin %v after its 429, want 3s to 4s", gap.Round(time.Millisecond))
	}
	if refusals == 0 || oks == 0 {
		t.Errorf("%d refusals and %d answers, want both", refusals, oks)
	}
}

// TestBreakerStopsSlowOrigin: an origin slowed to 1s, with breaker.slowCall 200ms, is
// stopped once slowCallRatio of minRequests calls were slow, though every one succeeded.
func TestBreakerStopsSlowOrigin(t *testing.T) {
	o := newOrigin(t)
	o.Handle("/br/slow", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Second)
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, "late")
	})
	tr := startTraefik(t, o, breakerRoute(t, map[string]interface{}{
		"slowCall": "200ms", "slowCallRatio": "0.5", "minRequests": "6", "window": "10s", "openFor": "5s",
	}))
	const slow = 8
	var wg sync.WaitGroup
	replies := make([]reply, slow)
	for i := 0; i < slow; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r, err := fetch(context.Background(), tr.Client(), requestTimeout, "GET", tr.URL("/br/slow?i="+strconv.Itoa(i)), shopHost)
			if err != nil {
				t.Errorf("slow request %d: %v", i, err)
			}
			replies[i] = r
		}(i)
	}
	wg.Wait()
	for i, r := range replies {
		if r.status != http.StatusOK {
			t.Errorf("slow request %d: %d, want the origin's 200 after 1s", i, r.status)
		}
	}
	before := o.Count("/br/slow")
	for i := 0; i < 5; i++ {
		r := send(t, tr, "GET", "/br/slow?after="+strconv.Itoa(i), shopHost)
		if !circuitOpenAt(r, "shop.example.com") || r.took > 500*time.Millisecond {
			t.Errorf("request %d after %d slow calls: %d %q in %v, want a fast 503 circuit-open naming shop.example.com",
				i, slow, r.status, r.cacheStatus(), r.took.Round(time.Millisecond))
		}
	}
	if got := o.Count("/br/slow"); got != before {
		t.Errorf("the origin saw %d requests after the breaker opened, want none", got-before)
	}
	if log := tr.LogTail(200); !strings.Contains(log, "reason=slow-calls") {
		t.Errorf("no breaker_opened event with reason=slow-calls in Traefik's log")
	}
	t.Logf("%d slow calls of 1s each (slowCall 200ms): the next 5 requests refused at once", slow)
}

// TestBreakerClosesAfterThreeProbes: with breaker.probes 3 and probeInterval 1s, a breaker
// over a recovered origin lets three probes through about a second apart (±20%), refuses
// the requests between them, and closes only after the third.
func TestBreakerClosesAfterThreeProbes(t *testing.T) {
	o := newOrigin(t)
	var healthy int32
	hits := &hitLog{}
	o.Handle("/br/p", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if atomic.LoadInt32(&healthy) == 0 {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		hits.add(200)
		io.WriteString(w, "ok")
	})
	tr := startTraefik(t, o, breakerRoute(t, map[string]interface{}{
		"probes": "3", "probeInterval": "1s", "minRequests": "5", "openFor": "1s", "maxOpenFor": "4s",
	}))
	for i := 0; i < 5; i++ {
		send(t, tr, "GET", "/br/p?fail="+strconv.Itoa(i), shopHost)
	}
	if r := send(t, tr, "GET", "/br/p?check", shopHost); !circuitOpenAt(r, "shop.example.com") {
		t.Fatalf("after 5 failures: %d %q, want 503 circuit-open", r.status, r.cacheStatus())
	}
	atomic.StoreInt32(&healthy, 1)
	begin := time.Now()
	type sent struct {
		at   time.Duration
		open bool
		ok   bool
	}
	var log []sent
	for i := 0; time.Since(begin) < 6*time.Second; i++ {
		at := time.Since(begin)
		r := send(t, tr, "GET", "/br/p?i="+strconv.Itoa(i), shopHost)
		log = append(log, sent{at: at, open: circuitOpenAt(r, "shop.example.com"), ok: r.status == http.StatusOK})
		time.Sleep(40 * time.Millisecond)
	}
	at := hits.times()
	if len(at) < 4 {
		t.Fatalf("the origin saw %d requests after it recovered, want three probes and then traffic", len(at))
	}
	var gaps []string
	for i := 1; i < 3; i++ {
		gap := at[i].Sub(at[i-1])
		gaps = append(gaps, gap.Round(time.Millisecond).String())
		if gap < 750*time.Millisecond || gap > 1500*time.Millisecond {
			t.Errorf("probes %d and %d reached the origin %v apart, want probeInterval 1s ±20%%", i, i+1, gap.Round(time.Millisecond))
		}
	}
	third := at[2].Sub(begin)
	// Between the first probe and the third, the origin answers one request only: the
	// second probe.
	var between, betweenOK, after, afterOK int
	for _, s := range log {
		switch {
		case s.at > at[0].Sub(begin)+50*time.Millisecond && s.at < third-50*time.Millisecond:
			if s.ok {
				betweenOK++
			}
			if s.open {
				between++
			}
		case s.at > third+100*time.Millisecond:
			after++
			if s.ok {
				afterOK++
			}
		}
	}
	t.Logf("probes %v apart; %d requests refused between them; after the third, %d of %d answered by the origin",
		gaps, between, afterOK, after)
	if between == 0 || betweenOK != 1 {
		t.Errorf("between the first and the third probe: %d requests refused, %d answered by the origin; want refusals and one answer, the second probe",
			between, betweenOK)
	}
	if after == 0 || afterOK != after {
		t.Errorf("after the third probe %d of %d requests answered by the origin, want all", afterOK, after)
	}
}

// TestBreakerPathsBulkhead: with breaker.paths, a failing /br/search opens its own breaker;
// /br/checkout on the same host keeps flowing.
func TestBreakerPathsBulkhead(t *testing.T) {
	o := newOrigin(t)
	o.Handle("/br/search", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	o.Handle("/br/checkout", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, "paid")
	})
	tr := startTraefik(t, o, breakerRoute(t, map[string]interface{}{
		"paths": "/br/search,/br/checkout", "minRequests": "5", "openFor": "10s",
	}))
	for i := 0; i < 5; i++ {
		send(t, tr, "GET", fmt.Sprintf("/br/search?q=%d", i), shopHost)
	}
	searched := o.Count("/br/search")
	r := send(t, tr, "GET", "/br/search?q=next", shopHost)
	if !circuitOpenAt(r, "shop.example.com/br/search") {
		t.Errorf("/br/search after 5 failures: %d %q, want 503 circuit-open naming shop.example.com/br/search", r.status, r.cacheStatus())
	}
	var statuses []int
	for i := 0; i < 20; i++ {
		r := send(t, tr, "GET", fmt.Sprintf("/br/checkout?order=%d", i), shopHost)
		statuses = append(statuses, r.status)
		if r.status != http.StatusOK || r.body != "paid" {
			t.Errorf("/br/checkout %d with /br/search open: %d %q %q, want the origin's 200", i, r.status, r.body, r.cacheStatus())
		}
	}
	if got := o.Count("/br/checkout"); got != 20 {
		t.Errorf("the origin saw %d /br/checkout requests, want 20", got)
	}
	if got := o.Count("/br/search"); got != searched {
		t.Errorf("the origin saw %d /br/search requests after its breaker opened, want none", got-searched)
	}
	sort.Ints(statuses)
	t.Logf("/br/search open (Cache-Status %q); 20 /br/checkout requests: statuses from %d to %d", r.cacheStatus(),
		statuses[0], statuses[len(statuses)-1])
}
