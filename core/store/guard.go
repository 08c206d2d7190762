package store

import (
	"context"
	"errors"
	"time"

	"github.com/weirproxy/weir/core/breaker"
)

// The store breaker (FR-STF-1, FR-STF-2): a remote store that is slow or down must cost each
// request at most timeouts.store, and once it has failed repeatedly it must cost nothing at
// all until it is worth trying again. A Guard wraps a remote store with both; the memory store
// needs neither and is not wrapped.

// Defaults for GuardSettings.
const (
	DefaultGuardTimeout    = 50 * time.Millisecond
	DefaultGuardFailures   = 5
	DefaultGuardOpenFor    = time.Second
	DefaultGuardMaxOpenFor = 30 * time.Second
)

// GuardSettings tunes a Guard.
type GuardSettings struct {
	// Timeout bounds every call to the guarded store (timeouts.store). Zero: DefaultGuardTimeout.
	Timeout time.Duration
	// Failures is how many failures in a row open the breaker. Zero: DefaultGuardFailures.
	Failures int
	// OpenFor is how long the breaker first stays open; each failed trial call doubles it, up
	// to MaxOpenFor. Zero: DefaultGuardOpenFor.
	OpenFor time.Duration
	// MaxOpenFor caps the open period. Zero: DefaultGuardMaxOpenFor.
	MaxOpenFor time.Duration
	// OnStateChange is told when the breaker opens (open true, with the failure that opened
	// it) and when it closes again (open false, nil error): once per change, not per request,
	// so it may log. A failed trial call keeps the breaker open and is not reported. Called
	// without any lock held, from the goroutine whose call made the change; two changes close
	// together may be reported out of order. Nil: not told.
	OnStateChange func(open bool, err error)
	// Now reads the clock for the open periods. Nil: time.Now.
	Now func() time.Time
}

func (s GuardSettings) withDefaults() GuardSettings {
	if s.Timeout <= 0 {
		s.Timeout = DefaultGuardTimeout
	}
	if s.Failures <= 0 {
		s.Failures = DefaultGuardFailures
	}
	if s.OpenFor <= 0 {
		s.OpenFor = DefaultGuardOpenFor
	}
	if s.MaxOpenFor <= 0 {
		s.MaxOpenFor = DefaultGuardMaxOpenFor
	}
	if s.MaxOpenFor < s.OpenFor {
		s.MaxOpenFor = s.OpenFor
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	return s
}

// Guard is a Store that bounds every call to another Store and stops calling it while it
// keeps failing. While the breaker is open every method returns ErrUnavailable at once. When
// the open period ends one trial call goes through: success closes the breaker and resets the
// open period, failure reopens it for twice as long. A miss (nil, nil) is a success.
//
// The breaker is a core/breaker.Breaker under its consecutive-failure rule, without jitter:
// the same open periods, trial calls and generations as the origin's breakers, with the
// store's own trip rule. A call on a healthy store takes no permit and no lock: one atomic
// load before it (breaker.Quiet), and one after, which tells whether a success matters (a
// failure always does). Two function calls that return an integer: in Yaegi a method call
// (Allow) or a Permit returned would cost several times as much on every store call. A
// troubled store's calls take a permit (troubledCall).
type Guard struct {
	inner Store
	// timed reads inner with the guard's timeout (TimedGetter): inner itself, or inner's Get
	// under a context with the timeout (contextTimeout).
	timed TimedGetter
	b     *breaker.Breaker
	s     GuardSettings
}

var (
	_ Store  = (*Guard)(nil)
	_ Purger = (*Guard)(nil)
)

// NewGuard wraps inner.
func NewGuard(inner Store, s GuardSettings) *Guard {
	s = s.withDefaults()
	b, err := breaker.New("", s.breakerSettings())
	if err != nil {
		// Not reached: withDefaults leaves every field in range (TestGuardBreakerSettings).
		// Should a setting ever be refused, the breaker's defaults under the same rule keep
		// the store guarded, where a nil breaker would fail every call.
		b, _ = breaker.New("", breaker.Settings{ConsecutiveFailures: DefaultGuardFailures})
	}
	timed, ok := inner.(TimedGetter)
	if !ok {
		timed = contextTimeout{inner}
	}
	return &Guard{inner: inner, timed: timed, b: b, s: s}
}

// breakerSettings returns the settings of the store breaker, from settings with defaults.
func (s GuardSettings) breakerSettings() breaker.Settings {
	return breaker.Settings{
		ConsecutiveFailures: s.Failures,
		OpenFor:             s.OpenFor,
		MaxOpenFor:          s.MaxOpenFor,
		// A trial call that outlived its own timeout will not be counted; let another go.
		ProbeTimeout: s.Timeout,
		// The middle of the jitter: open periods double exactly, as documented.
		Rand: func() float64 { return 0.5 },
	}
}

// Get implements Store.
func (g *Guard) Get(ctx context.Context, key string) (*Entry, error) {
	return guardGet(g, ctx, key)
}

// guardGet is g.Get as a function (ReadShared).
func guardGet(g *Guard, ctx context.Context, key string) (*Entry, error) {
	gen := breaker.Quiet(g.b)
	if gen == 0 {
		return troubledCall(g, ctx, opGet, key, nil)
	}
	e, err := g.timed.GetWithin(ctx, key, g.s.Timeout)
	if err != nil || breaker.Quiet(g.b) == 0 {
		record(g, ctx, breaker.QuietPermit(gen), err)
	}
	return e, err
}

// TimedGetter is a Store whose Get takes its time bound along with it rather than in a
// context made for it: a Guard reads through it (under Yaegi, a context.WithTimeout and its
// cancel would cost two calls into compiled code and a timer on every read).
type TimedGetter interface {
	// GetWithin is Get, bounded by timeout as well as by ctx.
	GetWithin(ctx context.Context, key string, timeout time.Duration) (*Entry, error)
}

// contextTimeout is the TimedGetter of a Store without GetWithin: its Get under a context
// with the timeout.
type contextTimeout struct{ s Store }

func (c contextTimeout) GetWithin(ctx context.Context, key string, timeout time.Duration) (*Entry, error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return c.s.Get(cctx, key)
}

// Set implements Store.
func (g *Guard) Set(ctx context.Context, key string, e *Entry) error {
	gen := breaker.Quiet(g.b)
	if gen == 0 {
		_, err := troubledCall(g, ctx, opSet, key, e)
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, g.s.Timeout)
	err := g.inner.Set(cctx, key, e)
	cancel()
	if err != nil || breaker.Quiet(g.b) == 0 {
		record(g, ctx, breaker.QuietPermit(gen), err)
	}
	return err
}

// Delete implements Store.
func (g *Guard) Delete(ctx context.Context, key string) error {
	gen := breaker.Quiet(g.b)
	if gen == 0 {
		_, err := troubledCall(g, ctx, opDelete, key, nil)
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, g.s.Timeout)
	err := g.inner.Delete(cctx, key)
	cancel()
	if err != nil || breaker.Quiet(g.b) == 0 {
		record(g, ctx, breaker.QuietPermit(gen), err)
	}
	return err
}

// Calls troubledCall makes.
const (
	opGet    = 0
	opSet    = 1
	opDelete = 2
)

// troubledCall makes a call while the store is troubled (open, or failures counted): under a
// permit from the breaker, which may refuse it, and recorded whatever its result. For opGet
// it returns the entry read; otherwise e. Apart from Get, Set and Delete, whose frames
// Yaegi allocates whole on every call, so that a healthy store's calls do not pay for a
// Permit, or for the three ways to call the store again.
func troubledCall(g *Guard, ctx context.Context, op int, key string, e *Entry) (*Entry, error) {
	p := g.b.Allow(g.s.Now())
	if !p.Allowed {
		return nil, ErrUnavailable
	}
	cctx, cancel := context.WithTimeout(ctx, g.s.Timeout)
	var err error
	switch op {
	case opGet:
		e, err = g.inner.Get(cctx, key)
	case opSet:
		err = g.inner.Set(cctx, key, e)
	default:
		err = g.inner.Delete(cctx, key)
	}
	cancel()
	record(g, ctx, p, err)
	return e, err
}

// PurgeKey implements Purger through the guarded store (see guardPurge).
func (g *Guard) PurgeKey(ctx context.Context, key string) (int, error) {
	return guardPurge(g, ctx, opPurgeKey, key)
}

// PurgePrefix implements Purger through the guarded store (see guardPurge).
func (g *Guard) PurgePrefix(ctx context.Context, prefix string) (int, error) {
	return guardPurge(g, ctx, opPurgePrefix, prefix)
}

// PurgeTag implements Purger through the guarded store (see guardPurge).
func (g *Guard) PurgeTag(ctx context.Context, tag string) (int, error) {
	return guardPurge(g, ctx, opPurgeTag, tag)
}

// Purges guardPurge makes.
const (
	opPurgeKey    = 0
	opPurgePrefix = 1
	opPurgeTag    = 2
)

// guardPurge runs a purge under a permit from the breaker: refused with ErrUnavailable while
// it is open, its failure counted as any call's. It returns ErrPurgeUnsupported when the
// guarded store is no Purger.
//
// Timeout does not bound a purge: it is the budget of one call on a request's path, and a
// purge is many calls (a Redis purge reads and deletes in batches of hundreds of keys).
// Each of those is bounded by the store itself (redisstore: store.timeout, its Settings'
// Timeout), and the whole purge by ctx, the caller's. A purge the caller gave up on, or
// whose deadline passed, says nothing of the store's health: it is not counted.
func guardPurge(g *Guard, ctx context.Context, op int, arg string) (int, error) {
	inner, ok := g.inner.(Purger)
	if !ok {
		return 0, ErrPurgeUnsupported
	}
	p := g.b.Allow(g.s.Now())
	if !p.Allowed {
		return 0, ErrUnavailable
	}
	n, err := purgeBy(inner, ctx, op, arg)
	if err != nil && ctx.Err() != nil {
		g.b.Release(p, g.s.Now())
		return n, err
	}
	record(g, ctx, p, err)
	return n, err
}

// Book implements Booker through the guarded store: refused with ErrUnavailable while the
// breaker is open, bounded by Timeout, its failure counted as any call's. It returns
// ErrBookUnsupported when the guarded store is no Booker.
func (g *Guard) Book(ctx context.Context, keys []string, counts []int64, interval time.Duration) ([]time.Duration, error) {
	inner, ok := g.inner.(Booker)
	if !ok {
		return nil, ErrBookUnsupported
	}
	p := g.b.Allow(g.s.Now())
	if !p.Allowed {
		return nil, ErrUnavailable
	}
	cctx, cancel := context.WithTimeout(ctx, g.s.Timeout)
	ahead, err := inner.Book(cctx, keys, counts, interval)
	cancel()
	record(g, ctx, p, err)
	return ahead, err
}

// purgeBy makes the purge op (opPurgeKey, opPurgePrefix, opPurgeTag) of arg on p.
func purgeBy(p Purger, ctx context.Context, op int, arg string) (int, error) {
	switch op {
	case opPurgeKey:
		return p.PurgeKey(ctx, arg)
	case opPurgePrefix:
		return p.PurgePrefix(ctx, arg)
	}
	return p.PurgeTag(ctx, arg)
}

// Open reports whether the breaker is open (or a trial call is out), so that calls fail
// with ErrUnavailable.
func (g *Guard) Open() bool {
	return g.b.State(g.s.Now()) != breaker.StateClosed
}

// record counts a call's result against the breaker, which ignores it if the state changed
// while the call ran, and reports an opening or a closing to OnStateChange, once, outside the
// breaker's lock. The caller giving up (its context cancelled) and a refusal the store made
// without asking anyone (ErrTooLarge) say nothing of the store's health: the permit is
// handed back uncounted, and a trial call's turn passes to the next call. The call running
// out of time does count. A function rather than a method: in Yaegi it costs less, on every
// failed call.
func record(g *Guard, ctx context.Context, p breaker.Permit, err error) {
	now := g.s.Now()
	if err != nil && (errors.Is(err, ErrTooLarge) || errors.Is(ctx.Err(), context.Canceled)) {
		g.b.Release(p, now)
		return
	}
	change := g.b.Record(p, 0, err != nil, now)
	if g.s.OnStateChange == nil {
		return
	}
	switch change {
	case breaker.Tripped:
		g.s.OnStateChange(true, err)
	case breaker.Recovered:
		g.s.OnStateChange(false, nil)
	}
}
