package core

import (
	"net/http"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/breaker"
	"github.com/weirproxy/weir/core/budget"
	"github.com/weirproxy/weir/core/limit"
	"github.com/weirproxy/weir/internal/clocktest"
)

// paceTimer is one wait of a paced request, armed through the limiter's AfterFunc.
type paceTimer struct {
	d    time.Duration
	fire func()
}

// pacedHandler is a handler pacing feeds.example (and its subdomains) at 3/10s, with the
// limiter's maxQueueWait of 7s, its clock and its timers in the test's hands.
func pacedHandler(t *testing.T, o http.Handler) (*Handler, *clocktest.Clock, chan paceTimer) {
	t.Helper()
	clock := newFakeClock()
	armed := make(chan paceTimer, 8)
	after := func(d time.Duration, f func()) func() bool {
		armed <- paceTimer{d: d, fire: f}
		return func() bool { return false }
	}
	s := Settings{Now: clock.Now, Log: discardLog,
		Limiter: limit.Settings{MaxQueueWait: 7 * time.Second, AfterFunc: after},
		Pacing:  []Pace{{Name: "feeds.example", Rate: budget.Rate{N: 3, Per: 10 * time.Second}}},
	}
	return newTestHandler(t, s, o), clock, armed
}

// nextTimer is the wait the next paced request armed.
func nextTimer(t *testing.T, armed chan paceTimer) paceTimer {
	t.Helper()
	select {
	case pt := <-armed:
		return pt
	case <-time.After(testWait):
		t.Fatal("hangs: no paced request armed a timer")
	}
	return paceTimer{}
}

// TestPacingSpaces: requests for a paced host go one every 10s/3, each waiting for its
// turn; one whose turn lies past maxQueueWait gets 503 with Retry-After and detail=paced;
// other hosts never wait.
func TestPacingSpaces(t *testing.T) {
	o := countingOrigin(t, []string{"Cache-Control", "no-store"})
	h, clock, armed := pacedHandler(t, o)
	step := 10 * time.Second / 3

	wantCode(t, "first, at once", do(t, h, "GET", "http://www.feeds.example/a"), 200)
	second := serveAsync(h, newRequest("GET", "http://feeds.example/b"))
	if pt := nextTimer(t, armed); pt.d != step {
		t.Fatalf("second request waits %s, want %s", pt.d, step)
	} else {
		wantCalls(t, o, 1)
		pt.fire()
	}
	wantCode(t, "second, after its turn", awaitAnswer(t, second), 200)
	third := serveAsync(h, newRequest("GET", "http://feeds.example/c"))
	thirdTimer := nextTimer(t, armed)
	if thirdTimer.d != 2*step {
		t.Fatalf("third request waits %s, want %s", thirdTimer.d, 2*step)
	}
	w := do(t, h, "GET", "http://feeds.example/d")
	wantCode(t, "fourth, its turn past maxQueueWait", w, 503)
	if got, want := w.Header().Get("Cache-Status"), "Weir; fwd=uri-miss; detail=paced"; got != want {
		t.Errorf("Cache-Status %q, want %q", got, want)
	}
	if got := w.Header().Get("Retry-After"); got != "3" {
		t.Errorf("Retry-After %q, want 3 (its turn 10s away less the 7s it may wait)", got)
	}
	wantCode(t, "another host", do(t, h, "GET", "http://other.example/x"), 200)
	thirdTimer.fire()
	wantCode(t, "third, after its turn", awaitAnswer(t, third), 200)
	if got := h.e.metrics.shed[shedIndex(t, reasonPaced.name)].N; got != 1 {
		t.Errorf("shed paced counted %d, want 1", got)
	}
	clock.Add(10 * time.Second)
	wantCode(t, "after a quiet period, at once", do(t, h, "GET", "http://feeds.example/e"), 200)
}

// TestPacingThenQueueWithinBound: a paced request that waited its turn and then finds no
// origin slot free queues for what is left of limiter.maxQueueWait, so that the two waits
// together stay within it.
func TestPacingThenQueueWithinBound(t *testing.T) {
	o := countingOrigin(t, []string{"Cache-Control", "no-store"})
	o.hold(1)
	h, _, armed := pacedHandler(t, o)
	if err := h.e.limiter.Update(limit.Settings{MaxConcurrent: 1, MaxQueueWait: 7 * time.Second, AfterFunc: h.s.Limiter.AfterFunc}); err != nil {
		t.Fatalf("limiter update: %v", err)
	}
	step := 10 * time.Second / 3

	first := serveAsync(h, newRequest("GET", "http://feeds.example/a"))
	o.waitEntered(t, 1)
	second := serveAsync(h, newRequest("GET", "http://feeds.example/b"))
	turn := nextTimer(t, armed)
	if turn.d != step {
		t.Fatalf("second request waits %s for its turn, want %s", turn.d, step)
	}
	turn.fire()
	queued := nextTimer(t, armed)
	if want := 7*time.Second - step; queued.d != want {
		t.Errorf("second request queues for a slot up to %s, want %s (maxQueueWait less its paced wait)", queued.d, want)
	}
	o.release(1)
	wantCode(t, "first", awaitAnswer(t, first), 200)
	wantCode(t, "second, its turn and then a slot", awaitAnswer(t, second), 200)
}

// TestPacingNotAFailure: paced waits and refusals count toward no breaker: however many
// requests are refused their turn, the breaker stays closed.
func TestPacingNotAFailure(t *testing.T) {
	o := countingOrigin(t, []string{"Cache-Control", "no-store"})
	h, _, armed := pacedHandler(t, o)
	go func() {
		for pt := range armed {
			pt.fire()
		}
	}()
	defer close(armed)
	refused := 0
	for i := 0; i < 40; i++ {
		r := newRequest("GET", "http://feeds.example/x")
		w := serveRequest(t, h, r)
		if w.Code == 503 {
			refused++
		}
	}
	if refused == 0 {
		t.Fatal("no request refused its turn, want some")
	}
	if st := breakerOf(h.e, "feeds.example", "/a", h.s.Now()).State(h.s.Now()); st != breaker.StateClosed {
		t.Errorf("breaker state %v after %d paced refusals, want closed", st, refused)
	}
}

// TestPacingOpenBreakerFirst: an open breaker answers before pacing: no turn is booked and
// no timer armed, and the refusal is the breaker's.
func TestPacingOpenBreakerFirst(t *testing.T) {
	o := countingOrigin(t, []string{"Cache-Control", "no-store"})
	h, clock, armed := pacedHandler(t, o)
	breakerOf(h.e, "feeds.example", "/a", clock.Now()).ForceOpen(clock.Now(), 30*time.Second)
	for i := 0; i < 5; i++ {
		w := do(t, h, "GET", "http://feeds.example/a")
		wantCode(t, "open breaker", w, 503)
		if got := w.Header().Get("Cache-Status"); got != "Weir; fwd=uri-miss; detail=circuit-open; key=feeds.example" {
			t.Errorf("Cache-Status %q, want the breaker's circuit-open", got)
		}
	}
	select {
	case pt := <-armed:
		t.Fatalf("a request behind an open breaker armed a pacing wait of %s", pt.d)
	default:
	}
	breakerOf(h.e, "feeds.example", "/a", clock.Now()).ForceClose(clock.Now())
	wantCode(t, "closed again: the first turn is free", do(t, h, "GET", "http://feeds.example/a"), 200)
}

// TestPaceOf: a host finds its own entry, else its nearest domain's, whatever its case, port
// or final dot.
func TestPaceOf(t *testing.T) {
	p := newPacing()
	err := p.configure([]Pace{
		{Name: "feeds.example.com", Rate: budget.Rate{N: 1, Per: time.Second}},
		{Name: "example.com", Rate: budget.Rate{N: 2, Per: time.Second}},
	}, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	feeds, domain := paces(p).byName["feeds.example.com"], paces(p).byName["example.com"]
	cases := []struct {
		desc string
		host string
		want *budget.Table
	}{
		{desc: "the host", host: "feeds.example.com", want: feeds},
		{desc: "with a port", host: "feeds.example.com:8443", want: feeds},
		{desc: "upper case, final dot", host: "Feeds.Example.COM.", want: feeds},
		{desc: "below the host", host: "a.feeds.example.com", want: feeds},
		{desc: "another host of the domain", host: "www.example.com", want: domain},
		{desc: "the domain", host: "example.com", want: domain},
		{desc: "another domain", host: "example.org", want: nil},
		{desc: "a suffix that is no domain", host: "badexample.com", want: nil},
		{desc: "IPv6 with a port", host: "[2001:db8::1]:80", want: nil},
	}
	for _, c := range cases {
		if got := paceOf(p, c.host); got != c.want {
			t.Errorf("%s: paceOf(%q) = %p, want %p", c.desc, c.host, got, c.want)
		}
	}
}
