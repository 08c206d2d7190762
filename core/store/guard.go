package store

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
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

// Breaker states.
const (
	guardClosed  = 0 // calls go through
	guardOpen    = 1 // calls fail with ErrUnavailable until openUntil
	guardProbing = 2 // one trial call is out; the others fail with ErrUnavailable
)

// How a call's result counts.
const (
	resultSuccess = 0
	resultFailure = 1
	resultNeutral = 2 // says nothing of the store's health
)

// Guard is a Store that bounds every call to another Store and stops calling it while it
// keeps failing. While the breaker is open every method returns ErrUnavailable at once. When
// the open period ends one trial call goes through: success closes the breaker and resets the
// open period, failure reopens it for twice as long. A miss (nil, nil) is a success.
type Guard struct {
	inner Store
	s     GuardSettings

	// troubled is 1 while the breaker is not closed or the last call failed; 0 lets a call
	// on a healthy store go through without taking mu. Written under mu, read without it.
	troubled int32
	// gen counts state changes, so that a call that started before one is not counted after
	// it. Written under mu, read without it.
	gen int64

	// mu guards the breaker's state below.
	mu        sync.Mutex
	state     int
	failures  int // failures in a row while closed
	openFor   time.Duration
	openUntil time.Time
	probeFrom time.Time // when the trial call started
}

// NewGuard wraps inner.
func NewGuard(inner Store, s GuardSettings) *Guard {
	s = s.withDefaults()
	return &Guard{inner: inner, s: s, openFor: s.OpenFor}
}

// Get implements Store.
func (g *Guard) Get(ctx context.Context, key string) (*Entry, error) {
	// admit inlined for a healthy store: a call fewer on every request.
	gen := atomic.LoadInt64(&g.gen)
	if atomic.LoadInt32(&g.troubled) != 0 {
		var err error
		if gen, err = g.admit(); err != nil {
			return nil, err
		}
	}
	cctx, cancel := context.WithTimeout(ctx, g.s.Timeout)
	e, err := g.inner.Get(cctx, key)
	cancel()
	if err != nil || atomic.LoadInt32(&g.troubled) != 0 {
		g.record(gen, judge(ctx, err), err)
	}
	return e, err
}

// Set implements Store.
func (g *Guard) Set(ctx context.Context, key string, e *Entry) error {
	// admit inlined for a healthy store: a call fewer on every request.
	gen := atomic.LoadInt64(&g.gen)
	if atomic.LoadInt32(&g.troubled) != 0 {
		var err error
		if gen, err = g.admit(); err != nil {
			return err
		}
	}
	cctx, cancel := context.WithTimeout(ctx, g.s.Timeout)
	err := g.inner.Set(cctx, key, e)
	cancel()
	if err != nil || atomic.LoadInt32(&g.troubled) != 0 {
		g.record(gen, judge(ctx, err), err)
	}
	return err
}

// Delete implements Store.
func (g *Guard) Delete(ctx context.Context, key string) error {
	// admit inlined for a healthy store: a call fewer on every request.
	gen := atomic.LoadInt64(&g.gen)
	if atomic.LoadInt32(&g.troubled) != 0 {
		var err error
		if gen, err = g.admit(); err != nil {
			return err
		}
	}
	cctx, cancel := context.WithTimeout(ctx, g.s.Timeout)
	err := g.inner.Delete(cctx, key)
	cancel()
	if err != nil || atomic.LoadInt32(&g.troubled) != 0 {
		g.record(gen, judge(ctx, err), err)
	}
	return err
}

// Open reports whether the breaker is open (or a trial call is out), so that calls fail
// with ErrUnavailable.
func (g *Guard) Open() bool {
	g.mu.Lock()
	open := g.state != guardClosed
	g.mu.Unlock()
	return open
}

// judge tells how a call's result counts. The caller giving up (its context cancelled) and a
// refusal the store made without asking anyone (ErrTooLarge) say nothing of its health; the
// call running out of time does.
func judge(ctx context.Context, err error) int {
	if err == nil {
		return resultSuccess
	}
	if errors.Is(err, ErrTooLarge) || errors.Is(ctx.Err(), context.Canceled) {
		return resultNeutral
	}
	return resultFailure
}

// admit lets a call through, returning the generation it runs in, or refuses it with
// ErrUnavailable while the breaker is open.
//
// Get, Set and Delete first read gen and then troubled without the lock, and call admit
// only when troubled is set. Opening sets troubled before moving gen, so a call that sees
// troubled 0 runs in the generation it read, or in one that has passed, whose results are
// not counted.
func (g *Guard) admit() (int64, error) {
	now := g.s.Now()
	g.mu.Lock()
	switch g.state {
	case guardClosed:
		// troubled by failures short of opening: calls go through.
	case guardOpen:
		if now.Before(g.openUntil) {
			g.mu.Unlock()
			return 0, ErrUnavailable
		}
		g.state = guardProbing
		g.probeFrom = now
		atomic.AddInt64(&g.gen, 1)
	default:
		// A trial call that outlived its own timeout will not be counted; let another go.
		if now.Sub(g.probeFrom) <= g.s.Timeout {
			g.mu.Unlock()
			return 0, ErrUnavailable
		}
		g.probeFrom = now
		atomic.AddInt64(&g.gen, 1)
	}
	gen := atomic.LoadInt64(&g.gen)
	g.mu.Unlock()
	return gen, nil
}

// record counts a call's result against the breaker, unless the state changed while it ran.
func (g *Guard) record(gen int64, result int, err error) {
	if result == resultNeutral && atomic.LoadInt32(&g.troubled) == 0 {
		return
	}
	now := g.s.Now()
	changed := false
	g.mu.Lock()
	if gen != atomic.LoadInt64(&g.gen) {
		g.mu.Unlock()
		return
	}
	switch g.state {
	case guardClosed:
		if result == resultSuccess {
			g.failures = 0
			atomic.StoreInt32(&g.troubled, 0)
		} else if result == resultFailure {
			g.failures++
			atomic.StoreInt32(&g.troubled, 1)
			if g.failures >= g.s.Failures {
				g.openLocked(now)
				changed = true
			}
		}
	case guardProbing:
		if result == resultSuccess {
			g.state = guardClosed
			g.failures = 0
			g.openFor = g.s.OpenFor
			atomic.AddInt64(&g.gen, 1)
			atomic.StoreInt32(&g.troubled, 0)
			changed = true
		} else {
			if result == resultFailure {
				g.openFor *= 2
				if g.openFor > g.s.MaxOpenFor {
					g.openFor = g.s.MaxOpenFor
				}
				g.openUntil = now.Add(g.openFor)
			}
			// A neutral trial leaves openUntil passed: the next call tries again.
			g.state = guardOpen
			atomic.AddInt64(&g.gen, 1)
		}
	}
	g.mu.Unlock()
	if changed && g.s.OnStateChange != nil {
		if result == resultSuccess {
			err = nil
		}
		g.s.OnStateChange(result != resultSuccess, err)
	}
}

// openLocked opens the breaker for the current open period. The caller holds mu.
func (g *Guard) openLocked(now time.Time) {
	atomic.StoreInt32(&g.troubled, 1)
	g.state = guardOpen
	g.openUntil = now.Add(g.openFor)
	atomic.AddInt64(&g.gen, 1)
}
