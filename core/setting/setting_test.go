package setting

import (
	"math"
	"testing"
	"time"
)

func TestOrDefault(t *testing.T) {
	if got := Int(0, 7); got != 7 {
		t.Errorf("Int(0, 7) = %d, want 7", got)
	}
	if got := Int(-1, 7); got != -1 {
		t.Errorf("Int(-1, 7) = %d, want -1 (left for Validate)", got)
	}
	if got := Duration(0, time.Second); got != time.Second {
		t.Errorf("Duration(0, 1s) = %v, want 1s", got)
	}
	if got := Duration(time.Millisecond, time.Second); got != time.Millisecond {
		t.Errorf("Duration(1ms, 1s) = %v, want 1ms", got)
	}
	if got := Float(0, 0.5); got != 0.5 {
		t.Errorf("Float(0, 0.5) = %v, want 0.5", got)
	}
	if got := Float(0.25, 0.5); got != 0.25 {
		t.Errorf("Float(0.25, 0.5) = %v, want 0.25", got)
	}
	if got := Float(math.NaN(), 0.5); !math.IsNaN(got) {
		t.Errorf("Float(NaN, 0.5) = %v, want NaN", got)
	}
}

func TestIsRatio(t *testing.T) {
	tests := []struct {
		r    float64
		want bool
	}{
		{0, true},
		{0.5, true},
		{1, true},
		{-0.1, false},
		{1.1, false},
		{math.NaN(), false},
		{math.Inf(1), false},
	}
	for _, tc := range tests {
		if got := IsRatio(tc.r); got != tc.want {
			t.Errorf("IsRatio(%v) = %v, want %v", tc.r, got, tc.want)
		}
	}
}
