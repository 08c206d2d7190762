package breaker

import (
	"testing"
	"time"
)

// feedTimed sends n fetches through b at now, each taking took, and records each as failed
// or not.
func feedTimed(t *testing.T, b *Breaker, n int, failed bool, took time.Duration, now time.Time) int {
	t.Helper()
	change := Unchanged
	for i := 0; i < n; i++ {
		p := b.Allow(now)
		if !p.Allowed {
			t.Fatalf("Allow() denied fetch %d of %d, want allowed", i+1, n)
		}
		if c := b.RecordCall(p, 200, failed, took, 0, now); c != Unchanged {
			change = c
		}
	}
	return change
}

// With SlowCall set, SlowCallRatio of MinRequests results slower than it open the breaker,
// successes though they are.
func TestSlowCallsOpen(t *testing.T) {
	tests := []struct {
		desc       string
		s          Settings
		fast, slow int
		took       time.Duration
		want       int
	}{
		{desc: "half slow", s: Settings{SlowCall: 2 * time.Second, SlowCallRatio: 0.5, MinRequests: 10},
			fast: 5, slow: 5, took: 3 * time.Second, want: StateOpen},
		{desc: "below the ratio", s: Settings{SlowCall: 2 * time.Second, SlowCallRatio: 0.5, MinRequests: 10},
			fast: 6, slow: 4, took: 3 * time.Second, want: StateClosed},
		{desc: "too few results", s: Settings{SlowCall: 2 * time.Second, SlowCallRatio: 0.5, MinRequests: 10},
			fast: 0, slow: 9, took: 3 * time.Second, want: StateClosed},
		{desc: "exactly slowCall is not slow", s: Settings{SlowCall: 2 * time.Second, MinRequests: 10},
			fast: 0, slow: 10, took: 2 * time.Second, want: StateClosed},
		{desc: "default ratio", s: Settings{SlowCall: 200 * time.Millisecond, MinRequests: 4},
			fast: 2, slow: 2, took: time.Second, want: StateOpen},
		{desc: "slowCall unset", s: Settings{MinRequests: 4},
			fast: 0, slow: 10, took: time.Hour, want: StateClosed},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			b := newTestBreaker(t, tc.s)
			feedTimed(t, b, tc.fast, false, time.Millisecond, t0)
			feedTimed(t, b, tc.slow, false, tc.took, t0)
			wantState(t, b, t0, tc.want)
			if tc.want != StateOpen {
				return
			}
			st := b.Status(t0)
			if st.TripReason != ReasonSlowCalls || st.TripSlow != tc.slow || st.TripOK != tc.fast+tc.slow || st.Trips != 1 {
				t.Errorf("Status() = reason %q, slow %d of %d, %d trips; want %q, %d of %d, 1 trip",
					st.TripReason, st.TripSlow, st.TripOK, st.Trips, ReasonSlowCalls, tc.slow, tc.fast+tc.slow)
			}
		})
	}
}

// An override's slowCall and slowCallRatio make one key's slow calls open its breaker, while
// the group's other keys, without slowCall, stay closed.
func TestSlowCallOverride(t *testing.T) {
	g := newTestGroup(t, Settings{MinRequests: 4})
	if err := g.SetOverride("slow.example", Override{SlowCall: time.Second, SlowCallRatio: 0.75}); err != nil {
		t.Fatalf("SetOverride() = %v", err)
	}
	slow, other := g.Get("slow.example", t0), g.Get("other.example", t0)
	feedTimed(t, slow, 1, false, time.Millisecond, t0)
	feedTimed(t, other, 1, false, time.Millisecond, t0)
	feedTimed(t, slow, 3, false, 2*time.Second, t0)
	feedTimed(t, other, 3, false, 2*time.Second, t0)
	wantState(t, slow, t0, StateOpen)
	wantState(t, other, t0, StateClosed)
	if st := slow.Status(t0); st.TripReason != ReasonSlowCalls {
		t.Errorf("Status().TripReason = %q, want %q", st.TripReason, ReasonSlowCalls)
	}
}

// The failure ratio is judged first: a window that meets both rules opened on failures.
func TestFailureRatioBeforeSlowCalls(t *testing.T) {
	b := newTestBreaker(t, Settings{SlowCall: time.Second, MinRequests: 4})
	feedTimed(t, b, 4, true, 2*time.Second, t0)
	if st := b.Status(t0); st.State != StateOpen || st.TripReason != ReasonFailureRatio {
		t.Errorf("Status() = %s by %q, want open by %q", StateName(st.State), st.TripReason, ReasonFailureRatio)
	}
}

// Slow calls arriving together open the breaker once; those recorded while it is open count
// for nothing.
func TestSlowCallsTripOnce(t *testing.T) {
	b := newTestBreaker(t, Settings{SlowCall: time.Second, MinRequests: 4})
	permits := make([]Permit, 20)
	for i := range permits {
		permits[i] = b.Allow(t0)
	}
	trips := 0
	for _, p := range permits {
		if b.RecordCall(p, 200, false, 2*time.Second, 0, t0) == Tripped {
			trips++
		}
	}
	if trips != 1 {
		t.Errorf("%d Tripped from 20 slow calls arriving together, want 1", trips)
	}
	wantOpen(t, b, t0, t0.Add(DefaultOpenFor), OpenedAuto, 1)
}

// The window counts slow calls as it counts failures: they age out with it.
func TestSlowCallsAgeOut(t *testing.T) {
	b := newTestBreaker(t, Settings{SlowCall: time.Second, MinRequests: 4, Window: 10 * time.Second})
	feedTimed(t, b, 3, false, 2*time.Second, t0)
	now := t0.Add(11 * time.Second)
	feedTimed(t, b, 3, false, time.Millisecond, now)
	if got := b.Counts(now); got != (Counts{OK: 3}) {
		t.Errorf("Counts() = %+v, want 3 fast results only", got)
	}
	feedTimed(t, b, 1, false, 2*time.Second, now)
	wantState(t, b, now, StateClosed)
}
