package breaker

import (
	"sort"
	"time"
)

// Who opened a breaker, as Status.OpenedBy says.
const (
	// OpenedAuto: the breaker tripped on its own results, or its probe failed.
	OpenedAuto = "auto"
	// OpenedManual: an operator opened it (ForceOpen).
	OpenedManual = "manual"
	// OpenedShared: it adopted a deadline another instance shared (Observe).
	OpenedShared = "shared"
)

// Status is a snapshot of a breaker for metrics, the admin page and tests.
type Status struct {
	Key   string
	State int
	// OpenUntil is the open deadline; zero once a probe or an operator has closed the breaker.
	// In the half-open state it is the deadline that has passed.
	OpenUntil time.Time
	// OpenLeft is the time left until OpenUntil while the breaker is open; zero otherwise.
	OpenLeft time.Duration
	// OpenedBy is who opened the breaker (OpenedAuto, OpenedManual, OpenedShared), kept
	// while it is half-open; empty while it is closed.
	OpenedBy string
	// LastFailure is the HTTP status of the last failure recorded, kept across closing;
	// 0 for none.
	LastFailure int
	// TripOK and TripFailures are the window's counts when the failure ratio last tripped
	// the breaker; zero before it ever did.
	TripOK, TripFailures int
	// OK and Failures are the results counted in the window (only while closed). Under
	// ConsecutiveFailures, Failures is the current run of failures and OK is zero.
	OK       int
	Failures int
	// Trips counts the times this breaker opened on its own: trips and failed probes, not
	// ForceOpen nor Observe.
	Trips uint64
	// Declared says that the breaker's Group holds it whatever its use, because its key was
	// declared or overridden (Group.Declare, Group.SetOverride): it is never evicted. Set by
	// Group.Snapshot; a breaker does not know it.
	Declared bool

	// Window, MinRequests, FailureRatio, OpenFor and MaxOpenFor are the parameters in force.
	Window       time.Duration
	MinRequests  int
	FailureRatio float64
	OpenFor      time.Duration
	MaxOpenFor   time.Duration
	// Override marks which of them are the key's own: each non-zero field overrides the
	// group's default and equals the parameter in force.
	Override Override
}

// Status returns a snapshot of the breaker at now.
func (b *Breaker) Status(now time.Time) Status {
	b.mu.Lock()
	st := Status{
		Key: b.key, State: b.state(now), OpenUntil: b.openUntil, OpenedBy: b.opener,
		LastFailure: b.lastFailure, Trips: b.trips, TripOK: b.tripOK, TripFailures: b.tripFailures,
		Window: b.s.Window, MinRequests: b.s.MinRequests, FailureRatio: b.s.FailureRatio,
		OpenFor: b.s.OpenFor, MaxOpenFor: b.s.MaxOpenFor, Override: b.ov,
	}
	if st.State == StateOpen {
		st.OpenLeft = b.openUntil.Sub(now)
	}
	if !b.tripped {
		if b.s.ConsecutiveFailures > 0 {
			st.Failures = b.run
		} else {
			st.OK, st.Failures = b.win.counts(now)
		}
	}
	b.mu.Unlock()
	return st
}

// Snapshot returns the status of every breaker of g, declared ones among them, ordered by
// key.
func (g *Group) Snapshot(now time.Time) []Status {
	g.mu.Lock()
	bs := make([]*Breaker, 0, len(g.nodes))
	declared := make([]bool, 0, len(g.nodes))
	for _, n := range g.nodes {
		bs = append(bs, n.b)
		declared = append(declared, n.pinned)
	}
	g.mu.Unlock()
	out := make([]Status, len(bs))
	for i, b := range bs {
		out[i] = b.Status(now)
		out[i].Declared = declared[i]
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}
