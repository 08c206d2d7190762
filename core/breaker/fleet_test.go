package breaker

import (
	"testing"
	"time"
)

// The other instances' counts are added to the window's: a fleet that each instance sees a
// part of opens at its ratio; without them (the store failing) each judges its own.
func TestFleetCountsOpenAtTheFleetsRatio(t *testing.T) {
	tests := []struct {
		desc  string
		fleet Counts
		want  int
	}{
		{desc: "half the failures here, half elsewhere", fleet: Counts{Failures: 10}, want: StateOpen},
		{desc: "elsewhere healthy", fleet: Counts{OK: 30, Failures: 10}, want: StateClosed},
		{desc: "slow elsewhere", fleet: Counts{OK: 10, Slow: 10}, want: StateOpen},
		{desc: "no fleet: local counts alone", want: StateClosed},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			b := newTestBreaker(t, Settings{SlowCall: time.Second})
			b.SetFleetCounts(tc.fleet)
			feed(t, b, 10, tc.fleet.Slow == 0, t0)
			if tc.fleet.Slow > 0 {
				feedTimed(t, b, 1, false, 2*time.Second, t0)
			}
			wantState(t, b, t0, tc.want)
		})
	}
}

// A group hands each breaker the fleet's counts for its key and clears the others'; closing
// a breaker clears its fleet counts until the next call.
func TestGroupFleetCounts(t *testing.T) {
	g := newTestGroup(t, Settings{})
	a := g.Get("a", t0)
	b := g.Get("b", t0)
	feed(t, a, 5, true, t0)
	if got := g.WindowCounts(t0); len(got) != 1 || got["a"] != (Counts{Failures: 5}) {
		t.Fatalf("WindowCounts() = %+v, want a's 5 failures only", got)
	}
	g.SetFleetCounts(map[string]Counts{"a": {Failures: 15}, "c": {Failures: 99}})
	if _, ok := g.Lookup("c"); ok {
		t.Errorf("SetFleetCounts() made a breaker for c")
	}
	feed(t, b, 1, true, t0)
	wantState(t, b, t0, StateClosed)
	a.RecordCall(a.Allow(t0), 503, true, 0, 0, t0)
	wantState(t, a, t0, StateOpen)
	a.ForceClose(t0)
	feed(t, a, 1, true, t0)
	wantState(t, a, t0, StateClosed)
	g.SetFleetCounts(nil)
	if a.fleet != (Counts{}) || b.fleet != (Counts{}) {
		t.Errorf("fleet counts after SetFleetCounts(nil) = %+v, %+v; want none", a.fleet, b.fleet)
	}
}
