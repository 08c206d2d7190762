package breaker

import (
	"testing"
	"time"
)

// A failure that carries the origin's Retry-After opens a closed breaker at once, for that
// long (up to Jitter longer, never shorter) and at most MaxOpenFor, whatever the window holds
// and whatever openFor says.
func TestRetryAfterOpensAtOnce(t *testing.T) {
	tests := []struct {
		desc       string
		retryAfter time.Duration
		rand       float64
		want       time.Duration // the open period
	}{
		{desc: "longer than openFor", retryAfter: 30 * time.Second, rand: 0.5, want: 30 * time.Second},
		{desc: "longer than openFor, jitter up", retryAfter: 30 * time.Second, rand: 1, want: 36 * time.Second},
		{desc: "longer than openFor, jitter down is not below it", retryAfter: 30 * time.Second, rand: 0, want: 30 * time.Second},
		{desc: "shorter than openFor", retryAfter: time.Second, rand: 0.5, want: time.Second},
		{desc: "capped at maxOpenFor", retryAfter: time.Hour, rand: 0.5, want: DefaultMaxOpenFor},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			b := newTestBreaker(t, Settings{Rand: fixedRand(tc.rand)})
			p := b.Allow(t0)
			if got := b.RecordCall(p, 429, true, time.Millisecond, tc.retryAfter, t0); got != Tripped {
				t.Fatalf("RecordCall() = %d, want Tripped", got)
			}
			wantOpen(t, b, t0, t0.Add(tc.want), OpenedAuto, 1)
			st := b.Status(t0)
			ra := tc.retryAfter
			if ra > DefaultMaxOpenFor {
				ra = DefaultMaxOpenFor
			}
			if st.TripReason != ReasonRetryAfter || st.TripRetryAfter != ra || st.LastFailure != 429 {
				t.Errorf("Status() = reason %q, retry-after %v, last failure %d; want %q, %v, 429",
					st.TripReason, st.TripRetryAfter, st.LastFailure, ReasonRetryAfter, ra)
			}
			if p := b.Allow(t0.Add(tc.want - time.Millisecond)); p.Allowed || p.RetryAfter != time.Millisecond {
				t.Errorf("Allow() just before the deadline = %+v, want refused for 1ms", p)
			}
			if p := b.Allow(t0.Add(tc.want)); !p.Probe {
				t.Errorf("Allow() at the deadline = %+v, want the probe", p)
			}
		})
	}
}

// A Retry-After on a success, or on a failure the breaker no longer waits for, changes
// nothing; one on many failures arriving together opens the breaker once.
func TestRetryAfterIsIdempotent(t *testing.T) {
	b := newTestBreaker(t, Settings{})
	permits := make([]Permit, 10)
	for i := range permits {
		permits[i] = b.Allow(t0)
	}
	if got := b.RecordCall(permits[0], 200, false, 0, time.Minute, t0); got != Unchanged {
		t.Fatalf("RecordCall() of a success with a Retry-After = %d, want Unchanged", got)
	}
	wantState(t, b, t0, StateClosed)
	trips := 0
	for i, p := range permits[1:] {
		now := t0.Add(time.Duration(i) * time.Millisecond)
		if b.RecordCall(p, 503, true, 0, 10*time.Second+time.Duration(i)*time.Second, now) == Tripped {
			trips++
		}
	}
	if trips != 1 {
		t.Errorf("%d Tripped from 9 failures with Retry-After arriving together, want 1", trips)
	}
	wantOpen(t, b, t0, t0.Add(10*time.Second), OpenedAuto, 1)
}

// A probe answered with Retry-After reopens the breaker for the longer of the doubled period
// and the origin's wait.
func TestProbeWithRetryAfter(t *testing.T) {
	b := newTestBreaker(t, Settings{})
	tripAt(t, b, t0)
	now := t0.Add(DefaultOpenFor)
	p := b.Allow(now)
	if got := b.RecordCall(p, 503, true, 0, 25*time.Second, now); got != Reopened {
		t.Fatalf("RecordCall() of the probe = %d, want Reopened", got)
	}
	wantOpen(t, b, now, now.Add(25*time.Second), OpenedAuto, 2)
	if st := b.Status(now); st.TripReason != ReasonRetryAfter {
		t.Errorf("TripReason = %q, want %q", st.TripReason, ReasonRetryAfter)
	}
	// A short wait: the doubled period stands.
	now = now.Add(25 * time.Second)
	p = b.Allow(now)
	b.RecordCall(p, 503, true, 0, time.Second, now)
	wantOpen(t, b, now, now.Add(50*time.Second), OpenedAuto, 3)
}

// An operator's open is not shortened nor lengthened by a Retry-After the breaker no longer
// waits for; a manual close clears the breaker, and the next Retry-After opens it again.
func TestRetryAfterAndTheOperator(t *testing.T) {
	b := newTestBreaker(t, Settings{})
	p := b.Allow(t0)
	b.ForceOpen(t0, 2*time.Second)
	if got := b.RecordCall(p, 429, true, 0, time.Minute, t0); got != Unchanged {
		t.Fatalf("RecordCall() while open by hand = %d, want Unchanged", got)
	}
	wantOpen(t, b, t0, t0.Add(2*time.Second), OpenedManual, 0)
	b.ForceClose(t0)
	p = b.Allow(t0)
	if got := b.RecordCall(p, 429, true, 0, 7*time.Second, t0); got != Tripped {
		t.Fatalf("RecordCall() after ForceClose = %d, want Tripped", got)
	}
	wantOpen(t, b, t0, t0.Add(7*time.Second), OpenedAuto, 1)
}
