package clocktest

import (
	"testing"
	"time"
)

func TestClockMovesByHandOnly(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := New(start)
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("Now() = %v, want the start %v", got, start)
	}
	c.Add(90 * time.Second)
	c.Add(-30 * time.Second)
	if got, want := c.Now(), start.Add(time.Minute); !got.Equal(want) {
		t.Errorf("Now() after +90s and -30s = %v, want %v", got, want)
	}
}
