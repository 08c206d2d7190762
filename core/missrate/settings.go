package missrate

import (
	"fmt"
	"math"
	"time"

	"github.com/weirproxy/weir/core/setting"
)

// Defaults applied to zero Settings fields (FR-MR-2).
const (
	DefaultWindow    = 10 * time.Second
	DefaultMinMisses = 500
	DefaultRatio     = 0.9

	// MaxWindow bounds Window: counts older than a day say nothing of a flood.
	MaxWindow = 24 * time.Hour
)

// Slots is the fixed number of counters that every partition hashes into (FR-MR-1). It is a
// power of two so that a slot is picked with a mask.
const Slots = 64

// Settings tune the detector. The zero value is ready to use: it reports anomalies with the
// default thresholds, throttles nothing, and sends an anomalous partition's first miss of
// each key past the cache (Bypass).
type Settings struct {
	// Window is the length of a counting window, and of the throttle period that follows an
	// anomaly. Zero: DefaultWindow (10s). Negative or over MaxWindow (24h): rejected.
	Window time.Duration
	// MinMisses is how many misses a partition needs within one window before its miss ratio
	// is considered. Zero: DefaultMinMisses (500). Negative: rejected.
	MinMisses int
	// Ratio is the share of a partition's lookups that must be misses, once MinMisses is
	// reached, for an anomaly. Zero: DefaultRatio (0.9). Outside 0..1: rejected.
	Ratio float64
	// Throttle makes AllowFetch refuse all but one origin fetch per window for an anomalous
	// partition. False: anomalies are only reported.
	Throttle bool
	// NoBypass keeps every miss of an anomalous partition on the cache's path
	// (missRate.bypass: false). False: Bypass sends a key's first miss past the cache,
	// unless Throttle is set, which holds the partition's misses tighter.
	NoBypass bool
}

// Validate reports the first invalid field, named as in Weir's configuration.
func (s Settings) Validate() error {
	if s.Window < 0 {
		return fmt.Errorf("missRate.window: %v must not be negative", s.Window)
	}
	if s.Window > MaxWindow {
		return fmt.Errorf("missRate.window: %v must be at most %v", s.Window, MaxWindow)
	}
	if s.MinMisses < 0 {
		return fmt.Errorf("missRate.minMisses: %d must not be negative", s.MinMisses)
	}
	if !setting.IsRatio(s.Ratio) {
		return fmt.Errorf("missRate.ratio: %v must be between 0 and 1", s.Ratio)
	}
	return nil
}

// withDefaults is the one place where zero fields take their defaults.
func (s Settings) withDefaults() Settings {
	s.Window = setting.Duration(s.Window, DefaultWindow)
	s.MinMisses = setting.Int(s.MinMisses, DefaultMinMisses)
	s.Ratio = setting.Float(s.Ratio, DefaultRatio)
	return s
}

// ratioScale turns the ratio into an integer so that the hot path compares integers:
// misses*ratioScale >= ratio*requests.
const ratioScale = 1000000

func scaledRatio(r float64) int64 {
	return int64(math.Round(r * ratioScale))
}

// judgeFrom and judgeEvery space out the rare steps of the miss path (FR-MR-1 keeps the common
// one to a lock and a few integer steps): a slot's misses are judged (the query sampled, the
// thresholds checked) from half of MinMisses on, every judgeEvery misses, and at MinMisses
// itself. That gives about 24 query samples before a flood is reported, enough to tell a
// parameter that takes a new value on every request from one that takes a few.
func judgeFrom(minMisses int) int64 {
	if minMisses < 2 {
		return 1
	}
	return int64(minMisses / 2)
}

func judgeEvery(minMisses int) int64 {
	if minMisses < 48 {
		return 1
	}
	return int64(minMisses / 48)
}
