package httpcache

import (
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		desc   string
		values []string
		want   time.Duration
	}{
		{desc: "none", values: nil, want: 0},
		{desc: "empty", values: []string{" "}, want: 0},
		{desc: "seconds", values: []string{"3"}, want: 3 * time.Second},
		{desc: "seconds with spaces", values: []string{" 120 "}, want: 2 * time.Minute},
		{desc: "zero", values: []string{"0"}, want: 0},
		{desc: "the first line counts", values: []string{"5", "60"}, want: 5 * time.Second},
		{desc: "HTTP date", values: []string{"Sat, 01 Mar 2025 12:00:30 GMT"}, want: 30 * time.Second},
		{desc: "obsolete date form", values: []string{"Saturday, 01-Mar-25 12:01:00 GMT"}, want: time.Minute},
		{desc: "date past", values: []string{"Sat, 01 Mar 2025 11:00:00 GMT"}, want: 0},
		{desc: "negative", values: []string{"-5"}, want: 0},
		{desc: "fraction", values: []string{"1.5"}, want: 0},
		{desc: "huge", values: []string{"99999999999999999999999"}, want: maxRetryAfterSeconds * time.Second},
		{desc: "junk", values: []string{"soon"}, want: 0},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if got := RetryAfter(tc.values, now); got != tc.want {
				t.Errorf("RetryAfter(%q) = %v, want %v", tc.values, got, tc.want)
			}
		})
	}
}

var retryAfterSeeds = []string{"", "0", "3", "120", "-1", "1.5", "99999999999999999999", "Sat, 01 Mar 2025 12:00:30 GMT",
	"Saturday, 01-Mar-25 12:01:00 GMT", "Sat Mar  1 12:00:30 2025", "soon", "4294967297"}

// checkRetryAfter holds for any value: a wait is never negative, and delay-seconds never
// beyond the bound.
func checkRetryAfter(t *testing.T, s string) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	got := RetryAfter([]string{s}, now)
	if got < 0 || (allDigits(s) && got > maxRetryAfterSeconds*time.Second) {
		t.Errorf("RetryAfter(%q) = %v, want a wait of zero or more", s, got)
	}
}

func TestRetryAfterSeeds(t *testing.T) { checkStrings(t, retryAfterSeeds, checkRetryAfter) }

func FuzzRetryAfter(f *testing.F) { fuzzStrings(f, retryAfterSeeds, checkRetryAfter) }
