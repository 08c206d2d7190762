package metrics

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestHistogramBuckets(t *testing.T) {
	upper := []float64{0.001, 0.1, 1}
	tests := []struct {
		desc     string
		duration time.Duration // observed with ObserveDuration when value is not set
		value    float64
		float    bool
		bucket   int
	}{
		{desc: "duration below the first bound", duration: 300 * time.Microsecond, bucket: 0},
		{desc: "duration on a bound belongs to it", duration: time.Millisecond, bucket: 0},
		{desc: "duration just past a bound", duration: time.Millisecond + 1, bucket: 1},
		{desc: "duration of zero", duration: 0, bucket: 0},
		{desc: "negative duration", duration: -time.Second, bucket: 0},
		{desc: "duration on the last bound", duration: time.Second, bucket: 2},
		{desc: "duration past every bound", duration: time.Hour, bucket: 3},
		{desc: "value on a bound", value: 0.1, float: true, bucket: 1},
		{desc: "value between bounds", value: 0.5, float: true, bucket: 2},
		{desc: "value past every bound", value: 7, float: true, bucket: 3},
		{desc: "infinite value", value: math.Inf(1), float: true, bucket: 3},
		{desc: "NaN", value: math.NaN(), float: true, bucket: 3},
		{desc: "negative value", value: -2, float: true, bucket: 0},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			var r Registry
			h, err := r.Histogram("weir_test_seconds", "A histogram.", upper)
			if err != nil {
				t.Fatal(err)
			}
			if tt.float {
				h.Observe(tt.value)
			} else {
				h.ObserveDuration(tt.duration)
			}
			for i, c := range h.counts {
				want := int64(0)
				if i == tt.bucket {
					want = 1
				}
				if c != want {
					t.Errorf("bucket %d holds %d, want %d", i, c, want)
				}
			}
		})
	}
}

func TestHistogramSum(t *testing.T) {
	h := testHistogram(t)
	ObserveDuration(h, 1500*time.Millisecond)
	h.ObserveDuration(250 * time.Millisecond)
	h.Observe(0.125)
	if got, want := h.sum(), 1.875; got != want {
		t.Errorf("sum = %v, want %v", got, want)
	}
}

// TestHistogramSumMoves checks that the nanoseconds summed move into the float sum before
// they could overflow, and that nothing is lost on the way.
func TestHistogramSumMoves(t *testing.T) {
	h := testHistogram(t)
	h.sumNanos = sumNanosMax - int64(time.Second)
	ObserveDuration(h, 2*time.Second)
	if h.sumNanos != 0 {
		t.Errorf("sumNanos = %d after passing sumNanosMax, want 0", h.sumNanos)
	}
	want := float64(sumNanosMax+int64(time.Second)) / 1e9
	if got := h.sum(); got != want {
		t.Errorf("sum = %v, want %v", got, want)
	}
	ObserveDuration(h, time.Second)
	if got := h.sum(); got != want+1 {
		t.Errorf("sum = %v, want %v", got, want+1)
	}
}

func TestNewBounds(t *testing.T) {
	tests := []struct {
		desc  string
		upper []float64
		le    []string // empty when an error is wanted
	}{
		{desc: "no bounds: the +Inf bucket alone", upper: nil, le: []string{`le="+Inf"}`}},
		{desc: "bounds as written", upper: []float64{0.005, 1, 2.5, 1e6}, le: []string{`le="0.005"}`, `le="1"}`, `le="2.5"}`, `le="1000000"}`, `le="+Inf"}`}},
		{desc: "a final +Inf is the implicit one", upper: []float64{1, math.Inf(1)}, le: []string{`le="1"}`, `le="+Inf"}`}},
		{desc: "negative bounds", upper: []float64{-1, 0}, le: []string{`le="-1"}`, `le="0"}`, `le="+Inf"}`}},
		{desc: "decreasing", upper: []float64{1, 0.5}},
		{desc: "repeated", upper: []float64{1, 1}},
		{desc: "NaN", upper: []float64{math.NaN()}},
		{desc: "-Inf", upper: []float64{math.Inf(-1), 1}},
		{desc: "+Inf not last", upper: []float64{math.Inf(1), math.Inf(1)}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			b, err := newBounds("weir_test_seconds", tt.upper)
			if len(tt.le) == 0 {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("newBounds(%v) error = %v, want ErrInvalid", tt.upper, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("newBounds(%v): %v", tt.upper, err)
			}
			if got, want := len(b.le), len(tt.le); got != want {
				t.Fatalf("len(le) = %d, want %d", got, want)
			}
			for i := range tt.le {
				if b.le[i] != tt.le[i] {
					t.Errorf("le[%d] = %s, want %s", i, b.le[i], tt.le[i])
				}
			}
		})
	}
}

func TestDurationBucketsAreFresh(t *testing.T) {
	a := DurationBuckets()
	a[0] = 99
	if b := DurationBuckets(); b[0] == 99 {
		t.Error("DurationBuckets returned a slice another caller changed")
	}
}
