package breaker

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// t0 is the start of every test's clock.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// fixedRand returns a Rand that always returns r; 0.5 places open periods at their middle.
func fixedRand(r float64) func() float64 {
	return func() float64 { return r }
}

// newTestBreaker returns a breaker on s with a Rand fixed at 0.5 unless s sets one.
func newTestBreaker(t *testing.T, s Settings) *Breaker {
	t.Helper()
	if s.Rand == nil {
		s.Rand = fixedRand(0.5)
	}
	b, err := New("k", s)
	if err != nil {
		t.Fatalf("New() error = %v", err)
	}
	return b
}

// feed sends n fetches through b at now and records each as failed or not.
func feed(t *testing.T, b *Breaker, n int, failed bool, now time.Time) {
	t.Helper()
	for i := 0; i < n; i++ {
		p := b.Allow(now)
		if !p.Allowed {
			t.Fatalf("Allow() denied fetch %d of %d, want allowed", i+1, n)
		}
		b.Record(p, 503, failed, now)
	}
}

// tripAt opens b at now with MinRequests failures (b must use the default MinRequests).
func tripAt(t *testing.T, b *Breaker, now time.Time) {
	t.Helper()
	feed(t, b, DefaultMinRequests, true, now)
	if got := b.State(now); got != StateOpen {
		t.Fatalf("State() after %d failures = %s, want open", DefaultMinRequests, StateName(got))
	}
}

// wantState fails the test unless b is in state want at now.
func wantState(t *testing.T, b *Breaker, now time.Time, want int) {
	t.Helper()
	if got := b.State(now); got != want {
		t.Fatalf("State() = %s, want %s", StateName(got), StateName(want))
	}
}

// near reports whether got is within a microsecond of want: jitter goes through float64.
func near(got, want time.Duration) bool {
	d := got - want
	return d > -time.Microsecond && d < time.Microsecond
}

// interpreted reports whether the test runs under Yaegi: there runtime.Caller sees the
// interpreter's own frames rather than this file.
func interpreted() bool {
	_, file, _, ok := runtime.Caller(0)
	return !ok || !strings.HasSuffix(file, "helpers_test.go")
}

// checkSeeds runs check on each of a fuzz test's seeds, for where fuzzing does not run
// (yaegi test runs no fuzz test).
func checkSeeds(t *testing.T, seeds []string, check func(t *testing.T, s string)) {
	t.Helper()
	for _, s := range seeds {
		check(t, s)
	}
}

// fuzzStrings fuzzes check from seeds.
func fuzzStrings(f *testing.F, seeds []string, check func(t *testing.T, s string)) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		check(t, s)
	})
}
