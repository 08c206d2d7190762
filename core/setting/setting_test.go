package setting

import (
	"math"
	"runtime"
	"strings"
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

func TestUnderPrefix(t *testing.T) {
	tests := []struct {
		desc         string
		path, prefix string
		want         bool
	}{
		{desc: "the prefix itself", path: "/health", prefix: "/health", want: true},
		{desc: "a path below it", path: "/health/live", prefix: "/health", want: true},
		{desc: "its directory", path: "/health/", prefix: "/health", want: true},
		{desc: "a longer segment", path: "/healthz", prefix: "/health", want: false},
		{desc: "a shorter path", path: "/heal", prefix: "/health", want: false},
		{desc: "another path", path: "/api", prefix: "/health", want: false},
		{desc: "trailing slash: the bare path", path: "/api", prefix: "/api/", want: true},
		{desc: "trailing slash: its directory", path: "/api/", prefix: "/api/", want: true},
		{desc: "trailing slash: a path below", path: "/api/v1/users", prefix: "/api/", want: true},
		{desc: "trailing slash: a longer segment", path: "/apis", prefix: "/api/", want: false},
		{desc: "a deeper prefix", path: "/api/v1/users", prefix: "/api/v1", want: true},
		{desc: "a deeper prefix, a longer segment", path: "/api/v10", prefix: "/api/v1", want: false},
		{desc: "the root holds every path", path: "/anything", prefix: "/", want: true},
		{desc: "the root holds itself", path: "/", prefix: "/", want: true},
		{desc: "case counts", path: "/Health", prefix: "/health", want: false},
		{desc: "an empty path", path: "", prefix: "/health", want: false},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if got := UnderPrefix(tc.path, []string{tc.prefix}) == 0; got != tc.want {
				t.Errorf("UnderPrefix(%q, %q) = %v, want %v", tc.path, tc.prefix, got, tc.want)
			}
		})
	}
}

func TestUnderPrefixFirst(t *testing.T) {
	prefixes := []string{"/search/deep", "/checkout", "/search", "/"}
	tests := []struct {
		desc, path string
		want       int
	}{
		{desc: "the first that holds it", path: "/search/deep/x", want: 0},
		{desc: "a later one", path: "/search/x", want: 2},
		{desc: "the root last", path: "/other", want: 3},
	}
	for _, tc := range tests {
		if got := UnderPrefix(tc.path, prefixes); got != tc.want {
			t.Errorf("%s: UnderPrefix(%q, %q) = %d, want %d", tc.desc, tc.path, prefixes, got, tc.want)
		}
	}
	if got := UnderPrefix("/x", nil); got != -1 {
		t.Errorf("UnderPrefix(%q, nil) = %d, want -1", "/x", got)
	}
	if got := UnderPrefix("/x", []string{"/y", "/z/"}); got != -1 {
		t.Errorf("UnderPrefix(%q, [/y /z/]) = %d, want -1", "/x", got)
	}
}

func TestUnderPrefixAllocatesNothing(t *testing.T) {
	if interpreted() {
		t.Skip("allocation counts measure the interpreter under Yaegi")
	}
	prefixes := []string{"/health", "/api/"}
	if n := testing.AllocsPerRun(100, func() { UnderPrefix("/api/v1/users", prefixes) }); n != 0 {
		t.Errorf("UnderPrefix allocates %v times a call, want 0", n)
	}
}

func BenchmarkUnderPrefix(b *testing.B) {
	prefixes := []string{"/health", "/ready/"}
	for i := 0; i < b.N; i++ {
		UnderPrefix("/api/v1/users", prefixes)
	}
}

// interpreted reports whether the test runs under Yaegi: there runtime.Caller sees the
// interpreter's own frames rather than this file.
func interpreted() bool {
	_, file, _, ok := runtime.Caller(0)
	return !ok || !strings.HasSuffix(file, "setting_test.go")
}
