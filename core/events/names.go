package events

// The events, as their lines name them (event=). Each comment says when the engine emits it
// and the fields it passes, in this order, after time, level, event and middleware. A field
// that does not apply to one occurrence is left out, never written empty. Each name has its
// level in levels, below.
const (
	// BreakerOpened: an origin breaker opened on its own, a trip of a closed breaker or a
	// failed probe.
	// Fields: scope (Str, the breaker's scope key, with its breaker.paths prefix if any),
	// reason (Str: "failure-ratio", "max-failures", "slow-calls", "retry-after",
	// "probe-failed" or "probe-slow"), then by reason:
	//   - failure-ratio: ratio (Float, the window's failure ratio), failures and requests
	//     (Int, the results the window counted);
	//   - max-failures: failures and requests (Int, as for failure-ratio), window (Dur,
	//     breaker.window, what the failures were counted over);
	//   - slow-calls: ratio (Float, the window's share of slow calls), slow and requests
	//     (Int), slow_call (Dur, breaker.slowCall);
	//   - retry-after: status (Int, the origin's 429 or 503), retry_after (Dur, the wait it
	//     asked for, capped at breaker.maxOpenFor), whether a trip or a probe's answer;
	//   - probe-failed, probe-slow: nothing more;
	// and last open_for (Dur, the open period, jitter included).
	BreakerOpened = "breaker_opened"
	// BreakerHalfOpen: an open breaker's deadline passed and it let a probe through.
	// Fields: scope (Str), open_for (Dur, how long it was open).
	BreakerHalfOpen = "breaker_half_open"
	// BreakerClosed: a probe succeeded and the breaker closed.
	// Fields: scope (Str).
	BreakerClosed = "breaker_closed"
	// BreakerOpenedByHand: an operator opened a breaker.
	// Fields: scope (Str), open_for (Dur).
	BreakerOpenedByHand = "breaker_opened_by_hand"
	// BreakerClosedByHand: an operator closed a breaker.
	// Fields: scope (Str).
	BreakerClosedByHand = "breaker_closed_by_hand"
	// PacingSet: an operator set or changed the pace of a host or domain; it wins over the
	// configuration's until cleared.
	// Fields: name (Str), rate (Str, such as "3/10s"), configured (Str, the configuration's
	// rate for the name, "off" for none).
	PacingSet = "pacing_set"
	// PacingCleared: an operator cleared their pace of a host or domain: the configuration's
	// is back in force, if any.
	// Fields: name (Str), configured (Str, as for PacingSet).
	PacingCleared = "pacing_cleared"
	// StoreBreakerOpened: the shared store's breaker opened; answers are kept in this
	// instance's memory until it closes (store.Fallback).
	// Fields: error (Str, the last store error).
	StoreBreakerOpened = "store_breaker_opened"
	// StoreBreakerClosed: a probe of the shared store succeeded; lookups use it again, and
	// what this instance kept in its memory meanwhile is dropped.
	// Fields: none.
	StoreBreakerClosed = "store_breaker_closed"
	// NearCacheLost: the shared store's invalidation tracking stopped; the near copies are
	// dropped and every lookup asks the shared store until it is back (answers it cannot
	// take are kept in this instance's memory meanwhile).
	// Fields: error (Str).
	NearCacheLost = "near_cache_lost"
	// NearCacheBack: tracking is up again and the near cache in use, emptied of what was kept
	// while it was lost.
	// Fields: none.
	NearCacheBack = "near_cache_back"
	// MissRateAnomaly: a partition's misses turned into a flood (missrate.Anomaly), once per
	// anomaly.
	// Fields: partition (Str), requests and misses (Int), window (Dur), varying (Str, the
	// query parameters that varied most, comma-separated; left out when none did),
	// throttled (Bool).
	MissRateAnomaly = "miss_rate_anomaly"
	// ConfigApplied: a middleware's configuration took effect.
	// Fields: reload (Bool, the middleware existed and was reconfigured), cache_kept (Bool,
	// its stored entries were kept).
	ConfigApplied = "config_applied"
	// ConfigRejected: a configuration was refused; the middleware keeps what it had, or is
	// not built.
	// Fields: error (Str, naming the field and its value).
	ConfigRejected = "config_rejected"
	// Shed: requests refused by the origin gate or the detector, summed by a Summary, at
	// most one line every ShedEvery.
	// Fields: count (Int), interval (Dur, from the first shed the line counts to the line),
	// reasons (Str, "reason:count" pairs by falling count, space-separated, e.g.
	// "queue-full:12 miss-rate:3").
	Shed = "shed"
	// WarmStarted: a warming run began (warm.*).
	// Fields: reason (Str: "start", the engine started with a new store; "config", warm.*
	// changed; "purge", everything was purged), urls (Int, the hosts times the paths).
	WarmStarted = "warm_started"
	// WarmFailed: a warm URL was not stored: it answered anything but 2xx or 3xx, a 2xx or
	// 3xx the cache may not store, or no answer.
	// Fields: url (Str, scheme, host and path), status (Int, the origin's; left out when
	// none came), reason (Str: why there was no answer, such as "circuit-open" or
	// "background-busy" when the gate kept it from the origin, or why it was not stored;
	// left out for a plain status).
	WarmFailed = "warm_failed"
	// WarmDone: a warming run ended, within warm.timeout.
	// Fields: reason (Str, as warm_started's), stored, fresh (already stored and fresh: not
	// fetched), unstored, failed, refused (kept from the origin by the gate), busy (a
	// fetch of the URL was under way), timed_out (not fetched within warm.timeout) (Int),
	// took (Dur).
	WarmDone = "warm_done"
	// AdminAuthFailed: a client presented a wrong admin token (by the Authorization header
	// or the sign-in form) or a session cookie Weir did not make, to the admin or with
	// PURGE. One line per failure, which the brake bounds: an address is held back after
	// admin.BrakeFailures of them in a minute, and what it sends meanwhile is not checked.
	// Fields: client (Str, the connection's address; an IPv6 one as its /64), way (Str:
	// "bearer", "cookie" or "form"), failures (Int, the address's failures in the brake's
	// current minute, this one included), throttled (Bool, they reached the limit: the
	// address's next attempts get 429 until the minute ends).
	AdminAuthFailed = "admin_auth_failed"
	// Purged: an operator purged through the admin (a URL, a prefix, a host, a tag or
	// everything).
	// Fields: what (Str: "url", "prefix", "host", "tag" or "all"), value (Str, what was named;
	// left out for all), dropped (Int, the entries dropped; -1 when the store cannot tell).
	Purged = "purged"
)

// The levels of event lines (level=), by how much an operator should care: info for what
// Weir or an operator did as intended, warn for a fault of the origin or the store that Weir
// works around and for requests it refused, error for what an operator must fix. Plain
// strings: a named string type is not told apart from string inside an interface under
// Yaegi v0.16.1 (docs/yaegi.md).
const (
	LevelInfo  = "info"
	LevelWarn  = "warn"
	LevelError = "error"
)

// levels gives each event its level, here beside the names so that a name and its level are
// defined together and no caller chooses one. Emit reads it once a line: one map read, where
// a function would cost an interpreted call and a switch a comparison for each case before
// the one that matches. TestEveryEventHasALevel holds it to the names above, and
// TestLevelsDocumented to docs/operations.md's Events.
var levels = map[string]string{
	// A breaker that opens on its own keeps requests from a failing origin.
	BreakerOpened:       LevelWarn,
	BreakerHalfOpen:     LevelInfo,
	BreakerClosed:       LevelInfo,
	BreakerOpenedByHand: LevelInfo,
	BreakerClosedByHand: LevelInfo,
	PacingSet:           LevelInfo,
	PacingCleared:       LevelInfo,
	// The shared store failing or its tracking lost: this instance serves from its own
	// memory until it is back.
	StoreBreakerOpened: LevelWarn,
	StoreBreakerClosed: LevelInfo,
	NearCacheLost:      LevelWarn,
	NearCacheBack:      LevelInfo,
	// A cache-busting flood of misses (FR-MR-2), throttled or not.
	MissRateAnomaly: LevelWarn,
	ConfigApplied:   LevelInfo,
	// The only event that needs an operator: the configuration they wrote is not in force.
	ConfigRejected: LevelError,
	// Requests refused: visitors got a 503 or a 429.
	Shed:        LevelWarn,
	WarmStarted: LevelInfo,
	WarmFailed:  LevelWarn,
	WarmDone:    LevelInfo,
	// Someone is trying tokens, or an operator's script holds an old one.
	AdminAuthFailed: LevelWarn,
	Purged:          LevelInfo,
}

// Level returns the level of the event name: LevelInfo for a name that is not one of this
// package's, which TestEveryEventHasALevel keeps from happening.
func Level(name string) string {
	if level, ok := levels[name]; ok {
		return level
	}
	return LevelInfo
}
