package breaker

import (
	"testing"
	"time"

	"github.com/weirproxy/weir/internal/await"
)

func TestOpensOnMinRequestsAndRatio(t *testing.T) {
	tests := []struct {
		desc     string
		ok       int
		failures int
		want     int
	}{
		{desc: "19 failures are under the floor", failures: 19, want: StateClosed},
		{desc: "20 failures open", failures: 20, want: StateOpen},
		{desc: "half failed opens", ok: 10, failures: 10, want: StateOpen},
		{desc: "45 percent failed stays closed", ok: 11, failures: 9, want: StateClosed},
		{desc: "40 percent of 50 stays closed", ok: 30, failures: 20, want: StateClosed},
		{desc: "successes alone never open", ok: 100, want: StateClosed},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			b := newTestBreaker(t, Settings{})
			feed(t, b, tc.ok, false, t0)
			feed(t, b, tc.failures, true, t0)
			wantState(t, b, t0, tc.want)
		})
	}
}

func TestWindowForgetsOldResults(t *testing.T) {
	b := newTestBreaker(t, Settings{})
	feed(t, b, 19, true, t0)
	feed(t, b, 1, true, t0.Add(10*time.Second))
	wantState(t, b, t0.Add(10*time.Second), StateClosed)
	if st := b.Status(t0.Add(10 * time.Second)); st.Failures != 1 {
		t.Errorf("Status().Failures = %d, want 1: results older than the window count", st.Failures)
	}

	b = newTestBreaker(t, Settings{})
	feed(t, b, 19, true, t0)
	feed(t, b, 1, true, t0.Add(9*time.Second))
	wantState(t, b, t0.Add(9*time.Second), StateOpen)
}

func TestOpenDeniesWithTimeLeft(t *testing.T) {
	b := newTestBreaker(t, Settings{})
	tripAt(t, b, t0)
	p := b.Allow(t0.Add(2 * time.Second))
	if p.Allowed || p.Probe || p.RetryAfter != 3*time.Second {
		t.Errorf("Allow() while open = %+v, want denied with RetryAfter 3s", p)
	}
	if st := b.Status(t0); !st.OpenUntil.Equal(t0.Add(5*time.Second)) || st.Trips != 1 || st.Key != "k" {
		t.Errorf("Status() = %+v, want key k, OpenUntil t0+5s, 1 trip", st)
	}
}

func TestOpenPeriodIsJittered(t *testing.T) {
	tests := []struct {
		desc string
		r    float64
		want time.Duration
	}{
		{desc: "lowest draw", r: 0, want: 4 * time.Second},
		{desc: "quarter", r: 0.25, want: 4500 * time.Millisecond},
		{desc: "middle", r: 0.5, want: 5 * time.Second},
		{desc: "three quarters", r: 0.75, want: 5500 * time.Millisecond},
		{desc: "out of range draw is clamped", r: 7, want: 6 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			b := newTestBreaker(t, Settings{Rand: fixedRand(tc.r)})
			tripAt(t, b, t0)
			if got := b.Status(t0).OpenUntil.Sub(t0); !near(got, tc.want) {
				t.Errorf("open for %v, want %v", got, tc.want)
			}
		})
	}
}

func TestHalfOpenLetsOneProbe(t *testing.T) {
	b := newTestBreaker(t, Settings{})
	tripAt(t, b, t0)
	deadline := t0.Add(5 * time.Second)
	wantState(t, b, deadline.Add(-time.Nanosecond), StateOpen)
	wantState(t, b, deadline, StateHalfOpen)

	probe := b.Allow(deadline)
	if !probe.Allowed || !probe.Probe {
		t.Fatalf("first Allow() after the deadline = %+v, want a probe", probe)
	}
	for i := 0; i < 3; i++ {
		if p := b.Allow(deadline.Add(time.Second)); p.Allowed || p.RetryAfter != ProbeRetryAfter {
			t.Fatalf("Allow() while the probe is out = %+v, want denied with RetryAfter %v", p, ProbeRetryAfter)
		}
	}
	wantState(t, b, deadline.Add(time.Second), StateHalfOpen)

	b.Record(probe, 200, false, deadline.Add(2*time.Second))
	wantState(t, b, deadline.Add(2*time.Second), StateClosed)
	st := b.Status(deadline.Add(2 * time.Second))
	if st.OK != 0 || st.Failures != 0 || !st.OpenUntil.IsZero() {
		t.Errorf("Status() after the probe succeeded = %+v, want counts cleared and no deadline", st)
	}
	// The failures that opened it are gone: it takes a fresh 20 to open again.
	feed(t, b, 19, true, deadline.Add(2*time.Second))
	wantState(t, b, deadline.Add(2*time.Second), StateClosed)
	if p := b.Allow(deadline.Add(2 * time.Second)); !p.Allowed || p.Probe {
		t.Errorf("Allow() after closing = %+v, want an ordinary allowed permit", p)
	}
}

func TestFailedProbeDoublesOpenPeriodUpToCap(t *testing.T) {
	var trips []time.Time
	b := newTestBreaker(t, Settings{OnTrip: func(key string, until time.Time) { trips = append(trips, until) }})
	tripAt(t, b, t0)
	now := b.Status(t0).OpenUntil
	wants := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 60 * time.Second, 60 * time.Second}
	for i, want := range wants {
		p := b.Allow(now)
		if !p.Probe {
			t.Fatalf("probe %d: Allow() = %+v, want a probe", i+1, p)
		}
		b.Record(p, 503, true, now)
		until := b.Status(now).OpenUntil
		if got := until.Sub(now); got != want {
			t.Fatalf("after failed probe %d open for %v, want %v", i+1, got, want)
		}
		wantState(t, b, now, StateOpen)
		now = until
	}
	if st := b.Status(now); st.Trips != 6 || len(trips) != 6 {
		t.Errorf("Trips = %d, OnTrip calls = %d, want 6 and 6", st.Trips, len(trips))
	}
}

func TestJitterAtCapStaysUnderMax(t *testing.T) {
	for _, r := range []float64{0, 0.25, 0.5, 0.75, 0.999} {
		b := newTestBreaker(t, Settings{OpenFor: 60 * time.Second, Rand: fixedRand(r)})
		tripAt(t, b, t0)
		got := b.Status(t0).OpenUntil.Sub(t0)
		if got > 60*time.Second || got < 48*time.Second {
			t.Errorf("r=%v: open for %v, want between 48s and 60s", r, got)
		}
	}
}

func TestTripIsIdempotent(t *testing.T) {
	calls := 0
	draws := 0.0
	b := newTestBreaker(t, Settings{
		OnTrip: func(key string, until time.Time) { calls++ },
		// Each draw differs, so a second trip would move the deadline.
		Rand: func() float64 { draws += 0.01; return draws },
	})
	permits := make([]Permit, 30)
	for i := range permits {
		permits[i] = b.Allow(t0)
	}
	for i := 0; i < 20; i++ {
		b.Record(permits[i], 503, true, t0)
	}
	until := b.Status(t0).OpenUntil
	for i := 20; i < 30; i++ {
		b.Record(permits[i], 503, true, t0.Add(time.Second))
	}
	st := b.Status(t0.Add(time.Second))
	if !st.OpenUntil.Equal(until) || st.Trips != 1 || calls != 1 {
		t.Errorf("after late failures: OpenUntil moved by %v, Trips = %d, OnTrip calls = %d; want 0, 1, 1",
			st.OpenUntil.Sub(until), st.Trips, calls)
	}
}

// lateAndProbe returns a breaker tripped at t0 with a permit taken before the trip, whose
// result comes late, and the probe's permit taken five seconds after it.
func lateAndProbe(t *testing.T) (b *Breaker, late, probe Permit) {
	t.Helper()
	b = newTestBreaker(t, Settings{})
	late = b.Allow(t0)
	tripAt(t, b, t0)
	return b, late, b.Allow(t0.Add(5 * time.Second))
}

func TestLateResultsAreIgnored(t *testing.T) {
	t.Run("late failure after close", func(t *testing.T) {
		b, late, probe := lateAndProbe(t)
		b.Record(probe, 200, false, t0.Add(5*time.Second))
		b.Record(late, 503, true, t0.Add(6*time.Second))
		if st := b.Status(t0.Add(6 * time.Second)); st.Failures != 0 {
			t.Errorf("Status().Failures = %d, want 0: a late failure counted", st.Failures)
		}
	})
	t.Run("late success while half-open", func(t *testing.T) {
		b, late, probe := lateAndProbe(t)
		b.Record(late, 200, false, t0.Add(6*time.Second))
		wantState(t, b, t0.Add(6*time.Second), StateHalfOpen)
		b.Record(probe, 503, true, t0.Add(6*time.Second))
		wantState(t, b, t0.Add(6*time.Second), StateOpen)
	})
	t.Run("a result recorded twice counts once", func(t *testing.T) {
		b := newTestBreaker(t, Settings{})
		tripAt(t, b, t0)
		probe := b.Allow(t0.Add(5 * time.Second))
		b.Record(probe, 503, true, t0.Add(5*time.Second))
		until := b.Status(t0).OpenUntil
		b.Record(probe, 503, true, t0.Add(6*time.Second))
		if got := b.Status(t0).OpenUntil; !got.Equal(until) {
			t.Errorf("OpenUntil moved from %v to %v on a repeated probe result", until, got)
		}
	})
	t.Run("denied permit", func(t *testing.T) {
		b := newTestBreaker(t, Settings{})
		tripAt(t, b, t0)
		denied := b.Allow(t0)
		b.Record(denied, 200, false, t0)
		b.Release(denied, t0)
		wantState(t, b, t0, StateOpen)
	})
}

func TestProbeTimeoutLetsAnotherProbe(t *testing.T) {
	b := newTestBreaker(t, Settings{ProbeTimeout: 10 * time.Second})
	tripAt(t, b, t0)
	first := b.Allow(t0.Add(5 * time.Second))
	if !first.Probe {
		t.Fatalf("Allow() = %+v, want a probe", first)
	}
	if p := b.Allow(t0.Add(15*time.Second - time.Nanosecond)); p.Allowed {
		t.Fatalf("Allow() before the probe timeout = %+v, want denied", p)
	}
	second := b.Allow(t0.Add(15 * time.Second))
	if !second.Probe {
		t.Fatalf("Allow() at the probe timeout = %+v, want another probe", second)
	}
	b.Record(first, 200, false, t0.Add(16*time.Second))
	wantState(t, b, t0.Add(16*time.Second), StateHalfOpen)
	b.Record(second, 200, false, t0.Add(16*time.Second))
	wantState(t, b, t0.Add(16*time.Second), StateClosed)
}

func TestReleasedProbeLetsAnother(t *testing.T) {
	b := newTestBreaker(t, Settings{})
	tripAt(t, b, t0)
	now := t0.Add(5 * time.Second)
	first := b.Allow(now)
	b.Release(first, now)
	second := b.Allow(now)
	if !second.Probe {
		t.Fatalf("Allow() after the probe was released = %+v, want another probe", second)
	}
	// Releasing the first again must not free the second's place.
	b.Release(first, now)
	if p := b.Allow(now); p.Allowed {
		t.Fatalf("Allow() with the second probe out = %+v, want denied", p)
	}
	b.Record(second, 200, false, now)
	wantState(t, b, now, StateClosed)
}

func TestReleaseCountsNothing(t *testing.T) {
	b := newTestBreaker(t, Settings{})
	for i := 0; i < 30; i++ {
		b.Release(b.Allow(t0), t0)
	}
	if st := b.Status(t0); st.OK != 0 || st.Failures != 0 {
		t.Errorf("Status() after releases = %+v, want no counts", st)
	}
}

func TestForceOpenAndClose(t *testing.T) {
	var got []time.Time
	b := newTestBreaker(t, Settings{OnTrip: func(key string, until time.Time) { got = append(got, until) }})

	b.ForceOpen(t0, 30*time.Second)
	if p := b.Allow(t0.Add(10 * time.Second)); p.Allowed || p.RetryAfter != 20*time.Second {
		t.Errorf("Allow() after ForceOpen = %+v, want denied with RetryAfter 20s", p)
	}
	if len(got) != 1 || !got[0].Equal(t0.Add(30*time.Second)) {
		t.Errorf("OnTrip deadlines = %v, want [t0+30s]", got)
	}
	wantState(t, b, t0.Add(30*time.Second), StateHalfOpen)

	b.ForceClose(t0.Add(11 * time.Second))
	wantState(t, b, t0.Add(11*time.Second), StateClosed)

	b.ForceOpen(t0, 0)
	if until := b.Status(t0).OpenUntil; !until.Equal(t0.Add(DefaultOpenFor)) {
		t.Errorf("ForceOpen(0) deadline = t0+%v, want t0+%v", until.Sub(t0), DefaultOpenFor)
	}

	// Closing clears the counts: the failures that opened it cannot reopen it at once.
	b = newTestBreaker(t, Settings{})
	inFlight := b.Allow(t0)
	tripAt(t, b, t0)
	b.ForceClose(t0)
	b.Record(inFlight, 503, true, t0)
	feed(t, b, 1, true, t0)
	wantState(t, b, t0, StateClosed)
	if st := b.Status(t0); st.Failures != 1 {
		t.Errorf("Status().Failures after ForceClose = %d, want 1", st.Failures)
	}
}

func TestObserveAdoptsLaterDeadlines(t *testing.T) {
	calls := 0
	b := newTestBreaker(t, Settings{OnTrip: func(string, time.Time) { calls++ }})
	inFlight := b.Allow(t0)

	if b.Observe(t0.Add(-time.Second), t0) {
		t.Errorf("Observe(past deadline) = true, want false")
	}
	if !b.Observe(t0.Add(8*time.Second), t0) {
		t.Fatalf("Observe(t0+8s) on a closed breaker = false, want true")
	}
	if p := b.Allow(t0.Add(time.Second)); p.Allowed || p.RetryAfter != 7*time.Second {
		t.Errorf("Allow() after Observe = %+v, want denied with RetryAfter 7s", p)
	}
	if b.Observe(t0.Add(6*time.Second), t0.Add(time.Second)) {
		t.Errorf("Observe(earlier deadline) = true, want false")
	}
	if !b.Observe(t0.Add(12*time.Second), t0.Add(time.Second)) {
		t.Errorf("Observe(later deadline) = false, want true")
	}
	if until := b.Status(t0).OpenUntil; !until.Equal(t0.Add(12 * time.Second)) {
		t.Errorf("OpenUntil = t0+%v, want t0+12s", until.Sub(t0))
	}
	// A fetch from before the adoption is late and cannot touch the breaker.
	b.Record(inFlight, 200, false, t0.Add(13*time.Second))
	wantState(t, b, t0.Add(13*time.Second), StateHalfOpen)
	if calls != 0 {
		t.Errorf("OnTrip called %d times for adopted deadlines, want 0", calls)
	}

	// A half-open breaker whose probe is out adopts a remote deadline; the probe is then late.
	probe := b.Allow(t0.Add(13 * time.Second))
	if !b.Observe(t0.Add(20*time.Second), t0.Add(13*time.Second)) {
		t.Fatalf("Observe() while half-open = false, want true")
	}
	b.Record(probe, 200, false, t0.Add(14*time.Second))
	wantState(t, b, t0.Add(14*time.Second), StateOpen)
}

func TestOnTripRunsOutsideTheLock(t *testing.T) {
	done := make(chan int, 1)
	var b *Breaker
	b = newTestBreaker(t, Settings{OnTrip: func(key string, until time.Time) {
		done <- b.State(until.Add(-time.Nanosecond))
	}})
	go func() {
		for i := 0; i < DefaultMinRequests; i++ {
			b.Record(b.Allow(t0), 503, true, t0)
		}
	}()
	select {
	case st := <-done:
		if st != StateOpen {
			t.Errorf("State() seen from OnTrip = %s, want open", StateName(st))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("OnTrip hangs: it was called while holding the breaker's lock")
	}
}

func TestConcurrentUse(t *testing.T) {
	b := newTestBreaker(t, Settings{MinRequests: 5})
	await.Goroutines(t, 8, 10*time.Second, "concurrent Allow and Record", func(g int) {
		for i := 0; i < 200; i++ {
			now := t0.Add(time.Duration(i) * 100 * time.Millisecond)
			p := b.Allow(now)
			switch {
			case !p.Allowed:
			case (g+i)%5 == 0:
				b.Release(p, now)
			default:
				b.Record(p, 503, (g+i)%2 == 0, now)
			}
			b.Status(now)
		}
	})
}

func TestAllowOnClosedBreakerDoesNotAllocate(t *testing.T) {
	if interpreted() {
		t.Skip("allocation counts measure the interpreter under Yaegi")
	}
	b := newTestBreaker(t, Settings{})
	allocs := testing.AllocsPerRun(100, func() {
		p := b.Allow(t0)
		b.Record(p, 200, false, t0)
	})
	if allocs != 0 {
		t.Errorf("Allow and Record on a closed breaker allocate %v times, want 0", allocs)
	}
}

func TestStateName(t *testing.T) {
	for state, want := range map[int]string{StateClosed: "closed", StateOpen: "open", StateHalfOpen: "half-open", 9: "unknown"} {
		if got := StateName(state); got != want {
			t.Errorf("StateName(%d) = %q, want %q", state, got, want)
		}
	}
}

// BenchmarkAllow measures the check in front of every origin fetch on a closed breaker.
func BenchmarkAllow(b *testing.B) {
	br, err := New("k", Settings{})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		br.Allow(t0)
	}
}

// BenchmarkAllowRecord measures a whole fetch's worth of breaker work on a closed breaker.
func BenchmarkAllowRecord(b *testing.B) {
	br, err := New("k", Settings{})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		p := br.Allow(t0)
		br.Record(p, 200, false, t0)
	}
}

// A deadline read in the background is adopted only if the breaker did not change while it
// was read: an operator's close must not be undone by a read already under way.
func TestObserveAtIgnoresLateReadings(t *testing.T) {
	b := newTestBreaker(t, Settings{})
	b.ForceOpen(t0, 30*time.Second)
	gen := b.Generation()
	b.ForceClose(t0.Add(time.Second))
	if got := b.ObserveAt(gen, t0.Add(30*time.Second), t0.Add(time.Second)); !got.IsZero() {
		t.Errorf("ObserveAt with a generation from before ForceClose = %v, want nothing adopted", got)
	}
	wantState(t, b, t0.Add(time.Second), StateClosed)

	if got := b.ObserveAt(b.Generation(), t0.Add(30*time.Second), t0.Add(time.Second)); !got.Equal(t0.Add(30 * time.Second)) {
		t.Errorf("ObserveAt with the current generation = %v, want t0+30s adopted", got)
	}
	wantState(t, b, t0.Add(time.Second), StateOpen)
}

// A shared deadline further than MaxOpenFor away (a clock ahead, a corrupt value) opens the
// breaker for MaxOpenFor at most, once: read again, as it is every few hundred milliseconds,
// it does not push the deadline on.
func TestObserveCapsAFarDeadline(t *testing.T) {
	b := newTestBreaker(t, Settings{MaxOpenFor: time.Minute})
	yearAhead := t0.Add(365 * 24 * time.Hour)
	steps := []struct {
		desc      string
		deadline  time.Time
		at        time.Time
		want      time.Time // adopted; zero: none
		wantUntil time.Time
	}{
		{desc: "a year ahead, adopted capped", deadline: yearAhead, at: t0, want: t0.Add(time.Minute), wantUntil: t0.Add(time.Minute)},
		{desc: "read again while open", deadline: yearAhead, at: t0.Add(30 * time.Second), wantUntil: t0.Add(time.Minute)},
		{desc: "read again once half-open", deadline: yearAhead, at: t0.Add(61 * time.Second), wantUntil: t0.Add(time.Minute)},
		{desc: "within the cap, adopted whole", deadline: t0.Add(90 * time.Second), at: t0.Add(62 * time.Second), want: t0.Add(90 * time.Second), wantUntil: t0.Add(90 * time.Second)},
		{desc: "another far deadline, adopted capped", deadline: yearAhead.Add(time.Second), at: t0.Add(70 * time.Second), want: t0.Add(130 * time.Second), wantUntil: t0.Add(130 * time.Second)},
	}
	for _, st := range steps {
		got := b.ObserveAt(b.Generation(), st.deadline, st.at)
		if !got.Equal(st.want) {
			t.Errorf("%s: ObserveAt(t0+%v) at t0+%v adopted %v, want %v", st.desc, st.deadline.Sub(t0), st.at.Sub(t0), got, st.want)
		}
		if until := b.Status(st.at).OpenUntil; !until.Equal(st.wantUntil) {
			t.Errorf("%s: OpenUntil = t0+%v, want t0+%v", st.desc, until.Sub(t0), st.wantUntil.Sub(t0))
		}
	}
	wantState(t, b, t0.Add(130*time.Second-time.Nanosecond), StateOpen)
	wantState(t, b, t0.Add(130*time.Second), StateHalfOpen)

	g, err := NewGroup(Settings{MaxOpenFor: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if !g.Observe("far", yearAhead, t0) {
		t.Fatalf("Group.Observe of a far deadline = false, want adopted capped")
	}
	gb, _ := g.Lookup("far")
	if until := gb.Status(t0).OpenUntil; !until.Equal(t0.Add(time.Minute)) {
		t.Errorf("Group.Observe: OpenUntil = t0+%v, want t0+1m", until.Sub(t0))
	}
}
