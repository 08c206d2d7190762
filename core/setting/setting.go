// Package setting holds what the mechanisms' Settings (core/breaker, core/limit,
// core/missrate, core/neg, core/admit) do alike with their fields: a zero field takes its
// default, and a ratio is a number from 0 to 1.
//
// Int, Duration and Float are Go 1.22's cmp.Or for two values, written once per type:
// code that Traefik loads cannot use type parameters (Yaegi v0.16.1). They run when a
// mechanism is built or its settings change, never on a request's path. The package imports
// the standard library only.
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
