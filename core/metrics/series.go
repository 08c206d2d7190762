package metrics

import (
	"math"
	"sync/atomic"
)

// Counter is a count that only goes up: requests, bytes, refusals. Only a Counter handed out by
// a Registry is written.
type Counter struct {
	// N is the count, read and written only with sync/atomic. It is exported so that the
	// engine's fresh-hit path can count with atomic.AddInt64(&c.N, 1) written out, which
	// under Yaegi calls no interpreted function (bench_test.go). Nothing may subtract from
	// it. It is the first field: 64-bit atomic operations need 8-byte alignment on 32-bit
	// platforms, which Go guarantees for the first word of an allocated struct.
	N int64
}

// Inc adds one to c.
func (c *Counter) Inc() { atomic.AddInt64(&c.N, 1) }

// Add adds n to c; n below zero is ignored, since a counter never goes down.
func (c *Counter) Add(n int64) {
	if n > 0 {
		atomic.AddInt64(&c.N, n)
	}
}

// Value returns c's count.
func (c *Counter) Value() int64 { return atomic.LoadInt64(&c.N) }

// Inc adds one to c: the method's work as a function, which Yaegi calls for less (doc.go).
func Inc(c *Counter) { atomic.AddInt64(&c.N, 1) }

// Add adds n to c, ignoring n below zero: the method's work as a function (doc.go).
func Add(c *Counter, n int64) {
	if n > 0 {
		atomic.AddInt64(&c.N, n)
	}
}

// Gauge is an integer that goes up and down: entries stored, requests waiting, bytes held.
type Gauge struct {
	// N is the value, read and written only with sync/atomic; exported for the same reason
	// as Counter.N. First field, for alignment.
	N int64
}

// Set sets g to v.
func (g *Gauge) Set(v int64) { atomic.StoreInt64(&g.N, v) }

// Add adds d (which may be negative) to g.
func (g *Gauge) Add(d int64) { atomic.AddInt64(&g.N, d) }

// Value returns g's value.
func (g *Gauge) Value() int64 { return atomic.LoadInt64(&g.N) }

// FloatGauge is a gauge whose value is not a whole number, such as a ratio.
type FloatGauge struct {
	bits uint64 // math.Float64bits of the value; first field, for alignment
}

// Set sets g to v.
func (g *FloatGauge) Set(v float64) { atomic.StoreUint64(&g.bits, math.Float64bits(v)) }

// Add adds d (which may be negative) to g.
func (g *FloatGauge) Add(d float64) { addFloat(&g.bits, d) }

// Value returns g's value.
func (g *FloatGauge) Value() float64 { return math.Float64frombits(atomic.LoadUint64(&g.bits)) }

// addFloat adds d to the float64 whose bits p holds: there is no atomic add for floats, so it
// retries a compare-and-swap until no other add came between its load and its swap.
func addFloat(p *uint64, d float64) {
	for {
		old := atomic.LoadUint64(p)
		sum := math.Float64bits(math.Float64frombits(old) + d)
		if atomic.CompareAndSwapUint64(p, old, sum) {
			return
		}
	}
}
