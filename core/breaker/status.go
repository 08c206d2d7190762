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
	// TripOK, TripFailures and TripSlow are the window's counts when a ratio (of failures
	// or of slow calls) or MaxFailures last tripped the breaker; zero before one ever did.
	TripOK, TripFailures, TripSlow int
	// TripReason is why the breaker last opened on its own (ReasonFailureRatio,
	// ReasonMaxFailures, ReasonSlowCalls, ReasonRetryAfter, ...); empty before it ever did.
	// TripRetryAfter is the origin's wait that it obeyed then, capped at MaxOpenFor; zero for
	// other reasons.
	TripReason     string
	TripRetryAfter time.Duration
	// OK, Failures and Slow are the results counted in the window (only while closed). Under
	// ConsecutiveFailures, Failures is the current run of failures and OK is zero.
	OK       int
	Failures int
	Slow     int
	// ProbesOK is how many probes in a row succeeded while half-open, of Probes.
	ProbesOK int
	// Trips counts the times this breaker opened on its own: trips and failed probes, not
	// ForceOpen nor Observe.
	Trips uint64
	// Declared says that the breaker's Group holds it whatever its use, because its key was
	// declared or overridden (Group.Declare, Group.SetOverride): it is never evicted. Set by
	// Group.Snapshot; a breaker does not know it.
	Declared bool

	// Params are the parameters in force, every field set (SlowCall zero: off).
	Params Override
	// Override marks which of them are the key's own: each non-zero field overrides the
	// group's default and equals the parameter in force.
	Override Override
}

// Status returns a snapshot of the breaker at now.
func (b *Breaker) Status(now time.Time) Status {
	b.mu.Lock()
	st := Status{
		Key: b.key, State: b.state(now), OpenUntil: b.openUntil, OpenedBy: b.opener,
		LastFailure: b.lastFailure, Trips: b.trips, TripOK: b.tripCounts.OK, TripFailures: b.tripCounts.Failures,
		TripSlow: b.tripCounts.Slow, TripReason: b.tripReason, TripRetryAfter: b.tripRetryAfter, ProbesOK: b.probeOK,
		Params: b.s.Params(), Override: b.ov,
	}
	if st.State == StateOpen {
		st.OpenLeft = b.openUntil.Sub(now)
	}
	if !b.tripped {
		if b.s.ConsecutiveFailures > 0 {
			st.Failures = b.run
		} else {
			c := b.win.counts(now)
			st.OK = c.OK
			st.Failures = c.Failures
			st.Slow = c.Slow
		}
	}
	b.mu.Unlock()
	return st
}

// Counts returns the results b's window holds at now: none while b is open or half-open,
// or under ConsecutiveFailures. What an instance would share of its breaker with others.
func (b *Breaker) Counts(now time.Time) Counts {
	b.mu.Lock()
	var c Counts
	if !b.tripped && b.s.ConsecutiveFailures == 0 {
		c = b.win.counts(now)
	}
	b.mu.Unlock()
	return c
}

// SetFleetCounts sets the other instances' counts for b's key, which the ratio rules and
// MaxFailures add to b's own window's (zero: b's own alone). They are judged as a result is
// recorded: a fleet whose ratio or count has crossed opens each instance's breaker at its
// next failure or slow call.
// Closing b clears them until the next call.
func (b *Breaker) SetFleetCounts(c Counts) {
	b.mu.Lock()
	b.fleet = c
	b.mu.Unlock()
}

// WindowCounts returns the counts of every breaker of g whose window holds a result at now,
// by key: what an instance shares with the others (Breaker.Counts).
func (g *Group) WindowCounts(now time.Time) map[string]Counts {
	g.mu.Lock()
	bs := make([]*Breaker, 0, len(g.nodes))
	for _, n := range g.nodes {
		bs = append(bs, n.b)
	}
	g.mu.Unlock()
	out := make(map[string]Counts)
	for _, b := range bs {
		if c := b.Counts(now); c != (Counts{}) {
			out[b.key] = c
		}
	}
	return out
}

// SetFleetCounts gives each breaker of g the other instances' counts for its key in m, and
// zero to those m does not name (nil m: every breaker judges its own counts alone, as when
// the shared store fails). Keys of m without a breaker here make none: an instance that saw
// no result for a key has nothing to record against it.
func (g *Group) SetFleetCounts(m map[string]Counts) {
	g.mu.Lock()
	bs := make([]*Breaker, 0, len(g.nodes))
	for _, n := range g.nodes {
		bs = append(bs, n.b)
	}
	g.mu.Unlock()
	for _, b := range bs {
		b.SetFleetCounts(m[b.key])
	}
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
