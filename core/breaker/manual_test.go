package breaker

import (
	"sync"
	"testing"
	"time"
)

// wantOpen fails the test unless b is open at now until until, opened by opener, with
// trips trips counted.
func wantOpen(t *testing.T, b *Breaker, now, until time.Time, opener string, trips uint64) {
	t.Helper()
	st := b.Status(now)
	if st.State != StateOpen || !st.OpenUntil.Equal(until) || st.OpenedBy != opener || st.Trips != trips {
		t.Fatalf("Status() = %s until t0+%v by %q, %d trips; want open until t0+%v by %q, %d trips",
			StateName(st.State), st.OpenUntil.Sub(t0), st.OpenedBy, st.Trips, until.Sub(t0), opener, trips)
	}
}

// The operator's open starts the clock again, whatever the state and even if that shortens
// the open period.
func TestForceOpenRestartsTheClock(t *testing.T) {
	tests := []struct {
		desc  string
		setup func(t *testing.T, b *Breaker)
		trips uint64
	}{
		{desc: "closed", setup: func(t *testing.T, b *Breaker) {}},
		{desc: "open on its own", setup: func(t *testing.T, b *Breaker) { tripAt(t, b, t0) }, trips: 1},
		{desc: "open by hand for longer", setup: func(t *testing.T, b *Breaker) { b.ForceOpen(t0, time.Hour) }},
		{desc: "half-open with its probe out", setup: func(t *testing.T, b *Breaker) {
			tripAt(t, b, t0.Add(-time.Minute))
			if p := b.Allow(t0); !p.Probe {
				t.Fatalf("Allow() = %+v, want a probe", p)
			}
		}, trips: 1},
		{desc: "shared from another instance", setup: func(t *testing.T, b *Breaker) { b.Observe(t0.Add(50*time.Second), t0) }},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			b := newTestBreaker(t, Settings{})
			tc.setup(t, b)
			now := t0.Add(time.Second)
			b.ForceOpen(now, 2*time.Second)
			wantOpen(t, b, now, now.Add(2*time.Second), OpenedManual, tc.trips)
			if p := b.Allow(now); p.Allowed || p.RetryAfter != 2*time.Second {
				t.Errorf("Allow() = %+v, want denied with RetryAfter 2s", p)
			}
		})
	}
}

// Results recorded while a breaker is open, by hand or on its own, change nothing: they
// neither extend it, nor count toward the next trip, nor count as a trip.
func TestFailuresWhileOpenChangeNothing(t *testing.T) {
	tests := []struct {
		desc   string
		open   func(t *testing.T, b *Breaker)
		until  time.Time
		opener string
		trips  uint64
	}{
		{desc: "open by hand", open: func(t *testing.T, b *Breaker) { b.ForceOpen(t0, time.Minute) },
			until: t0.Add(time.Minute), opener: OpenedManual},
		{desc: "open on its own", open: func(t *testing.T, b *Breaker) { feed(t, b, DefaultMinRequests, true, t0) },
			until: t0.Add(DefaultOpenFor), opener: OpenedAuto, trips: 1},
		{desc: "open on the origin's Retry-After", open: func(t *testing.T, b *Breaker) {
			b.RecordCall(b.Allow(t0), 429, true, 0, 7*time.Second, t0)
		}, until: t0.Add(7 * time.Second), opener: OpenedAuto, trips: 1},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			b := newTestBreaker(t, Settings{SlowCall: time.Second})
			inFlight := make([]Permit, 3*DefaultMinRequests)
			for i := range inFlight {
				inFlight[i] = b.Allow(t0)
			}
			tc.open(t, b)
			now := t0.Add(time.Second)
			// Plain failures, slow calls and failures naming a Retry-After alike.
			for i, p := range inFlight {
				var took, retryAfter time.Duration
				switch i % 3 {
				case 1:
					took = time.Hour
				case 2:
					retryAfter = 30 * time.Minute
				}
				if got := b.RecordCall(p, 503, true, took, retryAfter, now); got != Unchanged {
					t.Fatalf("RecordCall() of a failure while open (took %v, Retry-After %v) = %d, want Unchanged", took, retryAfter, got)
				}
			}
			wantOpen(t, b, now, tc.until, tc.opener, tc.trips)
			if st := b.Status(now); st.LastFailure != 503 {
				t.Errorf("Status().LastFailure = %d, want 503: the status is kept even when not counted", st.LastFailure)
			}
		})
	}
}

// An automatic opening wins only over a closed or expired breaker: a manual open is never
// shortened, neither by the breaker's own results nor by a deadline shared from elsewhere,
// which may push it back.
func TestManualOpenIsNeverShortened(t *testing.T) {
	b := newTestBreaker(t, Settings{})
	b.ForceOpen(t0, 10*time.Minute)
	until := t0.Add(10 * time.Minute)
	if b.Observe(t0.Add(30*time.Second), t0) {
		t.Errorf("Observe() of an earlier deadline = true, want false")
	}
	wantOpen(t, b, t0, until, OpenedManual, 0)

	b2 := newTestBreaker(t, Settings{MaxOpenFor: time.Hour})
	b2.ForceOpen(t0, time.Minute)
	if !b2.Observe(t0.Add(2*time.Minute), t0) {
		t.Errorf("Observe() of a later deadline = false, want true")
	}
	wantOpen(t, b2, t0, t0.Add(2*time.Minute), OpenedManual, 0)
}

// Once a manual open has passed, the breaker is half-open as after a trip: its probe's
// failure reopens it on its own.
func TestExpiredManualOpenReopensOnItsOwn(t *testing.T) {
	b := newTestBreaker(t, Settings{})
	b.ForceOpen(t0, 30*time.Second)
	now := t0.Add(30 * time.Second)
	probe := b.Allow(now)
	if !probe.Probe {
		t.Fatalf("Allow() after the manual deadline = %+v, want a probe", probe)
	}
	if got := b.Record(probe, 504, true, now); got != Reopened {
		t.Fatalf("Record() of the failed probe = %d, want Reopened", got)
	}
	wantOpen(t, b, now, now.Add(2*DefaultOpenFor), OpenedAuto, 1)
	if st := b.Status(now); st.LastFailure != 504 {
		t.Errorf("Status().LastFailure = %d, want 504", st.LastFailure)
	}
}

// A breaker that adopted a shared deadline says so; one closed by hand says nobody opened it
// and starts counting afresh.
func TestOpenerSharedAndClosed(t *testing.T) {
	b := newTestBreaker(t, Settings{})
	b.Observe(t0.Add(20*time.Second), t0)
	wantOpen(t, b, t0, t0.Add(20*time.Second), OpenedShared, 0)

	b = newTestBreaker(t, Settings{})
	feed(t, b, DefaultMinRequests-1, true, t0)
	inFlight := b.Allow(t0)
	feed(t, b, 1, true, t0)
	b.ForceClose(t0)
	if got := b.Record(inFlight, 503, true, t0); got != Unchanged {
		t.Errorf("Record() of a failure let through before ForceClose = %d, want Unchanged", got)
	}
	st := b.Status(t0)
	if st.State != StateClosed || st.OpenedBy != "" || st.OK != 0 || st.Failures != 0 || st.Trips != 1 {
		t.Errorf("Status() after ForceClose = %+v, want closed, no opener, no counts, 1 trip", st)
	}
	// The failures that opened it are gone: it takes a whole new window's worth again.
	feed(t, b, DefaultMinRequests-1, true, t0)
	wantState(t, b, t0, StateClosed)
}

// Failures arriving together open the breaker once: exactly one Record reports Tripped, one
// trip is counted and OnTrip runs once, however the callers interleave, whichever rule
// trips it.
func TestConcurrentFailuresTripOnce(t *testing.T) {
	tests := []struct {
		desc       string
		failed     bool
		took       time.Duration
		retryAfter time.Duration
	}{
		{desc: "failure ratio", failed: true},
		{desc: "slow calls", took: time.Second},
		{desc: "retry-after", failed: true, retryAfter: 3 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			concurrentTrip(t, tc.failed, tc.took, tc.retryAfter)
		})
	}
}

func concurrentTrip(t *testing.T, failed bool, took, retryAfter time.Duration) {
	t.Helper()
	const callers = 60
	var mu sync.Mutex
	onTrips := 0
	b := newTestBreaker(t, Settings{MinRequests: 10, SlowCall: 100 * time.Millisecond, OnTrip: func(key string, until time.Time) {
		mu.Lock()
		onTrips++
		mu.Unlock()
	}})
	start := make(chan struct{})
	results := make(chan int, callers)
	for i := 0; i < callers; i++ {
		p := b.Allow(t0)
		go func(p Permit) {
			<-start
			results <- b.RecordCall(p, 503, failed, took, retryAfter, t0)
		}(p)
	}
	close(start)
	tripped := 0
	timeout := time.After(10 * time.Second)
	for i := 0; i < callers; i++ {
		select {
		case r := <-results:
			if r == Tripped {
				tripped++
			} else if r != Unchanged {
				t.Errorf("Record() = %d, want Tripped or Unchanged", r)
			}
		case <-timeout:
			t.Fatalf("concurrent Record hangs: %d of %d results", i, callers)
		}
	}
	mu.Lock()
	calls := onTrips
	mu.Unlock()
	if st := b.Status(t0); tripped != 1 || st.Trips != 1 || calls != 1 || st.State != StateOpen {
		t.Errorf("%d failures together: %d Tripped, Trips = %d, OnTrip calls = %d, state %s; want 1, 1, 1, open",
			callers, tripped, st.Trips, calls, StateName(st.State))
	}
}

// Closing by hand clears the slow calls with the rest of the window.
func TestForceCloseClearsSlowCalls(t *testing.T) {
	b := newTestBreaker(t, Settings{SlowCall: time.Second, MinRequests: 4})
	feedTimed(t, b, 3, false, 2*time.Second, t0)
	b.ForceClose(t0)
	if got := b.Counts(t0); got != (Counts{}) {
		t.Fatalf("Counts() after ForceClose = %+v, want none", got)
	}
	feedTimed(t, b, 1, false, 2*time.Second, t0)
	wantState(t, b, t0, StateClosed)
}
