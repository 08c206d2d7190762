package console

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// interpreted reports whether the test runs under Yaegi: there runtime.Caller sees the
// interpreter's own frames rather than this file.
func interpreted() bool {
	_, file, _, ok := runtime.Caller(0)
	return !ok || !strings.HasSuffix(file, "console_test.go")
}

// flood is how many distinct keys and samples the bounds are tested under: a million
// compiled, fewer interpreted, where a million takes minutes (the bound is the same code).
func flood() int {
	if interpreted() {
		return 5000
	}
	return 1000000
}

func TestSeriesKeepsTheLastFifteenMinutes(t *testing.T) {
	s := NewSeries([]string{"a", "b"})
	for i := int64(1); i <= 1000; i++ {
		s.Add(i, []float64{float64(i), 2 * float64(i)})
	}
	v := s.View(0)
	if len(v.Times) != SeriesLength {
		t.Fatalf("samples: got %d, want %d", len(v.Times), SeriesLength)
	}
	if v.Times[0] != 101 || v.Times[SeriesLength-1] != 1000 {
		t.Errorf("times: got %d..%d, want 101..1000", v.Times[0], v.Times[SeriesLength-1])
	}
	if v.Values[1][0] != 202 || v.Values[0][SeriesLength-1] != 1000 {
		t.Errorf("values: got b[0]=%v a[last]=%v, want 202 and 1000", v.Values[1][0], v.Values[0][SeriesLength-1])
	}
	if got := s.View(990); len(got.Times) != 11 {
		t.Errorf("View(990): got %d samples, want 11", len(got.Times))
	}
}

func TestSeriesSecondNotAfterTheLastReplacesIt(t *testing.T) {
	s := NewSeries([]string{"a"})
	s.Add(10, []float64{1})
	s.Add(10, []float64{2})
	s.Add(9, []float64{3})
	v := s.View(0)
	if len(v.Times) != 1 || v.Times[0] != 10 || v.Values[0][0] != 3 {
		t.Errorf("got times %v values %v, want [10] [[3]]", v.Times, v.Values)
	}
	if last, ok := s.Last(); !ok || last != 10 {
		t.Errorf("Last: got %d %v, want 10 true", last, ok)
	}
}

func TestSeriesMemoryIsBoundedUnderAFlood(t *testing.T) {
	s := NewSeries([]string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"})
	before := heap(t)
	n := flood()
	values := make([]float64, 10)
	for i := 1; i <= n; i++ {
		values[0] = float64(i)
		s.Add(int64(i), values)
	}
	if got := len(s.View(0).Times); got != SeriesLength {
		t.Errorf("samples after %d: got %d, want %d", n, got, SeriesLength)
	}
	if want := SeriesLength * (8 + 4*10); s.Bytes() != want {
		t.Errorf("Bytes: got %d, want %d", s.Bytes(), want)
	}
	// Under Yaegi the interpreter's own allocations drown the ring's: the heap is measured
	// compiled, the counts both ways.
	if grown := heap(t) - before; !interpreted() && grown > int64(2*s.Bytes())+64<<10 {
		t.Errorf("heap grew %d bytes over %d samples, want at most %d", grown, n, 2*s.Bytes()+64<<10)
	}
	runtime.KeepAlive(s)
}

func TestTableMemoryIsBoundedUnderAFloodOfDistinctKeys(t *testing.T) {
	hosts := NewTable(3, 128)
	paths := NewTable(2, 128)
	before := heap(t)
	n := flood()
	now := int64(1700000000)
	for i := 0; i < n; i++ {
		host := fmt.Sprintf("h%d.example.com", i)
		hosts.Note(host, now+int64(i/1000), i%3, time.Millisecond)
		paths.Note("https://"+host+"/p", now+int64(i/1000), i%2, -1)
		// One busy host among the flood.
		hosts.Note("busy.example.com", now+int64(i/1000), 0, 20*time.Millisecond)
	}
	if hosts.Len() > 128 || paths.Len() > 128 {
		t.Errorf("rows after %d keys: got %d and %d, want at most 128", n, hosts.Len(), paths.Len())
	}
	if grown := heap(t) - before; !interpreted() && grown > int64(hosts.Bytes()+paths.Bytes()) {
		t.Errorf("heap grew %d bytes over %d keys, want at most %d", grown, n, hosts.Bytes()+paths.Bytes())
	}
	end := now + int64(n/1000)
	rows, other := hosts.Rows(end, 0, 50)
	if len(rows) == 0 || rows[0].Key != "busy.example.com" {
		t.Fatalf("busiest: got %v, want busy.example.com first", rows)
	}
	if rows[0].P95 != 25*time.Millisecond {
		t.Errorf("busy's p95: got %v, want 25ms (its bucket's bound)", rows[0].P95)
	}
	if len(rows) > 50 {
		t.Errorf("rows shown: got %d, want at most 50", len(rows))
	}
	if other.Counts[1] == 0 {
		t.Errorf("other: got %v, want the flood's refusals counted", other.Counts)
	}
}

func heap(t *testing.T) int64 {
	t.Helper()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

func TestTableCountsTheLastFifteenMinutes(t *testing.T) {
	tb := NewTable(1, 4)
	tb.Note("a", 0, 0, -1)
	tb.Note("a", 60, 0, -1)
	tb.Note("a", 600, 0, -1)
	tests := []struct {
		desc string
		now  int64
		want int64
	}{
		{"all within", 700, 3},
		{"the first minute out", 900, 2},
		{"the last left", 1400, 1},
	}
	for _, tt := range tests {
		rows, _ := tb.Rows(tt.now, 0, 10)
		if len(rows) != 1 || rows[0].Counts[0] != tt.want {
			t.Errorf("%s: got %v, want a count of %d", tt.desc, rows, tt.want)
		}
	}
	if rows, _ := tb.Rows(600+WindowSeconds, 0, 10); len(rows) != 0 {
		t.Errorf("after the window: got %v, want none", rows)
	}
}

func TestTableLongKeysAreCut(t *testing.T) {
	tb := NewTable(1, 2)
	tb.Note(strings.Repeat("x", 10000), 1, 0, -1)
	rows, _ := tb.Rows(1, 0, 1)
	if len(rows) != 1 || len(rows[0].Key) != MaxKeyBytes {
		t.Errorf("got %d rows, key of %d bytes, want 1 of %d", len(rows), len(rows[0].Key), MaxKeyBytes)
	}
}

func TestQuantile(t *testing.T) {
	upper := []float64{1, 2, 4}
	tests := []struct {
		desc   string
		counts []int64
		q      float64
		want   float64
	}{
		{"nothing", []int64{0, 0, 0, 0}, 0.5, 0},
		{"the middle of the first bucket", []int64{10, 0, 0, 0}, 0.5, 0.5},
		{"within the third", []int64{0, 0, 4, 0}, 0.5, 3},
		{"past the last bound", []int64{0, 0, 0, 5}, 0.95, 4},
	}
	for _, tt := range tests {
		if got := Quantile(upper, tt.counts, tt.q); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.desc, got, tt.want)
		}
	}
}

// TestTableAddCountsSampledEvents: Add counts n events at once, weighs the key by them (a
// key sampled often stays before one counted once) and takes no latency; a count below one
// is none.
func TestTableAddCountsSampledEvents(t *testing.T) {
	tb := NewTable(2, 2)
	tb.Note("once.example.com", 10, 0, 30*time.Millisecond)
	Add(tb, "sampled.example.com", 10, 1, 61, -1)
	Add(tb, "sampled.example.com", 70, 1, 61, -1)
	Add(tb, "sampled.example.com", 70, 0, 0, -1)
	Add(tb, "sampled.example.com", 70, 0, -5, -1)
	// A third key takes the row of the least weight: once.example.com's.
	Add(tb, "third.example.com", 71, 1, 61, -1)
	rows, other := tb.Rows(80, -1, 10)
	tests := []struct {
		desc string
		got  interface{}
		want interface{}
	}{
		{"rows", len(rows), 2},
		{"first key", rows[0].Key, "sampled.example.com"},
		{"its sampled count", rows[0].Counts[1], int64(122)},
		{"its other field", rows[0].Counts[0], int64(0)},
		{"no latency from a sampled count", rows[0].P95, time.Duration(0)},
		{"second key", rows[1].Key, "third.example.com"},
		{"the replaced key's count, in other", other.Counts[0], int64(1)},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.desc, tt.got, tt.want)
		}
	}
}
