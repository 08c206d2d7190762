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
				addResult(&w, now, false)
				addResult(&w, now, true)
			}
			end := tc.start.Add(9 * time.Second)
			if ok, failures := w.counts(end); ok != 10 || failures != 10 {
				t.Errorf("counts() = %d, %d, want 10, 10", ok, failures)
			}
			// Each second further on drops the oldest bucket; a reused bucket starts afresh.
			addResult(&w, end.Add(time.Second), true)
			if ok, failures := w.counts(end.Add(time.Second)); ok != 9 || failures != 10 {
				t.Errorf("counts() a second later = %d, %d, want 9, 10", ok, failures)
			}
			if ok, failures := w.counts(end.Add(time.Hour)); ok != 0 || failures != 0 {
				t.Errorf("counts() an hour later = %d, %d, want 0, 0", ok, failures)
			}
			w.reset()
			if ok, failures := w.counts(end); ok != 0 || failures != 0 {
				t.Errorf("counts() after reset = %d, %d, want 0, 0", ok, failures)
			}
		})
	}
}
