package breaker

import (
	"testing"
	"time"
)

// probe lets b's probe through at now and records it as taking took, failed or not.
func probe(t *testing.T, b *Breaker, now time.Time, failed bool, took time.Duration) int {
	t.Helper()
	p := b.Allow(now)
	if !p.Probe {
		t.Fatalf("Allow() at t0+%v = %+v, want a probe", now.Sub(t0), p)
	}
	return b.RecordCall(p, 200, failed, took, 0, now)
}

// With Probes 3 the breaker closes after the third probe in a row that succeeds, the probes
// ProbeInterval apart, give or take the jitter, and requests refused in between.
func TestProbesCloseAfterN(t *testing.T) {
	tests := []struct {
		desc string
		rand float64
		gap  time.Duration
	}{
		{desc: "middle", rand: 0.5, gap: 2 * time.Second},
		{desc: "jitter down", rand: 0, gap: 1600 * time.Millisecond},
		{desc: "jitter up", rand: 1, gap: 2400 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			b := newTestBreaker(t, Settings{Probes: 3, ProbeInterval: 2 * time.Second, Rand: fixedRand(tc.rand)})
			tripAt(t, b, t0)
			now := b.Status(t0).OpenUntil
			for i := 1; i <= 3; i++ {
				want := Unchanged
				if i == 3 {
					want = Recovered
				}
				if got := probe(t, b, now, false, time.Millisecond); got != want {
					t.Fatalf("probe %d = %d, want %d", i, got, want)
				}
				if i == 3 {
					break
				}
				st := b.Status(now)
				if st.State != StateHalfOpen || st.ProbesOK != i {
					t.Fatalf("Status() after probe %d = %s with %d probes ok, want half-open with %d",
						i, StateName(st.State), st.ProbesOK, i)
				}
				if p := b.Allow(now.Add(tc.gap - time.Millisecond)); p.Allowed || p.RetryAfter != time.Millisecond {
					t.Fatalf("Allow() 1ms before the next probe = %+v, want refused for 1ms", p)
				}
				now = now.Add(tc.gap)
			}
			wantState(t, b, now, StateClosed)
		})
	}
}

// An override's probes and probeInterval hold one key's breaker half-open for that many
// probes, that far apart; the group's default (one probe) closes the others.
func TestProbesOverride(t *testing.T) {
	g := newTestGroup(t, Settings{})
	if err := g.SetOverride("careful.example", Override{Probes: 2, ProbeInterval: 3 * time.Second}); err != nil {
		t.Fatalf("SetOverride() = %v", err)
	}
	careful, other := g.Get("careful.example", t0), g.Get("other.example", t0)
	tripAt(t, careful, t0)
	tripAt(t, other, t0)
	now := careful.Status(t0).OpenUntil
	if got := probe(t, other, other.Status(t0).OpenUntil, false, time.Millisecond); got != Recovered {
		t.Fatalf("the other key's probe = %d, want %d (closed by one)", got, Recovered)
	}
	if got := probe(t, careful, now, false, time.Millisecond); got != Unchanged {
		t.Fatalf("first probe = %d, want %d (half-open still)", got, Unchanged)
	}
	if p := careful.Allow(now.Add(3*time.Second - time.Millisecond)); p.Allowed {
		t.Fatalf("Allow() 1ms before the override's interval = %+v, want refused", p)
	}
	if got := probe(t, careful, now.Add(3*time.Second), false, time.Millisecond); got != Recovered {
		t.Fatalf("second probe = %d, want %d", got, Recovered)
	}
}

// A probe that fails, or succeeds slower than SlowCall, after others succeeded opens the
// breaker again for twice as long, and the count of good probes starts over.
func TestProbesFailAfterSome(t *testing.T) {
	tests := []struct {
		desc   string
		failed bool
		took   time.Duration
		reason string
	}{
		{desc: "failed", failed: true, took: time.Millisecond, reason: ReasonProbeFailed},
		{desc: "slow", took: 300 * time.Millisecond, reason: ReasonProbeSlow},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			b := newTestBreaker(t, Settings{Probes: 3, SlowCall: 200 * time.Millisecond})
			tripAt(t, b, t0)
			now := b.Status(t0).OpenUntil
			probe(t, b, now, false, time.Millisecond)
			now = now.Add(DefaultProbeInterval)
			probe(t, b, now, false, time.Millisecond)
			now = now.Add(DefaultProbeInterval)
			if got := probe(t, b, now, tc.failed, tc.took); got != Reopened {
				t.Fatalf("third probe = %d, want Reopened", got)
			}
			wantOpen(t, b, now, now.Add(2*DefaultOpenFor), OpenedAuto, 2)
			st := b.Status(now)
			if st.ProbesOK != 0 || st.TripReason != tc.reason {
				t.Errorf("Status() = %d probes ok, reason %q; want 0, %q", st.ProbesOK, st.TripReason, tc.reason)
			}
			now = now.Add(2 * DefaultOpenFor)
			for i := 0; i < 3; i++ {
				probe(t, b, now, false, time.Millisecond)
				now = now.Add(DefaultProbeInterval)
			}
			wantState(t, b, now, StateClosed)
		})
	}
}

// One probe, the default, closes the breaker as it always did.
func TestOneProbeByDefault(t *testing.T) {
	b := newTestBreaker(t, Settings{})
	tripAt(t, b, t0)
	if got := probe(t, b, t0.Add(DefaultOpenFor), false, time.Hour); got != Recovered {
		t.Errorf("probe = %d, want Recovered (no slowCall: no probe is slow)", got)
	}
}

// A manual close in the middle of the probes clears their count; a manual open restarts it.
func TestProbesAndTheOperator(t *testing.T) {
	b := newTestBreaker(t, Settings{Probes: 2})
	tripAt(t, b, t0)
	now := t0.Add(DefaultOpenFor)
	probe(t, b, now, false, 0)
	b.ForceOpen(now, time.Second)
	if st := b.Status(now); st.ProbesOK != 0 {
		t.Errorf("ProbesOK after ForceOpen = %d, want 0", st.ProbesOK)
	}
	now = now.Add(time.Second)
	if got := probe(t, b, now, false, 0); got != Unchanged {
		t.Errorf("first probe after ForceOpen = %d, want Unchanged (one of two)", got)
	}
	b.ForceClose(now)
	wantState(t, b, now, StateClosed)
	if p := b.Allow(now); !p.Allowed || p.Probe {
		t.Errorf("Allow() after ForceClose = %+v, want allowed, no probe", p)
	}
}
