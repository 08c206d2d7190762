package metrics

import (
	"fmt"
	"math"
	"sort"
	"sync/atomic"
	"time"
)

// Histogram counts observations in buckets with fixed upper bounds, and keeps their sum.
// Only a Histogram handed out by a Registry is written.
//
// Each observation adds one to one bucket (the first whose bound it does not exceed) and adds
// to the sum; the cumulative counts of the exposition, and _count, are summed when the
// histogram is written, so the +Inf bucket always equals _count. The sum is updated apart from
// the buckets: a scrape racing an observation may see the count without its share of the sum.
type Histogram struct {
	// sumNanos is the sum of the durations observed, in nanoseconds. A duration is added with
	// one atomic add; the sum moves into sumBits before it could overflow. First field, for
	// alignment.
	sumNanos int64
	// sumBits holds math.Float64bits of the sum of the values observed with Observe, and of
	// what sumNanos moved there, in the bounds' unit.
	sumBits uint64
	// counts holds one count per bucket, not cumulative, the +Inf bucket last.
	counts []int64
	// upper and nanos are b's, held here to spare the request path a selector.
	upper []float64
	nanos []float64
	b     *bounds
}

// bounds are a histogram's upper bounds, shared by every histogram of a family.
type bounds struct {
	upper []float64 // increasing, finite; the +Inf bucket is implicit
	// nanos are the bounds times 1e9: nanoseconds when the bounds are seconds, for
	// ObserveDuration, which need not divide.
	nanos []float64
	// le holds, per bucket, `le="<bound>"}` with the +Inf bucket last, ready to write.
	le []string
}

// sumNanosMax is where ObserveDuration moves sumNanos into sumBits: about 36 years of
// summed durations, far from the 292 at which an int64 of nanoseconds overflows.
const sumNanosMax = 1 << 60

// Observe records v, in the unit of the histogram's bounds. It adds to the sum with a
// compare-and-swap loop: on the request path, durations take ObserveDuration, which does not.
func (h *Histogram) Observe(v float64) {
	// sort.SearchFloat64s runs compiled: the first bound not below v, or the +Inf bucket
	// (for NaN too).
	atomic.AddInt64(&h.counts[sort.SearchFloat64s(h.upper, v)], 1)
	addFloat(&h.sumBits, v)
}

// ObserveDuration records d in seconds (the histogram's bounds are seconds). Under Yaegi the
// function ObserveDuration(h, d) costs less (doc.go).
func (h *Histogram) ObserveDuration(d time.Duration) { ObserveDuration(h, d) }

// ObserveDuration records d in h, in seconds: the method's work as a function, which Yaegi
// calls for less (doc.go). One compiled search, two atomic adds. A negative d (a clock
// stepping back) counts in the first bucket and takes from the sum: it is not checked for, to
// keep the frame small.
func ObserveDuration(h *Histogram, d time.Duration) {
	atomic.AddInt64(&h.counts[sort.SearchFloat64s(h.nanos, float64(d))], 1)
	if atomic.AddInt64(&h.sumNanos, int64(d)) > sumNanosMax {
		moveNanos(h)
	}
}

// moveNanos moves what sumNanos holds into sumBits. Concurrent adds to sumNanos stay there; a
// scrape in between sees the sum short of what moved, for the moment of two atomic operations
// once every 36 years of durations summed.
func moveNanos(h *Histogram) {
	n := atomic.LoadInt64(&h.sumNanos)
	atomic.AddInt64(&h.sumNanos, -n)
	addFloat(&h.sumBits, float64(n)/1e9)
}

// sum returns the sum of every observation.
func (h *Histogram) sum() float64 {
	return math.Float64frombits(atomic.LoadUint64(&h.sumBits)) + float64(atomic.LoadInt64(&h.sumNanos))/1e9
}

// DurationBuckets returns upper bounds in seconds for request durations: 1ms to 10s, the
// Prometheus client's defaults with 1ms added below them, for hits served from memory.
func DurationBuckets() []float64 {
	return []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
}

// newBounds checks upper (increasing, no NaN or -Inf; a final +Inf is dropped, as every
// histogram has one) and prepares it for observing and writing.
func newBounds(name string, upper []float64) (*bounds, error) {
	if n := len(upper); n > 0 && math.IsInf(upper[n-1], 1) {
		upper = upper[:n-1]
	}
	b := &bounds{upper: make([]float64, len(upper)), nanos: make([]float64, len(upper)), le: make([]string, len(upper)+1)}
	for i, u := range upper {
		if math.IsNaN(u) || math.IsInf(u, 0) {
			return nil, fmt.Errorf("metric %q: bucket bound %v is not a finite number: %w", name, u, ErrInvalid)
		}
		if i > 0 && u <= upper[i-1] {
			return nil, fmt.Errorf("metric %q: bucket bounds must increase, %v follows %v: %w", name, u, upper[i-1], ErrInvalid)
		}
		b.upper[i] = u
		b.nanos[i] = u * 1e9
		b.le[i] = `le="` + string(appendFloat(nil, u)) + `"}`
	}
	b.le[len(upper)] = `le="+Inf"}`
	return b, nil
}

// Buckets appends the histogram's count in each bucket (not cumulative, the +Inf bucket
// last) to dst, each read atomically, for a reader that takes differences over time (the
// admin's series).
func (h *Histogram) Buckets(dst []int64) []int64 {
	for i := range h.counts {
		dst = append(dst, atomic.LoadInt64(&h.counts[i]))
	}
	return dst
}

// Upper returns the histogram's finite upper bounds, in its unit; the +Inf bucket follows
// them.
func (h *Histogram) Upper() []float64 { return h.upper }
