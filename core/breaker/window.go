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
	// slow counts the results, successes and failures alike, slower than Settings.SlowCall.
	slow int
}

// Counts are a window's results: the breaker's trip rules read nothing else, so counts from
// elsewhere (other instances sharing a store) can be added to a breaker's own (Add) and
// judged alike (Breaker.Counts, Settings.Trips).
type Counts struct {
	OK       int
	Failures int
	// Slow counts the results, of both kinds, slower than Settings.SlowCall.
	Slow int
}

// Add returns the sum of c and o.
func (c Counts) Add(o Counts) Counts {
	return Counts{OK: c.OK + o.OK, Failures: c.Failures + o.Failures, Slow: c.Slow + o.Slow}
}

// window counts fetch results over a sliding window as a ring of buckets: constant memory,
// an add is one division and one array index, a count is a walk over ten buckets. It is not
// safe for concurrent use; the Breaker's lock guards it.
type window struct {
	width int64 // nanoseconds per bucket
	// b holds buckets buckets. A slice, not an array: under Yaegi `&w.b[i]` of an array
	// field takes a slot of the whole array on every result recorded (docs/yaegi.md).
	b []bucket
}

func newWindow(d time.Duration) window {
	w := int64(d) / buckets
	if w < 1 {
		w = 1
	}
	return window{width: w, b: make([]bucket, buckets)}
}

// addResult counts one result at now. A function rather than a method: it runs in every
// Record under the ratio rule, and in Yaegi a method call costs several times a function
// call.
func addResult(w *window, now time.Time, failed, slow bool) {
	// Computed inline rather than in a helper: in Yaegi each call allocates its frame.
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
		k.slow = 0
	}
	if failed {
		k.failures++
	} else {
		k.ok++
	}
	if slow {
		k.slow++
	}
}

// counts returns the results counted in the window that ends at now.
func (w *window) counts(now time.Time) Counts {
	e := now.UnixNano() / w.width
	var c Counts
	for i := 0; i < buckets; i++ {
		k := &w.b[i]
		if k.epoch <= e && k.epoch > e-buckets {
			c.OK += k.ok
			c.Failures += k.failures
			c.Slow += k.slow
		}
	}
	return c
}

// reset forgets every result.
func (w *window) reset() {
	for i := 0; i < buckets; i++ {
		w.b[i] = bucket{}
	}
}
