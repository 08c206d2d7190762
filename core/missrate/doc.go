// Package missrate is Weir's miss-rate detector: it sees a flood of distinct cache keys on one
// path (a cache-busting query flood, or a tracking parameter missing from a key's queryDrop
// list) that turns the cache into a pass-through, reports it, and on request stops it.
//
// It knows nothing of HTTP caching. The engine hands it a partition (scheme, host and path,
// without the query) for every lookup, through Hit or Miss, with the raw query of misses; and,
// with throttling on, asks AllowFetch before a miss goes to the origin.
//
// # Counting (FR-MR-1)
//
// Lookups and misses are counted in Slots (64) counters, whatever the number of paths, so
// memory does not grow with traffic. A partition picks its slot by a hash keyed with a seed of
// its own Detector (hash/maphash, run compiled, where an FNV-1a loop over the bytes would
// run interpreted, byte by byte). Each slot also keeps a bounded
// sample of query parameter names (at most 16, each with a 64-bit set of value hashes) and two
// partition strings.
//
// What the 64 counters can and cannot tell apart:
//   - Two busy paths in one slot add their counts. A mixed slot looks anomalous only if the
//     combined counts cross the thresholds: a flooded path sharing a slot with a path of many
//     hits may go unseen until the flood outweighs the hits; two paths that both miss a lot
//     (say 300 misses each, nothing cached) look like one flood. An Anomaly's counts are the
//     slot's, not the partition's.
//   - The flag names one partition: the one most of the slot's misses came from (a majority
//     vote over a sample of the window's misses). A quiet path sharing a slot with a flooded
//     one is never flagged for the flood's misses, nor throttled, since a throttle decision
//     checks the partition's full hash and string.
//   - Which paths share a slot changes with each process (the hash seed is random), so a
//     collision cannot be aimed at, and one that hides a flood does not last past a restart.
//
// # Anomalies (FR-MR-2)
//
// A slot whose window holds at least MinMisses misses, with misses at least Ratio of its
// lookups, raises an Anomaly: Miss returns it once, when the partition goes from normal to
// anomalous, and the engine emits a miss_rate_anomaly event and one warning log from it. The
// Anomaly names the partition, the counts, the window and the query parameters that took the
// most distinct values among sampled misses, so the log line says which parameter to add to
// queryDrop. The sample is taken from half of MinMisses on, one miss in MinMisses/48 (one in
// 10 by default), from the slot's majority partition, at most 64 queries a window.
//
// Windows are fixed, per slot, and read from the caller's clock: no goroutine, no timer. A
// window starts at the first miss after the previous one ended, and again when an anomaly is
// raised. A flood that straddles two windows is seen once one window alone holds MinMisses.
//
// # Throttling
//
// With Throttle set, an anomalous partition gets at most one origin fetch per window from the
// moment it was flagged; AllowFetch refuses its other misses with the time left in the window,
// and the engine serves stale if allowed, otherwise 503 with Retry-After. When a window ends
// the partition stays flagged, with a fresh fetch allowance, if that window qualified again
// and its misses came mostly from that partition; otherwise the flag clears (so throttling
// ends one to two windows after the flood), and a later flood is a new anomaly. Misses that
// AllowFetch refuses still count, so a throttled flood stays visible. Without Throttle the
// same flag only keeps an anomaly from being reported twice.
//
// # Bypass (FR-MR-3)
//
// Without Throttle, and unless NoBypass is set, a flagged partition's keys go past the cache
// until they are asked for a second time: Bypass answers true for a key's first miss, which
// the engine sends to the origin as a pass-through, neither stored nor coalesced, and counts
// with Miss all the same. Which keys were asked is kept in an 8 KiB Bloom filter of two
// hashes, started over once 4,096 keys are in (bypass.go). Flags gives the engine a count to
// load before calling Bypass, so that a miss while nothing floods costs no call.
//
// A path whose answers are never stored misses on every lookup and looks like a flood: the
// engine should count only lookups that could have hit, not requests it passes through.
//
// # Cost
//
// Weir runs in Traefik's Yaegi interpreter, where calls, not integer steps, cost: each
// interpreted call, and each call into compiled code, is paid for, and a function's whole
// body is set up on every call whichever branch runs. So
// Hit, Miss and AllowFetch are small package functions, not methods, and the rare steps live
// in functions of their own. A hit costs one keyed hash and one atomic add; a miss one hash,
// one clock conversion, one lock and a few integer steps, and the vote, the query sample and
// the threshold check only for the judged misses of a slot past half of MinMisses; AllowFetch
// one atomic load while no slot is flagged. bench_test.go measures each.
//
// # Wiring
//
//	d, err := missrate.New(settings) // once per engine; kept across reloads
//	...
//	if hit {
//		missrate.Hit(d, partition)
//	} else if a := missrate.Miss(d, partition, r.URL.RawQuery, now); a != nil {
//		// emit miss_rate_anomaly and log one warning, outside any lock of the engine's
//	}
//	if !hit && nothingStored && atomic.LoadInt32(missrate.Flags(d)) != 0 &&
//		missrate.Bypass(d, partition, key, now) {
//		// count it with missrate.Miss, then send it to the origin past the cache
//	}
//	if !hit && leadsTheFetch && throttle { // a flight's followers cost the origin nothing
//		if ok, wait := missrate.AllowFetch(d, partition, now); !ok {
//			// serve stale if allowed, else 503 with Retry-After: wait rounded up to seconds
//		}
//	}
package missrate
