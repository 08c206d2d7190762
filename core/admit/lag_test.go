package admit

import (
	"sync/atomic"
	"testing"
	"time"
)

// testWait bounds every wait on the sampler's goroutine.
const testWait = 5 * time.Second

// fakeTicks is a LagSettings.Ticker and Now the test drives: each start hands the test the
// ticker's channel, each stop is reported, and the clock moves only when the test says.
type fakeTicks struct {
	starts chan chan time.Time
	stops  chan struct{}
	now    int64 // nanoseconds since base, atomic
	base   time.Time
}

func newFakeTicks() *fakeTicks {
	return &fakeTicks{
		starts: make(chan chan time.Time, 16),
		stops:  make(chan struct{}, 16),
		base:   time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
}

func (f *fakeTicks) settings() LagSettings {
	return LagSettings{
		Now: func() time.Time { return f.base.Add(time.Duration(atomic.LoadInt64(&f.now))) },
		Ticker: func(every time.Duration) (<-chan time.Time, func()) {
			// Unbuffered: a send returns once the sampler has the tick.
			c := make(chan time.Time)
			f.starts <- c
			return c, func() { f.stops <- struct{}{} }
		},
	}
}

func (f *fakeTicks) clock() time.Time {
	return f.base.Add(time.Duration(atomic.LoadInt64(&f.now)))
}

func (f *fakeTicks) advance(d time.Duration) { atomic.AddInt64(&f.now, int64(d)) }

// started waits for the sampler to start a ticker.
func (f *fakeTicks) started(t *testing.T, what string) chan time.Time {
	t.Helper()
	select {
	case c := <-f.starts:
		return c
	case <-time.After(testWait):
		t.Fatalf("%s: no ticker started: hangs after %v", what, testWait)
		return nil
	}
}

// stopped waits for the sampler to stop its ticker.
func (f *fakeTicks) stopped(t *testing.T, what string) {
	t.Helper()
	select {
	case <-f.stops:
	case <-time.After(testWait):
		t.Fatalf("%s: the ticker is not stopped: hangs after %v", what, testWait)
	}
}

// none fails the test if a ticker was started or stopped that the test did not wait for.
func (f *fakeTicks) none(t *testing.T, what string) {
	t.Helper()
	if n, m := len(f.starts), len(f.stops); n != 0 || m != 0 {
		t.Errorf("%s: %d tickers started and %d stopped unseen, want none", what, n, m)
	}
}

// tickLate delivers a tick late by late on the fake clock (moved on a period and late), and returns once the sampler has
// taken it into its lag: the same tick is sent twice, and taking one tick twice leaves the
// lag as taking it once (decay of a lateness by itself is itself). Only while a request is
// in flight: otherwise the first tick puts the sampler to sleep.
func tickLate(t *testing.T, c chan time.Time, f *fakeTicks, late time.Duration) {
	t.Helper()
	f.advance(LagEvery + late)
	tickAt(t, c, f.clock().Add(-late))
}

// tickAt is tickLate for a tick stamped at.
func tickAt(t *testing.T, c chan time.Time, at time.Time) {
	t.Helper()
	for i := 0; i < 2; i++ {
		select {
		case c <- at:
		case <-time.After(testWait):
			t.Fatalf("tick %d: the sampler takes no tick: hangs after %v", i+1, testWait)
		}
	}
}

// tickIdle delivers one tick on time and waits for the sampler to stop its ticker: nothing
// is in flight. The tick tickLate sent twice may have found nothing in flight already: then
// the ticker stops without another.
func tickIdle(t *testing.T, c chan time.Time, f *fakeTicks, what string) {
	t.Helper()
	f.advance(LagEvery)
	at := f.clock()
	select {
	case c <- at:
		f.stopped(t, what)
	case <-f.stops:
	case <-time.After(testWait):
		t.Fatalf("%s: the sampler takes no tick: hangs after %v", what, testWait)
	}
}

func newSampled(t *testing.T, l *LagSampler) *Controller {
	t.Helper()
	return mustNew(t, Settings{KneeInFlight: 100, LagKnee: time.Second, LagLimit: 2 * time.Second, Sampler: l})
}

func wantLag(t *testing.T, what string, l *LagSampler, want time.Duration) {
	t.Helper()
	if got := l.Lag(); got != want {
		t.Errorf("%s: lag %v, want %v", what, got, want)
	}
}

func wantSleeping(t *testing.T, what string, l *LagSampler, want bool) {
	t.Helper()
	if got := l.Sleeping(); got != want {
		t.Errorf("%s: sleeping %t, want %t", what, got, want)
	}
}

// TestLagSamplerSleepsWhileIdle: acquired, the sampler starts no ticker until a request is in
// flight; the first request wakes it, the first tick that finds nothing in flight puts it
// back to sleep with no lag, and the next request wakes it again.
func TestLagSamplerSleepsWhileIdle(t *testing.T) {
	f := newFakeTicks()
	l := NewLagSampler(f.settings())
	c := newSampled(t, l)
	defer c.Close()
	wantSleeping(t, "acquired, nothing in flight", l, true)

	if v := Enter(c, "a.test", false); v != Admitted {
		t.Fatalf("first request: verdict %d, want Admitted", v)
	}
	ticks := f.started(t, "first request")
	f.none(t, "before the first request")
	wantSleeping(t, "a request in flight", l, false)
	tickLate(t, ticks, f, 3*time.Millisecond)
	wantLag(t, "a tick 3ms late", l, 3*time.Millisecond)

	Leave(c, "a.test")
	tickIdle(t, ticks, f, "nothing in flight")
	wantSleeping(t, "after a tick with nothing in flight", l, true)
	wantLag(t, "asleep", l, 0)

	Enter(c, "a.test", false)
	ticks = f.started(t, "a request after the idle")
	wantSleeping(t, "woken again", l, false)
	Leave(c, "a.test")
	tickIdle(t, ticks, f, "idle again")
	f.none(t, "one ticker per wake")
}

// TestLagSamplerRestartNotInflated: the time asleep is not lag. A minute asleep, then a
// request: the lag reads zero until the first tick, which measures its own lateness only; a
// tick stamped before the wake (a ticker's stale tick) is not taken.
func TestLagSamplerRestartNotInflated(t *testing.T) {
	f := newFakeTicks()
	l := NewLagSampler(f.settings())
	c := newSampled(t, l)
	defer c.Close()
	Enter(c, "a.test", false)
	ticks := f.started(t, "first request")
	tickLate(t, ticks, f, 40*time.Millisecond)
	wantLag(t, "a tick 40ms late", l, 40*time.Millisecond)
	Leave(c, "a.test")
	tickIdle(t, ticks, f, "idle")
	asleepAt := f.clock()

	f.advance(time.Minute)
	Enter(c, "a.test", false)
	ticks = f.started(t, "a request a minute later")
	wantLag(t, "woken, before a tick", l, 0)
	// Stamped when it went to sleep: a minute late by the clock, but from before the wake.
	tickAt(t, ticks, asleepAt)
	wantLag(t, "a tick from before the wake", l, 0)
	tickLate(t, ticks, f, 2*time.Millisecond)
	wantLag(t, "the first tick after the wake, 2ms late", l, 2*time.Millisecond)
	Leave(c, "a.test")
	tickIdle(t, ticks, f, "idle")
}

// TestLagSamplerShared: several Controllers share one sampler: one ticker for all, awake
// while any of them has a request in flight, asleep when none has.
func TestLagSamplerShared(t *testing.T) {
	f := newFakeTicks()
	l := NewLagSampler(f.settings())
	a, b := newSampled(t, l), newSampled(t, l)
	defer a.Close()
	defer b.Close()
	if got := l.Users(); got != 2 {
		t.Errorf("users: %d, want 2", got)
	}
	Enter(a, "a.test", false)
	ticks := f.started(t, "a's request")
	Enter(b, "b.test", false)
	if got := l.InFlight(); got != 2 {
		t.Errorf("in flight through both: %d, want 2", got)
	}
	Leave(a, "a.test")
	tickLate(t, ticks, f, time.Millisecond)
	wantSleeping(t, "b's request still in flight", l, false)
	Leave(b, "b.test")
	tickIdle(t, ticks, f, "neither in flight")
	f.none(t, "one ticker for two controllers")
	wantSleeping(t, "neither in flight", l, true)
}

// TestLagSamplerStoppedByLastClose: the sampler's goroutine runs while a Controller holds
// it; the last Close stops its ticker and ends it, and a Controller built later starts it
// again. Requests in flight through a closed Controller still leave.
func TestLagSamplerStoppedByLastClose(t *testing.T) {
	f := newFakeTicks()
	l := NewLagSampler(f.settings())
	a, b := newSampled(t, l), newSampled(t, l)
	Enter(b, "b.test", false)
	ticks := f.started(t, "b's request")
	tickLate(t, ticks, f, 5*time.Millisecond)
	a.Close()
	a.Close()
	if got := l.Users(); got != 1 {
		t.Errorf("users after a closed twice: %d, want 1", got)
	}
	tickLate(t, ticks, f, 5*time.Millisecond)
	b.Close()
	// Release waits for the goroutine: its ticker is stopped by now.
	select {
	case <-f.stops:
	default:
		t.Errorf("the last Close left the ticker running")
	}
	if got := l.Users(); got != 0 {
		t.Errorf("users after both closed: %d, want 0", got)
	}
	wantSleeping(t, "stopped", l, true)
	wantLag(t, "stopped", l, 0)
	Leave(b, "b.test")
	if got := l.InFlight(); got != 0 {
		t.Errorf("in flight after the last leave: %d, want 0", got)
	}

	c := newSampled(t, l)
	defer c.Close()
	Enter(c, "c.test", false)
	ticks = f.started(t, "a request through a controller built after the stop")
	Leave(c, "c.test")
	tickIdle(t, ticks, f, "idle")
}

// TestLagSamplerLagDecides: the sampler's lag is what Enter reads.
func TestLagSamplerLagDecides(t *testing.T) {
	f := newFakeTicks()
	l := NewLagSampler(f.settings())
	c := mustNew(t, Settings{KneeInFlight: 100, LagKnee: 10 * time.Millisecond, LagLimit: 50 * time.Millisecond, Sampler: l})
	defer c.Close()
	Enter(c, "a.test", false)
	ticks := f.started(t, "first request")
	tickLate(t, ticks, f, 60*time.Millisecond)
	if v := Enter(c, "a.test", false); v != ShedAll {
		t.Errorf("60ms of lag: verdict %d, want ShedAll (%d)", v, ShedAll)
	}
	Leave(c, "a.test")
	tickIdle(t, ticks, f, "idle")
	if v := Enter(c, "a.test", false); v != Admitted {
		t.Errorf("woken after the idle: verdict %d, want Admitted", v)
	}
	ticks = f.started(t, "a request after the idle")
	Leave(c, "a.test")
	tickIdle(t, ticks, f, "idle")
}

// TestProcessLag: the process has one sampler.
func TestProcessLag(t *testing.T) {
	if ProcessLag() != ProcessLag() {
		t.Errorf("ProcessLag returned two samplers")
	}
}

// TestLagSamplerRealTicker: the sampler's own ticker (time.NewTicker) ticks while a request is
// in flight and stops after it. The clock is the real one, read through a Now that reports
// each tick taken.
func TestLagSamplerRealTicker(t *testing.T) {
	read := make(chan struct{}, 64)
	l := NewLagSampler(LagSettings{Every: time.Millisecond, Now: func() time.Time {
		select {
		case read <- struct{}{}:
		default:
		}
		return time.Now()
	}})
	c := newSampled(t, l)
	defer c.Close()
	Enter(c, "a.test", false)
	// The wake's reading, then two ticks' at least.
	for i := 0; i < 3; i++ {
		select {
		case <-read:
		case <-time.After(testWait):
			t.Fatalf("reading %d of the clock: the real ticker does not tick: hangs after %v", i+1, testWait)
		}
	}
	if l.Sleeping() {
		t.Errorf("a request in flight: the sampler sleeps")
	}
	Leave(c, "a.test")
}
