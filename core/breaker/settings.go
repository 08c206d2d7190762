package breaker

import (
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"time"

	"github.com/weirproxy/weir/core/setting"
)

// Defaults applied to zero Settings fields.
const (
	// DefaultWindow is how far back fetch results count (FR-CB-1).
	DefaultWindow = 10 * time.Second
	// DefaultMinRequests is how many completed fetches the window must hold before the breaker
	// may open (FR-CB-2): a handful of failures on a quiet route says little.
	DefaultMinRequests = 20
	// DefaultFailureRatio is the share of failed fetches that opens the breaker (FR-CB-2).
	DefaultFailureRatio = 0.5
	// DefaultOpenFor is how long a breaker stays open after it first trips (FR-CB-3).
	DefaultOpenFor = 5 * time.Second
	// DefaultMaxOpenFor caps the doubling of the open period after failed probes (FR-CB-4).
	DefaultMaxOpenFor = 60 * time.Second
	// DefaultJitter spreads open periods by up to 20% either way, so that breakers that
	// opened together (a fleet sharing a deadline, many hosts behind one origin) do not all
	// probe at the same instant.
	DefaultJitter = 0.2
	// DefaultProbeTimeout is how long a probe may stay out before another is let through. The
	// engine releases every probe it abandons, so this is a backstop; set it to the origin
	// timeout plus a margin.
	DefaultProbeTimeout = 30 * time.Second
	// DefaultMaxBreakers bounds a Group, so that a flood of host names cannot grow memory
	// without bound.
	DefaultMaxBreakers = 10000
	// DefaultSlowCallRatio is the share of slow calls that opens the breaker, once SlowCall
	// is set.
	DefaultSlowCallRatio = 0.5
	// DefaultProbes is how many probes in a row must succeed before a half-open breaker
	// closes: one, the first probe's success closes it.
	DefaultProbes = 1
	// DefaultProbeInterval spaces the probes of a half-open breaker that needs more than one:
	// long enough that a probe sees the origin after the one before it, short enough that
	// recovery costs a few seconds.
	DefaultProbeInterval = time.Second
)

// Scopes: which fetches share a breaker.
const (
	// ScopeEngine gives the whole engine one breaker: every upstream fails together.
	ScopeEngine = "engine"
	// ScopeHost gives each upstream host its own breaker: the default, since one middleware
	// is often attached to the routers of many hosts (one Docker label each), and one failing
	// backend must not refuse the requests of a healthy one.
	ScopeHost = "host"
	// ScopeDomain gives each registrable domain its own breaker (see ScopeKey).
	ScopeDomain = "domain"
)

// ProbeRetryAfter is the wait a half-open breaker reports while its probe is out: the probe's
// answer may close the breaker at any moment.
const ProbeRetryAfter = time.Second

// Errors returned by this package.
var (
	// ErrInvalidSetting wraps every Settings and Override validation error, and every error
	// of ParseOverride.
	ErrInvalidSetting = errors.New("invalid setting")
	// ErrTooManyKeys is returned by Group.Declare and Group.SetOverride for a new key when
	// MaxBreakers keys are declared or overridden already.
	ErrTooManyKeys = errors.New("too many declared or overridden keys")
)

// Settings tune a breaker. The zero value of every field selects its default.
type Settings struct {
	// Window is how far back fetch results count. Zero: DefaultWindow. At least 10ms.
	// Results are counted in ten buckets, so a result counts for between nine and ten tenths
	// of the window.
	Window time.Duration
	// MinRequests is how many completed fetches the window must hold before the breaker may
	// open. Zero: DefaultMinRequests.
	MinRequests int
	// FailureRatio is the share of failed fetches, at or above which the breaker opens.
	// Zero: DefaultFailureRatio. At most 1.
	FailureRatio float64
	// MaxFailures, when above zero, opens the breaker once the window holds this many
	// failures, whatever their share of the results and however few results there were
	// (MinRequests does not apply): the rule for an origin whose every failure is costly, or
	// that is called too seldom for a ratio to mean anything. It adds to the ratio rules;
	// whichever is met first opens the breaker. Zero: off, only the ratios open it. Unused
	// under ConsecutiveFailures.
	MaxFailures int
	// OpenFor is how long the breaker stays open when it first trips. Zero: DefaultOpenFor.
	OpenFor time.Duration
	// MaxOpenFor caps the open period, which doubles after each failed probe.
	// Zero: DefaultMaxOpenFor. Not less than OpenFor.
	MaxOpenFor time.Duration
	// Jitter is the fraction by which each open period is varied at random, either way.
	// Zero: DefaultJitter. Less than 1. For no jitter, inject a Rand that returns 0.5.
	Jitter float64
	// ProbeTimeout is how long a probe may stay out without a result before another probe is
	// let through. Zero: DefaultProbeTimeout.
	ProbeTimeout time.Duration
	// Scope is ScopeEngine, ScopeHost or ScopeDomain (see ParseScope). Empty: ScopeHost.
	// The breaker itself ignores it; the engine uses it with ScopeKey and a Group.
	Scope string
	// MaxBreakers bounds how many breakers a Group holds for the traffic it sees (the least
	// recently used closed one goes first) and, apart from those, how many keys an operator
	// may declare or override (Group.Declare, Group.SetOverride), which are never evicted.
	// Zero: DefaultMaxBreakers.
	MaxBreakers int
	// ConsecutiveFailures, when above zero, is the trip rule instead of the ratio: the
	// breaker opens after this many failures in a row, however few results there were, and
	// a success starts the count again; Window, MinRequests, FailureRatio and MaxFailures
	// are then unused.
	// Suited to a dependency every call of which should succeed (Weir's shared store), where
	// waiting for MinRequests results would pay one timeout per request for as long. Under
	// this rule a closed breaker with no failure counted lets fetches through without its
	// lock and needs no Record of a success (Quiet). Zero: the ratio rule.
	ConsecutiveFailures int
	// SlowCall, when above zero, makes a result that took longer a slow call: with
	// MinRequests results in the window and at least SlowCallRatio of them slow, the breaker
	// opens, successes or not, so that a browned-out origin is stopped before its calls time
	// out; and a probe that slow counts as failed. Zero: no call is slow.
	SlowCall time.Duration
	// SlowCallRatio is the share of slow calls, at or above which the breaker opens. Zero:
	// DefaultSlowCallRatio. At most 1. Unused while SlowCall is zero.
	SlowCallRatio float64
	// Probes is how many probes in a row must succeed before a half-open breaker closes; a
	// failed one opens it again. Zero: DefaultProbes.
	Probes int
	// ProbeInterval is the time from a probe's success to the next probe, varied by Jitter
	// either way so that a fleet does not probe in step; between probes requests are still
	// refused. Zero: DefaultProbeInterval. Unused while Probes is 1.
	ProbeInterval time.Duration

	// Rand returns a number in [0, 1) that places each open period, and each probe interval,
	// within its jitter.
	// Nil: math/rand. Tests inject a fixed source.
	Rand func() float64
	// OnTrip, when not nil, is called each time a breaker opens on its own (a trip, a failed
	// probe or ForceOpen; not Observe), outside any lock, with the breaker's key and its new
	// open deadline, so that the engine can share the deadline with other instances. It must
	// not block: hand the deadline to a goroutine that writes it to the shared store, and let
	// a store error leave the breaker working locally.
	OnTrip func(key string, openUntil time.Time)
}

// ParseScope returns the scope named by s (case-insensitive; empty selects ScopeHost), or
// an error naming the value.
func ParseScope(s string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case ScopeEngine:
		return ScopeEngine, nil
	case "", ScopeHost:
		return ScopeHost, nil
	case ScopeDomain:
		return ScopeDomain, nil
	}
	return "", fmt.Errorf("breaker.scope: %q must be one of engine, host, domain: %w", s, ErrInvalidSetting)
}

// Validate reports the first setting out of range, naming the field and its value.
func (s Settings) Validate() error {
	if err := s.validateFields(); err != nil {
		return err
	}
	d := s.withDefaults()
	return checkMaxOpenFor(d.OpenFor, d.MaxOpenFor)
}

// validateFields reports the first field out of range on its own; Validate and
// Override.Validate then check fields against each other.
func (s Settings) validateFields() error {
	checks := []struct {
		ok    bool
		field string
		value interface{}
		rule  string
	}{
		{s.Window == 0 || s.Window >= 10*time.Millisecond, "breaker.window", s.Window, "must be at least 10ms"},
		{s.MinRequests >= 0, "breaker.minRequests", s.MinRequests, ruleNotNegative},
		{setting.IsRatio(s.FailureRatio), "breaker.failureRatio", s.FailureRatio, ruleRatio},
		{s.MaxFailures >= 0, "breaker.maxFailures", s.MaxFailures, ruleNotNegative},
		{s.OpenFor >= 0, "breaker.openFor", s.OpenFor, ruleNotNegative},
		{s.MaxOpenFor >= 0, "breaker.maxOpenFor", s.MaxOpenFor, ruleNotNegative},
		{setting.IsRatio(s.Jitter) && s.Jitter < 1, "breaker.jitter", s.Jitter, "must be at least 0 and less than 1"},
		{s.ProbeTimeout >= 0, "breaker.probeTimeout", s.ProbeTimeout, ruleNotNegative},
		{s.MaxBreakers >= 0, "breaker.maxBreakers", s.MaxBreakers, ruleNotNegative},
		{s.ConsecutiveFailures >= 0, "breaker.consecutiveFailures", s.ConsecutiveFailures, ruleNotNegative},
		{s.SlowCall >= 0, "breaker.slowCall", s.SlowCall, ruleNotNegative},
		{setting.IsRatio(s.SlowCallRatio), "breaker.slowCallRatio", s.SlowCallRatio, ruleRatio},
		{s.Probes >= 0, "breaker.probes", s.Probes, ruleNotNegative},
		{s.ProbeInterval >= 0, "breaker.probeInterval", s.ProbeInterval, ruleNotNegative},
	}
	for _, c := range checks {
		if !c.ok {
			return fmt.Errorf("%s: %v %s: %w", c.field, c.value, c.rule, ErrInvalidSetting)
		}
	}
	_, err := ParseScope(s.Scope)
	return err
}

// The rules of validateFields, as its errors state them.
const (
	ruleNotNegative = "must not be negative"
	ruleRatio       = "must be between 0 and 1"
)

// checkMaxOpenFor reports a cap on the open period below the period it caps.
func checkMaxOpenFor(openFor, maxOpenFor time.Duration) error {
	if maxOpenFor < openFor {
		return fmt.Errorf("breaker.maxOpenFor: %v must not be less than breaker.openFor (%v): %w", maxOpenFor, openFor, ErrInvalidSetting)
	}
	return nil
}

// withDefaults returns s with every zero field set to its default. It is the one place
// defaults are applied.
func (s Settings) withDefaults() Settings {
	s.Window = setting.Duration(s.Window, DefaultWindow)
	s.MinRequests = setting.Int(s.MinRequests, DefaultMinRequests)
	s.FailureRatio = setting.Float(s.FailureRatio, DefaultFailureRatio)
	s.OpenFor = setting.Duration(s.OpenFor, DefaultOpenFor)
	s.MaxOpenFor = setting.Duration(s.MaxOpenFor, DefaultMaxOpenFor)
	s.Jitter = setting.Float(s.Jitter, DefaultJitter)
	s.ProbeTimeout = setting.Duration(s.ProbeTimeout, DefaultProbeTimeout)
	s.MaxBreakers = setting.Int(s.MaxBreakers, DefaultMaxBreakers)
	s.SlowCallRatio = setting.Float(s.SlowCallRatio, DefaultSlowCallRatio)
	s.Probes = setting.Int(s.Probes, DefaultProbes)
	s.ProbeInterval = setting.Duration(s.ProbeInterval, DefaultProbeInterval)
	scope, err := ParseScope(s.Scope)
	if err != nil {
		scope = ScopeHost
	}
	s.Scope = scope
	if s.Rand == nil {
		// A closure rather than the function itself keeps Yaegi from storing a compiled
		// symbol in an interpreted func field.
		s.Rand = func() float64 { return rand.Float64() }
	}
	return s
}
