package metrics

import (
	"sync/atomic"
	"testing"
	"time"
)

// What counting costs on the request path. Compiled, every form below is a few nanoseconds.
// Under Yaegi (YAEGI_TEST_FLAGS="-run ^$ -bench . -benchmem" scripts/yaegi-test.sh
// core/metrics) they differ by far more: a method call on an interpreted type goes through a
// reflect.MakeFunc wrapper, a function call allocates its frame, and the atomic add written
// out is one call into compiled code.

// BenchmarkAtomicAddInt64 is the baseline: an atomic add on a variable of the benchmark's own.
func BenchmarkAtomicAddInt64(b *testing.B) {
	var n int64
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		atomic.AddInt64(&n, 1)
	}
}

// BenchmarkCounterInc is the method, c.Inc().
func BenchmarkCounterInc(b *testing.B) {
	c := testCounter(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.Inc()
	}
}

// BenchmarkCounterIncFunc is the function, Inc(c).
func BenchmarkCounterIncFunc(b *testing.B) {
	c := testCounter(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Inc(c)
	}
}

// BenchmarkCounterIncInline is the atomic add written out on the exported field.
func BenchmarkCounterIncInline(b *testing.B) {
	c := testCounter(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		atomic.AddInt64(&c.N, 1)
	}
}

// BenchmarkCounterIncFamily counts on a counter taken from a fixed family's slice, as the
// engine would index it with a constant per outcome.
func BenchmarkCounterIncFamily(b *testing.B) {
	var r Registry
	cs, err := r.CounterFamily("weir_requests_total", "Requests.", []string{"outcome"},
		[][]string{{"hit"}, {"stale"}, {"miss"}, {"pass"}, {"negative"}, {"shed"}})
	if err != nil {
		b.Fatal(err)
	}
	const miss = 2
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		atomic.AddInt64(&cs[miss].N, 1)
	}
}

// BenchmarkHistogramObserve is the method with a duration in the middle of the default
// buckets (the seventh of twelve).
func BenchmarkHistogramObserve(b *testing.B) {
	h := testHistogram(b)
	const d = 200 * time.Millisecond
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.ObserveDuration(d)
	}
}

// BenchmarkHistogramObserveFunc is the function, ObserveDuration(h, d).
func BenchmarkHistogramObserveFunc(b *testing.B) {
	benchmarkObserveDuration(b, 200*time.Millisecond)
}

// BenchmarkHistogramObserveFast is ObserveDuration(h, d) with a duration in the first bucket,
// as a hit served from memory takes.
func BenchmarkHistogramObserveFast(b *testing.B) {
	benchmarkObserveDuration(b, 300*time.Microsecond)
}

// benchmarkObserveDuration is ObserveDuration(h, d) on a fresh histogram.
func benchmarkObserveDuration(b *testing.B, d time.Duration) {
	h := testHistogram(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ObserveDuration(h, d)
	}
}

// BenchmarkHistogramObserveFloat is Observe with a float64, which adds to the sum with a
// compare-and-swap loop.
func BenchmarkHistogramObserveFloat(b *testing.B) {
	h := testHistogram(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.Observe(0.2)
	}
}

// BenchmarkWriteText writes a registry of the size Weir's will have: a few families, one
// collected with 100 series.
func BenchmarkWriteText(b *testing.B) {
	r := benchRegistry(b)
	var w discard
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := r.WriteText(&w); err != nil {
			b.Fatal(err)
		}
	}
}
