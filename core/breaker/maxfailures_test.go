package breaker

import (
	"testing"
	"time"
)

// results is a run of fetches recorded at one moment: n of them, failed or not, each taking
// took.
type results struct {
	at     time.Duration // after t0
	n      int
	failed bool
	took   time.Duration
}

// playResults records each run of rs on b at its moment, and returns the moment of the last.
func playResults(t *testing.T, b *Breaker, rs []results) time.Time {
	t.Helper()
	now := t0
	for _, r := range rs {
		now = t0.Add(r.at)
		for i := 0; i < r.n; i++ {
			p := b.Allow(now)
			if !p.Allowed {
				t.Fatalf("Allow() at t0+%v denied fetch %d of %d, want allowed", r.at, i+1, r.n)
			}
			b.RecordCall(p, 503, r.failed, r.took, 0, now)
		}
	}
	return now
}

// okAt and failAt are runs of n fast successes or failures at t0+at.
func okAt(at time.Duration, n int) results   { return results{at: at, n: n} }
func failAt(at time.Duration, n int) results { return results{at: at, n: n, failed: true} }

// MaxFailures failures in the window open the breaker, however few results there were and
// whatever their share; the ratio rules still open it on their own, and name themselves when
// they are met with it.
func TestMaxFailuresOpens(t *testing.T) {
	// The seed's rule: more than 2 errors in 60s opens for an hour.
	hour := Settings{Window: time.Minute, MaxFailures: 3, OpenFor: time.Hour, MaxOpenFor: time.Hour}
	tests := []struct {
		desc   string
		s      Settings
		rs     []results
		want   int
		reason string
		// tripOK and tripFailures are the counts the trip reports, when it opens.
		tripOK, tripFailures int
		openFor              time.Duration
	}{
		{desc: "three failures among successes within a minute", s: hour,
			rs:   []results{okAt(0, 10), failAt(5*time.Second, 1), okAt(10*time.Second, 10), failAt(20*time.Second, 1), okAt(30*time.Second, 10), failAt(40*time.Second, 1)},
			want: StateOpen, reason: ReasonMaxFailures, tripOK: 30, tripFailures: 3, openFor: time.Hour},
		{desc: "two failures within a minute stay closed", s: hour,
			rs:   []results{okAt(0, 10), failAt(5*time.Second, 1), okAt(10*time.Second, 10), failAt(40*time.Second, 1)},
			want: StateClosed},
		{desc: "a failure that left the window does not count", s: hour,
			rs:   []results{failAt(0, 2), okAt(30*time.Second, 5), failAt(61*time.Second, 1)},
			want: StateClosed},
		{desc: "three failures alone, below minRequests", s: Settings{MaxFailures: 3},
			rs:   []results{failAt(0, 3)},
			want: StateOpen, reason: ReasonMaxFailures, tripFailures: 3, openFor: DefaultOpenFor},
		{desc: "a low share of many results", s: Settings{MaxFailures: 3},
			rs:   []results{okAt(0, 200), failAt(time.Second, 3)},
			want: StateOpen, reason: ReasonMaxFailures, tripOK: 200, tripFailures: 3, openFor: DefaultOpenFor},
		{desc: "zero is off", s: Settings{},
			rs:   []results{failAt(0, DefaultMinRequests-1)},
			want: StateClosed},
		{desc: "the ratio still opens it", s: Settings{MinRequests: 4, MaxFailures: 10},
			rs:   []results{okAt(0, 2), failAt(0, 2)},
			want: StateOpen, reason: ReasonFailureRatio, tripOK: 2, tripFailures: 2, openFor: DefaultOpenFor},
		{desc: "both met: the ratio is named", s: Settings{MinRequests: 4, MaxFailures: 4},
			rs:   []results{failAt(0, 4)},
			want: StateOpen, reason: ReasonFailureRatio, tripFailures: 4, openFor: DefaultOpenFor},
		{desc: "met with the slow calls: the count is named", s: Settings{MinRequests: 4, FailureRatio: 0.9, SlowCall: time.Second, MaxFailures: 2},
			rs:   []results{{n: 2, took: 2 * time.Second}, {n: 2, failed: true, took: 2 * time.Second}},
			want: StateOpen, reason: ReasonMaxFailures, tripOK: 2, tripFailures: 2, openFor: DefaultOpenFor},
		{desc: "slow successes are no failures", s: Settings{SlowCall: time.Second, MaxFailures: 2},
			rs:   []results{{n: 5, took: 2 * time.Second}},
			want: StateClosed},
		{desc: "unused under consecutiveFailures", s: Settings{ConsecutiveFailures: 5, MaxFailures: 2},
			rs:   []results{failAt(0, 1), okAt(0, 1), failAt(0, 1), okAt(0, 1), failAt(0, 1)},
			want: StateClosed},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			b := newTestBreaker(t, tc.s)
			now := playResults(t, b, tc.rs)
			wantState(t, b, now, tc.want)
			if tc.want != StateOpen {
				return
			}
			st := b.Status(now)
			if st.TripReason != tc.reason || st.TripOK != tc.tripOK || st.TripFailures != tc.tripFailures || st.Trips != 1 {
				t.Errorf("Status() = reason %q, %d ok and %d failed, %d trips; want %q, %d and %d, 1 trip",
					st.TripReason, st.TripOK, st.TripFailures, st.Trips, tc.reason, tc.tripOK, tc.tripFailures)
			}
			// Rand is fixed at 0.5: no jitter.
			if !near(st.OpenLeft, tc.openFor) {
				t.Errorf("Status().OpenLeft = %v, want %v", st.OpenLeft, tc.openFor)
			}
		})
	}
}

// Failures recorded together past MaxFailures open the breaker once; those recorded while it
// is open count for nothing.
func TestMaxFailuresTripOnce(t *testing.T) {
	b := newTestBreaker(t, Settings{MaxFailures: 3})
	permits := make([]Permit, 10)
	for i := range permits {
		permits[i] = b.Allow(t0)
	}
	trips := 0
	for _, p := range permits {
		if b.Record(p, 503, true, t0) == Tripped {
			trips++
		}
	}
	if trips != 1 {
		t.Errorf("%d Tripped from 10 failures arriving together, want 1", trips)
	}
	wantOpen(t, b, t0, t0.Add(DefaultOpenFor), OpenedAuto, 1)
	if st := b.Status(t0); st.TripFailures != 3 {
		t.Errorf("Status().TripFailures = %d, want 3: the count when it tripped", st.TripFailures)
	}
}

// A probe's success clears the window: the failures that opened the breaker do not count
// towards the next trip.
func TestMaxFailuresCountAgainAfterRecovery(t *testing.T) {
	b := newTestBreaker(t, Settings{Window: time.Minute, MaxFailures: 3})
	playResults(t, b, []results{failAt(0, 3)})
	now := t0.Add(DefaultOpenFor)
	p := b.Allow(now)
	if !p.Probe {
		t.Fatalf("Allow() after the open period = %+v, want a probe", p)
	}
	if got := b.Record(p, 200, false, now); got != Recovered {
		t.Fatalf("Record(probe's success) = %d, want Recovered", got)
	}
	playResults(t, b, []results{failAt(DefaultOpenFor, 2)})
	wantState(t, b, now, StateClosed)
	playResults(t, b, []results{failAt(DefaultOpenFor+time.Second, 1)})
	wantState(t, b, now.Add(time.Second), StateOpen)
}

// An override's maxFailures gives one key the count rule; the group's other keys keep the
// ratio alone. The override reads back in Params and String as breaker.overrides writes it.
func TestMaxFailuresOverride(t *testing.T) {
	g := newTestGroup(t, Settings{})
	ov, err := ParseOverrideParams("maxFailures=2")
	if err != nil {
		t.Fatalf("ParseOverrideParams() = %v", err)
	}
	if err := g.SetOverride("strict.example", ov); err != nil {
		t.Fatalf("SetOverride() = %v", err)
	}
	strict := g.Get("strict.example", t0)
	other := g.Get("other.example", t0)
	for _, b := range []*Breaker{strict, other} {
		playResults(t, b, []results{okAt(0, 50), failAt(time.Second, 2)})
	}
	wantState(t, strict, t0.Add(time.Second), StateOpen)
	wantState(t, other, t0.Add(time.Second), StateClosed)
	st := strict.Status(t0.Add(time.Second))
	if st.TripReason != ReasonMaxFailures || st.Params.MaxFailures != 2 || st.Override.MaxFailures != 2 {
		t.Errorf("Status() = reason %q, maxFailures %d in force, %d own; want %q, 2, 2",
			st.TripReason, st.Params.MaxFailures, st.Override.MaxFailures, ReasonMaxFailures)
	}
	if got := ov.String(); got != "maxFailures=2" {
		t.Errorf("String() = %q, want %q", got, "maxFailures=2")
	}
	tests := []struct {
		desc string
		o    Override
		want Param
	}{
		{desc: "the key's own", o: st.Override, want: Param{Name: "maxFailures", Value: "2", Set: true}},
		{desc: "the group's, off", o: other.Status(t0).Params, want: Param{Name: "maxFailures", Value: "0"}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			found := false
			for _, p := range tc.o.Params() {
				if p.Name == tc.want.Name {
					found = true
					if p != tc.want {
						t.Errorf("Params() has %+v, want %+v", p, tc.want)
					}
				}
			}
			if !found {
				t.Errorf("Params() = %+v, want %s among them", tc.o.Params(), tc.want.Name)
			}
		})
	}
	// Removing the override takes the count rule away with it.
	g.RemoveOverride("strict.example")
	if st := strict.Status(t0); st.Params.MaxFailures != 0 {
		t.Errorf("Params().MaxFailures after RemoveOverride = %d, want 0", st.Params.MaxFailures)
	}
}

// With a fleet, the other instances' failures count towards MaxFailures: the origin saw them
// all.
func TestMaxFailuresFleetCounts(t *testing.T) {
	tests := []struct {
		desc  string
		fleet Counts
		want  int
	}{
		{desc: "two failures elsewhere, one here", fleet: Counts{OK: 100, Failures: 2}, want: StateOpen},
		{desc: "one failure elsewhere, one here", fleet: Counts{OK: 100, Failures: 1}, want: StateClosed},
		{desc: "no fleet", want: StateClosed},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			b := newTestBreaker(t, Settings{MaxFailures: 3})
			b.SetFleetCounts(tc.fleet)
			playResults(t, b, []results{failAt(0, 1)})
			wantState(t, b, t0, tc.want)
		})
	}
}
