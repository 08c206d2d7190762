// Package metrics holds Weir's metrics and writes them in the Prometheus text exposition
// format, version 0.0.4. Traefik runs Weir in Yaegi, which cannot load the Prometheus client
// library, and Traefik's own metrics cannot carry a plugin's: so Weir counts for itself, and
// an admin endpoint serves what WriteText writes with ContentType.
//
// # Series
//
// A Counter, a Gauge, a FloatGauge and a Histogram are one series each, updated with atomic
// operations and no lock. A family with labels comes in one of two shapes, so that every
// label value is bounded:
//   - Fixed: every combination of label values is declared when the family is registered
//     (CounterFamily, GaugeFamily, HistogramFamily), which hands out one pre-built series per
//     combination, in the order declared. The request path updates the series it holds: no map
//     lookup, no string built.
//   - Collected: a function the registry calls while it writes (Registry.Collect) returns the
//     family's samples, such as breaker state per scope key. At most Collected.Limit distinct
//     values of its first label are written; the others are summed under the value "other".
//
// # The request path under Yaegi
//
// In Yaegi a method call on an interpreted type costs several times a function call, and
// each call allocates a frame for every value of the callee (docs/yaegi.md). So a Counter
// and a Gauge export their value, N, and the request path counts with the atomic add written
// out, atomic.AddInt64(&c.N, 1): one call into compiled code, and no interpreted frame as
// the function Inc(c) has, nor the wrapper of the method c.Inc(). A duration is observed with
// the function ObserveDuration(h, d), not the method (bench_test.go measures each form). The
// methods are there for compiled callers and work off the request path.
//
// # Locks and collect functions
//
// The registry's lock guards its list of families only. WriteText copies that list under
// the lock and releases it before it reads any series or calls any collect function: a
// collect function is the engine's, may take the engine's locks, and may even register a
// family; it must never run under the registry's lock. A collect function that panics makes
// WriteText return an error wrapping ErrCollect; the other families are written all the same.
//
// # Names
//
// Names are checked when a family is registered, with an error wrapping ErrInvalid that names
// the metric: metric and label names match [a-zA-Z_][a-zA-Z0-9_]* (no colons: those belong
// to recording rules), label names do not start with "__", a counter's name ends in _total
// and no other's does, a histogram's does not end in _bucket, _sum or _count nor has a label
// named le, and names speak of base units (seconds, bytes), not milliseconds or megabytes. The
// weir_ prefix is the caller's to add. Two families whose written names would meet (a
// histogram x and a gauge x_count) are refused with ErrDuplicate.
package metrics
