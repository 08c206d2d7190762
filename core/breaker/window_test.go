package breaker

import (
	"testing"
	"time"
)

func TestWindowCounts(t *testing.T) {
	tests := []struct {
		desc  string
		start time.Time
	}{
		{desc: "ordinary clock", start: t0},
		{desc: "clock before 1970", start: time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			w := newWindow(10 * time.Second)
			for i := 0; i < 10; i++ {
				now := tc.start.Add(time.Duration(i) * time.Second)
				addResult(&w, now, false, true)
				addResult(&w, now, true, false)
			}
			end := tc.start.Add(9 * time.Second)
			if got, want := w.counts(end), (Counts{OK: 10, Failures: 10, Slow: 10}); got != want {
				t.Errorf("counts() = %+v, want %+v", got, want)
			}
			// Each second further on drops the oldest bucket; a reused bucket starts afresh.
			addResult(&w, end.Add(time.Second), true, false)
			if got, want := w.counts(end.Add(time.Second)), (Counts{OK: 9, Failures: 10, Slow: 9}); got != want {
				t.Errorf("counts() a second later = %+v, want %+v", got, want)
			}
			if got := w.counts(end.Add(time.Hour)); got != (Counts{}) {
				t.Errorf("counts() an hour later = %+v, want none", got)
			}
			w.reset()
			if got := w.counts(end); got != (Counts{}) {
				t.Errorf("counts() after reset = %+v, want none", got)
			}
		})
	}
}

func TestCountsAdd(t *testing.T) {
	got := Counts{OK: 1, Failures: 2, Slow: 3}.Add(Counts{OK: 10, Failures: 20, Slow: 30})
	if want := (Counts{OK: 11, Failures: 22, Slow: 33}); got != want {
		t.Errorf("Add() = %+v, want %+v", got, want)
	}
}
