// Package setting holds what the mechanisms' Settings (core/breaker, core/limit,
// core/missrate, core/neg, core/admit) do alike with their fields: a zero field takes its
// default, a ratio is a number from 0 to 1, and a path prefix holds the paths under it; and
// what the engine's options share: path patterns (Pattern: cache.paths, cache.ttls) and
// durations counted in days (ParseDays).
//
// Int, Duration and Float are Go 1.22's cmp.Or for two values, written once per type:
// code that Traefik loads cannot use type parameters (Yaegi v0.16.1). They run when a
// mechanism is built or its settings change, never on a request's path. UnderPrefix and
// MatchPattern alone run on a request's path, and allocate nothing. The package imports the standard library
// only.
package setting

import (
	"math"
	"time"
)

// Int returns v, or def when v is zero.
func Int(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// Duration returns v, or def when v is zero.
func Duration(v, def time.Duration) time.Duration {
	if v == 0 {
		return def
	}
	return v
}

// Float returns v, or def when v is zero. A NaN is not zero: it is kept, for Validate to
// refuse.
func Float(v, def float64) float64 {
	if v == 0 {
		return def
	}
	return v
}

// IsRatio tells whether r is a number from 0 to 1 (NaN is not).
func IsRatio(r float64) bool {
	return !math.IsNaN(r) && r >= 0 && r <= 1
}

// UnderPrefix returns the index of the first of prefixes that path falls under, or -1 when
// it falls under none. prefixes are path prefixes an operator wrote (admission.protect,
// breaker.paths), which match whole segments: "/health" holds "/health" and "/health/live",
// not "/healthz". A prefix written with a trailing slash means the same as without it:
// "/api/" holds "/api" and "/api/v1". "/" holds every path.
//
// It runs on every request admission sees and every origin trip with breaker.paths set, so
// it compares the strings in place, allocating nothing compiled; it takes the whole list,
// because under Yaegi each call allocates its frame (about 25 allocations for a function of
// this size), which one call per request pays once whatever the number of prefixes.
func UnderPrefix(path string, prefixes []string) int {
	for i, p := range prefixes {
		n := len(p)
		if n > 0 && p[n-1] == '/' {
			n--
		}
		if len(path) >= n && path[:n] == p[:n] && (len(path) == n || path[n] == '/') {
			return i
		}
	}
	return -1
}
