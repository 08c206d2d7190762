package breaker

import "time"

// buckets is how many slices the window is cut into. Ten keeps the count within a tenth of
// the window while costing a fixed, small amount of memory per breaker (FR-CB-1).
const buckets = 10

// bucket counts the results of one slice of the window.
type bucket struct {
	// epoch numbers the slice: the time the results arrived divided by the slice width. A
	// bucket whose epoch is not the current one holds an older slice and is reset on reuse.
	epoch    int64
	ok       int
	failures int
}

// window counts fetch results over a sliding window as a ring of buckets: constant memory,
// an add is one division and one array index, a count is a walk over ten buckets. It is not
// safe for concurrent use; the Breaker's lock guards it.
type window struct {
	width int64 // nanoseconds per bucket
	b     [buckets]bucket
}

func newWindow(d time.Duration) window {
	w := int64(d) / buckets
	if w < 1 {
		w = 1
	}
	return window{width: w}
}

// addResult counts one result at now. A function rather than a method: it runs in every
// Record under the ratio rule, and in Yaegi a method call costs several times a function
// call (19 allocations a Record).
func addResult(w *window, now time.Time, failed bool) {
	// Computed inline rather than in a helper: each call costs microseconds in Yaegi.
	e := now.UnixNano() / w.width
	i := int(e % buckets)
	if i < 0 {
		i += buckets
	}
	k := &w.b[i]
	if k.epoch != e {
		k.epoch = e
		k.ok = 0
		k.failures = 0
	}
	if failed {
		k.failures++
	} else {
		k.ok++
	}
}

// counts returns the successes and failures counted in the window that ends at now.
func (w *window) counts(now time.Time) (int, int) {
	e := now.UnixNano() / w.width
	ok := 0
	failures := 0
	for i := 0; i < buckets; i++ {
		k := &w.b[i]
		if k.epoch <= e && k.epoch > e-buckets {
			ok += k.ok
			failures += k.failures
		}
	}
	return ok, failures
}

// reset forgets every result.
func (w *window) reset() {
	for i := 0; i < buckets; i++ {
		w.b[i] = bucket{}
	}
}
