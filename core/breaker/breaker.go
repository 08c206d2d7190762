// Package breaker is Weir's circuit breaker: it watches the results of origin fetches over a
// sliding window and, when too many fail, keeps fetches from reaching the origin for a while,
// then lets one probe through to learn whether the origin has recovered (FR-CB-1 to FR-CB-5).
// Settings.MaxFailures adds a count to the ratios: that many failures in the window open it,
// however few results there were. With Settings.ConsecutiveFailures it opens on failures in a
// row instead, the rule of the shared store's breaker (FR-STF-2): one trip rule or the other,
// the same open periods, probes and generations.
//
// A breaker knows nothing of HTTP: the engine decides what counts as a failure, what to serve
// while a breaker is open, and how to share open deadlines between instances. Its state is a
// deadline rather than a timer: nothing has to run for an open breaker to become half-open,
// and every transition takes the current time as an argument.
//
// Every fetch the engine lets through carries a Permit, handed back with the result (Record)
// or without one (Release). The permit's generation tells results that arrive after a state
// change from current ones, so a late failure never extends an open breaker nor counts twice.
//
// An operator steers breakers from the admin page: opens one by hand for a while or closes
// it (ForceOpen, ForceClose), gives a key of a Group parameters of its own or declares it
// before it sees traffic (Override, Group.SetOverride, Group.Declare, and ParseOverride for
// the configuration's breaker.overrides), and reads every breaker back (Group.Snapshot).
package breaker

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// States a breaker can be in, as returned by State and in Status. Plain int constants,
// compared by value.
const (
	// StateClosed lets every fetch through and counts the results.
	StateClosed = 0
	// StateOpen lets no fetch through until its deadline (FR-CB-5).
	StateOpen = 1
	// StateHalfOpen lets one probe through; the probe's result closes or reopens the breaker.
	StateHalfOpen = 2
)

// StateName returns "closed", "open" or "half-open" for metrics and logs.
func StateName(state int) string {
	switch state {
	case StateClosed:
		return "closed"
	case StateOpen:
		return "open"
	case StateHalfOpen:
		return "half-open"
	}
	return "unknown"
}

// Permit is a breaker's answer to Allow. An allowed permit goes back to the same breaker with
// the fetch's result (Record) or without one (Release).
type Permit struct {
	// Allowed says whether the fetch may go to the origin.
	Allowed bool
	// Probe marks the one fetch let through a half-open breaker.
	Probe bool
	// RetryAfter, when the fetch is not allowed, is how long until the breaker may let one
	// through: the time left until its open deadline, or ProbeRetryAfter while a probe is
	// out. The engine rounds it up to whole seconds for Retry-After (RFC 9110 section 10.2.3).
	RetryAfter time.Duration

	// gen is the breaker's generation when the permit was handed out.
	gen uint64
}

// What Record reports it changed.
const (
	// Unchanged: the result was counted, or was late, and the state is as it was.
	Unchanged = 0
	// Tripped: a closed breaker opened.
	Tripped = 1
	// Reopened: a probe failed and the breaker opened again, for longer.
	Reopened = 2
	// Recovered: a probe succeeded and the breaker closed.
	Recovered = 3
)

// Why a breaker opened on its own, as Status.TripReason says and the engine's event writes.
const (
	// ReasonFailureRatio: the window held MinRequests results and FailureRatio of them failed.
	ReasonFailureRatio = "failure-ratio"
	// ReasonSlowCalls: the window held MinRequests results and SlowCallRatio of them were
	// slower than SlowCall.
	ReasonSlowCalls = "slow-calls"
	// ReasonMaxFailures: the window held MaxFailures failures, however many results.
	ReasonMaxFailures = "max-failures"
	// ReasonConsecutiveFailures: ConsecutiveFailures failures in a row.
	ReasonConsecutiveFailures = "consecutive-failures"
	// ReasonRetryAfter: a failure came with the origin's own wait (RecordCall's retryAfter),
	// which the breaker obeys at once, whatever the counts.
	ReasonRetryAfter = "retry-after"
	// ReasonProbeFailed: a probe failed.
	ReasonProbeFailed = "probe-failed"
	// ReasonProbeSlow: a probe succeeded, but slower than SlowCall.
	ReasonProbeSlow = "probe-slow"
)

// Breaker is one circuit breaker. Its methods are safe for concurrent use and never block
// beyond one short lock.
type Breaker struct {
	// quiet is the generation while a success would change nothing: the breaker is closed,
	// keeps the ConsecutiveFailures rule and counts no failure; 0 otherwise (generations start
	// at 1). Written with mu held, read without it by Quiet. First in the struct, where a
	// 64-bit atomic is aligned on 32-bit platforms too.
	quiet uint64
	// slowCall is s.SlowCall in nanoseconds, which an override may change (setOverride):
	// written with mu held and atomically, read without mu by recordResult, which must know
	// whether a result was slow before it takes mu (to draw Rand outside it).
	slowCall int64

	key string
	// s is the breaker's settings, defaults applied. A pointer: under Yaegi a selector
	// through a struct held by value (b.s.SlowCall) takes a slot of the whole Settings on
	// every call of the function that reads it, RecordAt on every result (docs/yaegi.md).
	s *Settings

	// mu guards every field below.
	mu sync.Mutex
	// notClosed is the count of breakers not closed of the Group that holds b, which b
	// keeps: one more when it opens, one less when it closes. Nil for a breaker made by New
	// and for one its Group evicted (which took it out of the count). The count, not the
	// Group: a pointer from Breaker to Group, which holds breakers through its self-linked
	// nodes, makes Yaegi v0.16.1 panic on building a node (docs/yaegi.md).
	notClosed *int32
	// gen changes with every change of state (trip, probe handed out, close, adopted or forced
	// deadline); a result whose permit carries another generation is late and ignored.
	gen uint64
	// tripped is set when the breaker opens and cleared when it closes: a tripped breaker is
	// open before openUntil and half-open after it.
	tripped   bool
	openUntil time.Time
	// openFor is the unjittered length of the last open period; it doubles with each failed
	// probe, up to MaxOpenFor (FR-CB-4).
	openFor time.Duration
	// capped is the last deadline observed more than MaxOpenFor away, which was adopted
	// capped and is not adopted again (Observe).
	capped time.Time
	// probing is set while a probe is out; probeUntil is when another may be let through.
	probing    bool
	probeUntil time.Time
	// probeOK counts the probes that succeeded in a row since the breaker last opened; it
	// closes when they reach Probes. probeAfter is when the next probe may go, after one
	// succeeded: until then requests are refused.
	probeOK    int
	probeAfter time.Time
	trips      uint64
	win        window
	// fleet is the other instances' counts for this key (SetFleetCounts), added to the
	// window's when a ratio is judged; zero without a fleet, or when the store fails.
	fleet Counts
	// run is the failures in a row while closed, under ConsecutiveFailures.
	run int
	// opener says who opened the breaker (OpenedAuto, OpenedManual, OpenedShared); empty
	// while closed.
	opener string
	// lastFailure is the HTTP status of the last failure recorded; 0 for none, or for
	// failures that carry no status.
	lastFailure int
	// tripCounts is the window's counts when a ratio or MaxFailures last tripped it, for the
	// event that says why it opened; tripReason why it last opened on its own
	// (ReasonFailureRatio, ...), and tripRetryAfter the origin's wait it obeyed then, capped
	// at MaxOpenFor (zero: none).
	tripCounts     Counts
	tripReason     string
	tripRetryAfter time.Duration
	// ov is the key's own override, already applied to s (setOverride): its non-zero fields
	// stand in for the group's defaults.
	ov Override
}

// New returns a closed breaker for key (which the breaker only passes to OnTrip), or an
// error naming the first invalid setting.
func New(key string, s Settings) (*Breaker, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return newBreaker(key, s.withDefaults()), nil
}

// newBreaker builds a breaker from settings already validated and defaulted.
func newBreaker(key string, s Settings) *Breaker {
	b := &Breaker{key: key, s: &s, slowCall: int64(s.SlowCall), gen: 1, win: newWindow(s.Window)}
	if s.ConsecutiveFailures > 0 {
		b.quiet = b.gen
	}
	return b
}

// Key returns the key the breaker was made for.
func (b *Breaker) Key() string {
	return b.key
}

// Quiet returns, without the lock, b's generation while a success would change nothing:
// b is closed, keeps the ConsecutiveFailures rule and counts no failure. It returns 0
// otherwise (and always under the ratio rule, where every result counts): then ask Allow.
//
// It lets a caller that records successes only when they matter go without a permit and
// without the lock: a fetch that Quiet let through records a failure, or a success once
// Quiet returns 0, under QuietPermit(gen); a success while Quiet is not 0 needs no Record,
// whichever permit it came with. A function rather than a method, returning a generation
// rather than a Permit: it runs twice on every call to Weir's shared store, where
// in Yaegi a method call or a struct returned costs several times an integer.
func Quiet(b *Breaker) uint64 {
	return atomic.LoadUint64(&b.quiet)
}

// QuietPermit returns the permit of a fetch let through at gen, a generation Quiet returned:
// an ordinary allowed permit, which Record and Release take as one from Allow.
func QuietPermit(gen uint64) Permit {
	return Permit{Allowed: gen != 0, gen: gen}
}

// Allow says whether a fetch may go to the origin now. A closed breaker allows every fetch;
// an open one none (FR-CB-5); a half-open one exactly one probe, until its result comes back,
// it is released, or ProbeTimeout passes (FR-CB-3). With Probes above one, a probe's success
// lets the next probe through ProbeInterval later, give or take Jitter; in between, none.
//
// On a closed breaker Allow takes one lock and allocates nothing.
func (b *Breaker) Allow(now time.Time) Permit {
	return AllowAt(b, now)
}

// AllowAt is b.Allow(now) as a function: it runs before every origin fetch, and in Yaegi a
// method call costs several times a function call (docs/yaegi.md). The closed breaker's
// answer is all its body; a tripped one's is allowTripped's, whose values would otherwise
// take frame slots in every call.
func AllowAt(b *Breaker, now time.Time) Permit {
	b.mu.Lock()
	if !b.tripped {
		gen := b.gen
		b.mu.Unlock()
		return Permit{Allowed: true, gen: gen}
	}
	return allowTripped(b, now)
}

// allowTripped is Allow for a tripped breaker: open, or half-open. b.mu must be held; it
// unlocks it.
func allowTripped(b *Breaker, now time.Time) Permit {
	if now.Before(b.openUntil) {
		wait := b.openUntil.Sub(now)
		b.mu.Unlock()
		return Permit{RetryAfter: wait}
	}
	if now.Before(b.probeAfter) {
		wait := b.probeAfter.Sub(now)
		b.mu.Unlock()
		return Permit{RetryAfter: wait}
	}
	if b.probing && now.Before(b.probeUntil) {
		b.mu.Unlock()
		return Permit{RetryAfter: ProbeRetryAfter}
	}
	// A new generation makes the result of a probe that timed out late.
	b.gen++
	b.probing = true
	b.probeUntil = now.Add(b.s.ProbeTimeout)
	gen := b.gen
	b.mu.Unlock()
	return Permit{Allowed: true, Probe: true, gen: gen}
}

// Record is RecordCall for a result whose duration and Retry-After do not matter: no call is
// slow, and no failure names the origin's wait.
func (b *Breaker) Record(p Permit, status int, failed bool, now time.Time) int {
	return RecordAt(b, p, status, failed, 0, 0, now)
}

// RecordCall counts the result of a fetch that p allowed: failed says the origin failed by
// the engine's rules, status is the answer's HTTP status (0: none, as for a store's call),
// kept as Status.LastFailure when failed, counted or not; took is how long the call took and
// retryAfter the wait the origin asked for with a failure (its Retry-After; 0 for none).
//
// A failure with a retryAfter opens a closed breaker at once for that long, capped at
// MaxOpenFor, and up to Jitter longer (never shorter), so that instances told alike do not
// all come back at once: the origin said when to come back.
// Otherwise, with MinRequests results in the window and at least FailureRatio of them failed
// (FR-CB-2), or, with SlowCall set, at least SlowCallRatio of them slower than SlowCall,
// successes or not, or, with MaxFailures set, that many failures in the window, whatever the
// results' number, the breaker opens; under ConsecutiveFailures, with that many failures in
// a row. A probe that succeeds in time closes the breaker once Probes have in a row, and
// clears the counts; a probe that fails or is slow reopens it for twice as long, up to
// MaxOpenFor (FR-CB-3, FR-CB-4), or for the origin's retryAfter if that is longer. Results
// from before the breaker last changed state are ignored, so failures arriving together open
// it once and failures while it is open neither extend it nor count.
//
// RecordCall reports what the result changed (Unchanged, Tripped, Reopened, Recovered), so
// that a caller may tell of a change once, outside the lock.
//
// The status is an argument rather than a method of its own: it runs after every origin
// fetch, and in Yaegi an argument costs less than another method call; the probe's rule
// lives in recordProbe, so that its values take no frame slots in the common call.
func (b *Breaker) RecordCall(p Permit, status int, failed bool, took, retryAfter time.Duration, now time.Time) int {
	return RecordAt(b, p, status, failed, took, retryAfter, now)
}

// RecordAt is b.RecordCall as a function, for the same reason as AllowAt. Its body is the
// common result alone, a success in time of a permit that is no probe: counted in the
// window, or under ConsecutiveFailures ending the run. Every other result is recordResult's,
// whose values would otherwise take frame slots in every call.
func RecordAt(b *Breaker, p Permit, status int, failed bool, took, retryAfter time.Duration, now time.Time) int {
	if !p.Allowed {
		return Unchanged
	}
	if failed || p.Probe {
		return recordResult(b, p, status, failed, took, retryAfter, now)
	}
	b.mu.Lock()
	// SlowCall read under the lock, where it is written: one call into compiled code fewer
	// than the atomic load of recordResult, which must know before it locks.
	if sc := b.s.SlowCall; sc > 0 && took > sc {
		b.mu.Unlock()
		return recordResult(b, p, status, failed, took, retryAfter, now)
	}
	// What recordResult does with such a result: nothing when it is late or the breaker
	// tripped; otherwise a count.
	if p.gen == b.gen && !b.tripped {
		if b.s.ConsecutiveFailures > 0 {
			countRun(b, false)
		} else {
			addResult(&b.win, now, false, false)
		}
	}
	b.mu.Unlock()
	return Unchanged
}

// recordResult is RecordCall for a failure, a slow call or a probe's result.
func recordResult(b *Breaker, p Permit, status int, failed bool, took, retryAfter time.Duration, now time.Time) int {
	sc := time.Duration(atomic.LoadInt64(&b.slowCall))
	slow := sc > 0 && took > sc
	// Drawn before the lock: Rand is injected code and runs outside it.
	r := 0.5
	if failed || slow || p.Probe {
		r = b.s.Rand()
	}
	var until time.Time
	change := Tripped
	b.mu.Lock()
	if failed {
		b.lastFailure = status
	}
	if p.gen != b.gen {
		b.mu.Unlock()
		return Unchanged
	}
	if p.Probe {
		change, until = recordProbe(b, failed, slow, retryAfter, now, r)
		if change != Reopened {
			b.mu.Unlock()
			return change
		}
	} else {
		if b.tripped {
			b.mu.Unlock()
			return Unchanged
		}
		if failed && retryAfter > 0 {
			until = tripRetryAfter(b, now, 0, retryAfter, r)
		} else if b.s.ConsecutiveFailures > 0 {
			if !countRun(b, failed) {
				b.mu.Unlock()
				return Unchanged
			}
			until = b.trip(now, b.s.OpenFor, r)
			b.tripReason = ReasonConsecutiveFailures
		} else {
			addResult(&b.win, now, failed, slow)
			if !failed && !slow {
				b.mu.Unlock()
				return Unchanged
			}
			c := b.win.counts(now).Add(b.fleet)
			reason := tripRule(b.s, c)
			if reason == "" {
				b.mu.Unlock()
				return Unchanged
			}
			b.tripCounts = c
			until = b.trip(now, b.s.OpenFor, r)
			b.tripReason = reason
		}
	}
	b.mu.Unlock()
	if b.s.OnTrip != nil {
		b.s.OnTrip(b.key, until)
	}
	return change
}

// tripRule returns why counts c open a breaker on s, ReasonFailureRatio, ReasonMaxFailures
// or ReasonSlowCalls, or "" if they do not. The rules read the counts alone, so that counts
// gathered elsewhere (Counts.Add) are judged the same way: with a fleet, MaxFailures counts
// the failures every instance saw of the origin. A window that meets several rules names the
// first of failure-ratio, max-failures and slow-calls: failures before slowness.
func tripRule(s *Settings, c Counts) string {
	total := c.OK + c.Failures
	enough := total >= s.MinRequests && total > 0
	if enough && float64(c.Failures) >= s.FailureRatio*float64(total) {
		return ReasonFailureRatio
	}
	// The count ignores MinRequests: a few failures are the evidence it asks for.
	if s.MaxFailures > 0 && c.Failures >= s.MaxFailures {
		return ReasonMaxFailures
	}
	if enough && s.SlowCall > 0 && float64(c.Slow) >= s.SlowCallRatio*float64(total) {
		return ReasonSlowCalls
	}
	return ""
}

// tripRetryAfter opens b for the longer of base and ra, the origin's Retry-After capped at
// MaxOpenFor, jittered but never below ra, and returns the deadline; the next failed probe
// doubles that period. b.mu must be held. A function of its own: one result in many carries
// a Retry-After.
func tripRetryAfter(b *Breaker, now time.Time, base, ra time.Duration, r float64) time.Time {
	if ra > b.s.MaxOpenFor {
		ra = b.s.MaxOpenFor
	}
	if ra > base {
		base = ra
	}
	until := b.trip(now, base, r)
	if least := now.Add(ra); until.Before(least) {
		b.openUntil = least
		until = least
	}
	b.tripReason = ReasonRetryAfter
	b.tripRetryAfter = ra
	return until
}

// recordProbe settles a probe's result, drawn at r for the jitter: a success in time counts
// towards Probes, and the last closes the breaker (Recovered) while the others space the
// next probe by ProbeInterval (Unchanged); a failure, or a success slower than SlowCall,
// opens it again for twice as long, up to MaxOpenFor, or for the origin's retryAfter when
// that is longer (Reopened, and the new deadline). b.mu must be held. A function of its
// own: one result in many is a probe's, and in Yaegi its slots would otherwise cost every
// Record.
func recordProbe(b *Breaker, failed, slow bool, retryAfter time.Duration, now time.Time, r float64) (int, time.Time) {
	if !b.probing {
		return Unchanged, time.Time{}
	}
	b.probing = false
	if !failed && !slow {
		b.probeOK++
		if b.probeOK < b.s.Probes {
			iv := time.Duration(float64(b.s.ProbeInterval) * (1 + b.s.Jitter*(2*clamp01(r)-1)))
			b.probeAfter = now.Add(iv)
			return Unchanged, time.Time{}
		}
		b.close()
		return Recovered, time.Time{}
	}
	next := 2 * b.openFor
	if next > b.s.MaxOpenFor {
		next = b.s.MaxOpenFor
	}
	if failed && retryAfter > 0 {
		return Reopened, tripRetryAfter(b, now, next, retryAfter, r)
	}
	until := b.trip(now, next, r)
	b.tripReason = ReasonProbeFailed
	if !failed {
		b.tripReason = ReasonProbeSlow
	}
	return Reopened, until
}

// countRun counts a result under ConsecutiveFailures and reports whether the run of failures
// has reached it. b.mu must be held. A function of its own: Yaegi allocates a slot for every
// value in Record's body on every call, and written out there this rule would cost every
// Record under the ratio rule its slots.
func countRun(b *Breaker, failed bool) bool {
	if !failed {
		b.run = 0
		atomic.StoreUint64(&b.quiet, b.gen)
		return false
	}
	b.run++
	atomic.StoreUint64(&b.quiet, 0)
	return b.run >= b.s.ConsecutiveFailures
}

// Release hands back a permit whose fetch ended without a result the breaker should count,
// such as a client that hung up. A released probe lets the next Allow send another probe, so
// an abandoned probe cannot wedge a half-open breaker.
func (b *Breaker) Release(p Permit, now time.Time) {
	if !p.Probe {
		return
	}
	b.mu.Lock()
	if p.gen == b.gen && b.probing {
		b.probing = false
	}
	b.mu.Unlock()
}

// Observe adopts an open deadline learned from another instance through a shared store, if
// it is later than both now and the local deadline: a fleet stops together, while each
// instance still decides locally when to probe. It reports whether the deadline was adopted.
// Observe does not call OnTrip, so deadlines do not echo between instances. A breaker it
// opens reports OpenedShared; one open already keeps its opener, its deadline only pushed
// back, so that a manual open is never shortened.
//
// A deadline more than MaxOpenFor from now, which no trip writes (a clock ahead on the
// instance that wrote it, a corrupt value, an operator's longer ForceOpen), is adopted as
// now plus MaxOpenFor, once: read again, the same deadline is not adopted again, so that a
// breaker reading it every few hundred milliseconds does not stay open for as long as it
// says.
func (b *Breaker) Observe(openUntil, now time.Time) bool {
	b.mu.Lock()
	adopted := b.observeLocked(openUntil, now)
	b.mu.Unlock()
	return !adopted.IsZero()
}

// Generation returns the breaker's generation, which changes with every change of its state.
// A reader of a shared deadline takes it before the read and hands it to ObserveAt.
func (b *Breaker) Generation() uint64 {
	b.mu.Lock()
	gen := b.gen
	b.mu.Unlock()
	return gen
}

// ObserveAt is Observe for a deadline read in the background, starting at generation gen.
// If the breaker's state changed meanwhile, the reading is late and ignored: an operator's
// ForceClose that cleared the shared deadline must not be undone by a read of it that was
// already under way. It returns the deadline adopted, earlier than openUntil when it was
// capped at MaxOpenFor from now, or the zero time when none was.
func (b *Breaker) ObserveAt(gen uint64, openUntil, now time.Time) time.Time {
	b.mu.Lock()
	var adopted time.Time
	if gen == b.gen {
		adopted = b.observeLocked(openUntil, now)
	}
	b.mu.Unlock()
	return adopted
}

// observeLocked adopts openUntil, capped at MaxOpenFor from now (see Observe), if it is
// later than now and the local deadline, and returns what it adopted (zero: nothing). b.mu
// must be held.
func (b *Breaker) observeLocked(openUntil, now time.Time) time.Time {
	if !openUntil.After(now) {
		return time.Time{}
	}
	until := openUntil
	if limit := now.Add(b.s.MaxOpenFor); until.After(limit) {
		if openUntil.Equal(b.capped) {
			return time.Time{}
		}
		b.capped = openUntil
		until = limit
	}
	if !until.After(b.openUntil) {
		return time.Time{}
	}
	if b.state(now) != StateOpen {
		b.opener = OpenedShared
	}
	b.open(until)
	return until
}

// ForceOpen opens the breaker for d from now (d <= 0: OpenFor), whatever its state, at an
// operator's request: the clock starts again, even if that shortens an open period, and the
// breaker reports OpenedManual. Until the deadline no result recorded changes it; it then
// goes half-open like any open breaker, and its probe closes or reopens it. A manual open is
// not counted in Trips. OnTrip is called so that the fleet follows.
func (b *Breaker) ForceOpen(now time.Time, d time.Duration) {
	b.mu.Lock()
	if d <= 0 {
		d = b.s.OpenFor
	}
	until := now.Add(d)
	b.open(until)
	b.opener = OpenedManual
	b.mu.Unlock()
	if b.s.OnTrip != nil {
		b.s.OnTrip(b.key, until)
	}
}

// ForceClose closes the breaker at an operator's request, whoever opened it, and clears its
// counts and its opener, so the failures that opened it cannot reopen it at once; results of
// fetches let through before it are late and ignored. A deadline shared with other instances
// is the engine's to clear, or the next Observe adopts it again.
func (b *Breaker) ForceClose(now time.Time) {
	b.mu.Lock()
	b.close()
	b.mu.Unlock()
}

// State returns StateClosed, StateOpen or StateHalfOpen at now.
func (b *Breaker) State(now time.Time) int {
	b.mu.Lock()
	st := b.state(now)
	b.mu.Unlock()
	return st
}

// state returns the state at now. b.mu must be held.
func (b *Breaker) state(now time.Time) int {
	if !b.tripped {
		return StateClosed
	}
	if now.Before(b.openUntil) {
		return StateOpen
	}
	return StateHalfOpen
}

// trip opens the breaker for base, varied by the jitter at r in [0, 1), and returns the open
// deadline. b.mu must be held.
func (b *Breaker) trip(now time.Time, base time.Duration, r float64) time.Time {
	b.openFor = base
	b.trips++
	b.tripRetryAfter = 0
	b.open(now.Add(b.jittered(base, r)))
	b.opener = OpenedAuto
	return b.openUntil
}

// open sets the open deadline and starts a new generation. b.mu must be held.
func (b *Breaker) open(until time.Time) {
	b.gen++
	if !b.tripped && b.notClosed != nil {
		atomic.AddInt32(b.notClosed, 1)
	}
	b.tripped = true
	b.openUntil = until
	b.probing = false
	b.probeOK = 0
	b.probeAfter = time.Time{}
	b.run = 0
	atomic.StoreUint64(&b.quiet, 0)
	if b.openFor == 0 {
		b.openFor = b.s.OpenFor
	}
}

// close closes the breaker, clears its counts and starts a new generation. b.mu must be held.
func (b *Breaker) close() {
	b.gen++
	if b.tripped && b.notClosed != nil {
		atomic.AddInt32(b.notClosed, -1)
	}
	b.tripped = false
	b.opener = ""
	b.openUntil = time.Time{}
	b.openFor = 0
	b.probing = false
	b.probeOK = 0
	b.probeAfter = time.Time{}
	b.win.reset()
	b.fleet = Counts{}
	b.run = 0
	if b.s.ConsecutiveFailures > 0 {
		atomic.StoreUint64(&b.quiet, b.gen)
	}
}

// jittered returns base varied by up to Jitter either way at r in [0, 1). A period that would
// pass MaxOpenFor is reflected below it, so periods at the cap still spread out.
func (b *Breaker) jittered(base time.Duration, r float64) time.Duration {
	d := time.Duration(float64(base) * (1 + b.s.Jitter*(2*clamp01(r)-1)))
	if d > b.s.MaxOpenFor {
		d = 2*b.s.MaxOpenFor - d
	}
	if d <= 0 {
		d = 1
	}
	return d
}

// clamp01 returns r within [0, 1], NaN as 0: Rand is injected and may stray.
func clamp01(r float64) float64 {
	if r < 0 || math.IsNaN(r) {
		return 0
	}
	if r > 1 {
		return 1
	}
	return r
}
