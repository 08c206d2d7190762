package metrics

import (
	"strconv"
	"testing"
)

// Helpers take testing.TB: yaegi test runs every top-level func(*testing.T) as a test.

func testCounter(tb testing.TB) *Counter {
	tb.Helper()
	var r Registry
	c, err := r.Counter("weir_test_total", "A counter.")
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func testHistogram(tb testing.TB) *Histogram {
	tb.Helper()
	var r Registry
	h, err := r.Histogram("weir_test_seconds", "A histogram.", DurationBuckets())
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

// benchRegistry is a registry of the size Weir's will have.
func benchRegistry(tb testing.TB) *Registry {
	tb.Helper()
	r := &Registry{}
	_, err := r.CounterFamily("weir_requests_total", "Requests by outcome.", []string{"outcome"},
		[][]string{{"hit"}, {"stale"}, {"miss"}, {"pass"}, {"negative"}, {"shed"}})
	if err != nil {
		tb.Fatal(err)
	}
	_, err = r.HistogramFamily("weir_request_duration_seconds", "Request durations by outcome.", []string{"outcome"},
		[][]string{{"hit"}, {"miss"}, {"pass"}}, DurationBuckets())
	if err != nil {
		tb.Fatal(err)
	}
	_, err = r.Gauge("weir_store_entries", "Entries stored.")
	if err != nil {
		tb.Fatal(err)
	}
	samples := make([]Sample, 100)
	for i := range samples {
		samples[i] = Sample{Values: []string{"host" + strconv.Itoa(i) + ".example"}, Value: float64(i % 3)}
	}
	err = r.Collect(Collected{Name: "weir_breaker_state", Help: "Breaker state by scope key.", Kind: KindGauge,
		Labels: []string{"key"}, Collect: func() []Sample { return samples }})
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// discard is an io.Writer that keeps nothing.
type discard struct{ n int }

func (d *discard) Write(p []byte) (int, error) {
	d.n += len(p)
	return len(p), nil
}
