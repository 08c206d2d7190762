// Package core is Weir's engine: it composes the store, coalescing and the origin
// protections into an http.Handler placed in front of the next handler (the origin), and
// holds the HTTP caching semantics: keys, freshness, Vary, validation and Cache-Status.
//
// Engines live in a process-wide registry keyed by middleware name, so that the cache and the
// flight table survive Traefik's configuration reloads.
//
// One package, since interfaces between packages on the request path cost under Yaegi; its
// files follow a request through it (ARCHITECTURE.md):
//
//   - front.go: admission and request budgets, before any lookup;
//   - handler.go: New, and ServeHTTP's fresh hit from local memory;
//   - lookup.go: the general path's lookup (Vary, the shared store) and storing;
//   - miss.go: a miss's leader and followers, background refreshes, delivering a result;
//   - fetch.go: the cache's own origin fetch and what it stores;
//   - buckets.go: cache.paths and cache.ttls, which paths are stored and with which default
//     freshness, read by the fetch;
//   - gate.go: the one way to the origin (the breaker, pacing, an origin slot);
//   - pass.go: pass-through, hit-for-pass and unsafe methods, with the client's own writer;
//   - answer.go: the one writer of Weir's answers;
//   - shed.go: refusals, the reasons the protections register, and their answer;
//   - protect_<name>.go: one protection each (its settings, its check, its reasons);
//   - engine.go, settings.go, stores.go: what a middleware is built of, across reloads;
//   - fleet_*.go: what instances sharing a store share (breakers, budgets, the control
//     record, window counts);
//   - operator.go, operator_purge.go: the admin's view and actions, and purging;
//   - console.go, operator_console.go: the admin's overview (core/console): the series
//     sampled once a second, the busiest hosts and partitions, the events kept, a URL's
//     entry, the fleet;
//   - telemetry.go, eventlog.go: metrics and event lines; warm.go: warming.
package core
