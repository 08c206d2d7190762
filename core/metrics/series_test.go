package metrics

import (
	"testing"
	"time"
)

func TestCounter(t *testing.T) {
	c := testCounter(t)
	c.Inc()
	c.Add(5)
	c.Add(-3) // ignored: a counter never goes down
	c.Add(0)
	Inc(c)
	Add(c, 2)
	Add(c, -7)
	if got, want := c.Value(), int64(9); got != want {
		t.Errorf("Value() = %d, want %d", got, want)
	}
}

func TestGauge(t *testing.T) {
	var r Registry
	g, err := r.Gauge("weir_test_waiting", "A gauge.")
	if err != nil {
		t.Fatal(err)
	}
	g.Set(10)
	g.Add(-3)
	if got, want := g.Value(), int64(7); got != want {
		t.Errorf("Value() = %d, want %d", got, want)
	}
	f, err := r.FloatGauge("weir_test_ratio", "A float gauge.")
	if err != nil {
		t.Fatal(err)
	}
	f.Set(0.25)
	f.Add(0.5)
	f.Add(-1)
	if got, want := f.Value(), -0.25; got != want {
		t.Errorf("FloatGauge Value() = %v, want %v", got, want)
	}
}

// TestConcurrentUpdates updates every kind of series from several goroutines at once, for the
// race detector and for lost updates.
func TestConcurrentUpdates(t *testing.T) {
	c := testCounter(t)
	h := testHistogram(t)
	var r Registry
	g, err := r.FloatGauge("weir_test_ratio", "A float gauge.")
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 4, 500
	done := make(chan struct{})
	for w := 0; w < workers; w++ {
		go func() {
			for i := 0; i < each; i++ {
				Inc(c)
				ObserveDuration(h, time.Millisecond)
				h.Observe(0.5)
				g.Add(1)
			}
			done <- struct{}{}
		}()
	}
	for w := 0; w < workers; w++ {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("updating series hangs")
		}
	}
	if got, want := c.Value(), int64(workers*each); got != want {
		t.Errorf("counter = %d, want %d", got, want)
	}
	if got, want := g.Value(), float64(workers*each); got != want {
		t.Errorf("float gauge = %v, want %v", got, want)
	}
	if got, want := totalCount(h), int64(2*workers*each); got != want {
		t.Errorf("histogram count = %d, want %d", got, want)
	}
	if got, want := h.sum(), float64(workers*each)*(0.001+0.5); got != want {
		t.Errorf("histogram sum = %v, want %v", got, want)
	}
}

func totalCount(h *Histogram) int64 {
	var n int64
	for _, c := range h.counts {
		n += c
	}
	return n
}
