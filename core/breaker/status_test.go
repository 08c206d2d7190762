package breaker

import (
	"testing"
	"time"
)

func TestStatusReportsTheOpenPeriod(t *testing.T) {
	b := newTestBreaker(t, Settings{})
	st := b.Status(t0)
	if st.State != StateClosed || st.OpenLeft != 0 || st.OpenedBy != "" || st.LastFailure != 0 {
		t.Errorf("Status() of a new breaker = %+v, want closed, nothing left open, no opener, no failure", st)
	}
	wantParams(t, st, Settings{}.withDefaults(), Override{})

	feed(t, b, DefaultMinRequests, true, t0)
	now := t0.Add(2 * time.Second)
	st = b.Status(now)
	if st.State != StateOpen || st.OpenLeft != DefaultOpenFor-2*time.Second || st.OpenedBy != OpenedAuto ||
		st.LastFailure != 503 || st.Trips != 1 {
		t.Errorf("Status() 2s after a trip = %+v, want open with %v left, by auto, last failure 503, 1 trip",
			st, DefaultOpenFor-2*time.Second)
	}

	now = t0.Add(DefaultOpenFor)
	st = b.Status(now)
	if st.State != StateHalfOpen || st.OpenLeft != 0 || st.OpenedBy != OpenedAuto {
		t.Errorf("Status() at the deadline = %+v, want half-open, nothing left, still by auto", st)
	}
	probe := b.Allow(now)
	b.Record(probe, 200, false, now)
	st = b.Status(now)
	if st.State != StateClosed || st.OpenedBy != "" || st.LastFailure != 503 {
		t.Errorf("Status() after the probe succeeded = %+v, want closed, no opener, last failure still 503", st)
	}
}

// Snapshot lists every breaker, declared ones among them, in key order whatever the order
// of use.
func TestSnapshotIsOrderedByKey(t *testing.T) {
	g := newTestGroup(t, Settings{})
	for _, k := range []string{"m", "z", "a"} {
		g.Get(k, t0)
	}
	if err := g.Declare("b"); err != nil {
		t.Fatalf("Declare(b) = %v", err)
	}
	g.Get("m", t0)
	want := []string{"a", "b", "m", "z"}
	for run := 0; run < 3; run++ {
		snap := g.Snapshot(t0)
		if len(snap) != len(want) {
			t.Fatalf("Snapshot() = %+v, want %v", snap, want)
		}
		for i, k := range want {
			if snap[i].Key != k || snap[i].Declared != (k == "b") {
				t.Errorf("Snapshot()[%d] = %q declared %v, want %q declared %v", i, snap[i].Key, snap[i].Declared, k, k == "b")
			}
		}
	}
}
