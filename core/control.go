package core

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weirproxy/weir/core/breaker"
	"github.com/weirproxy/weir/core/events"
)

// ErrNoEngine is returned by the operator controls for a middleware name that no
// configuration has built.
var ErrNoEngine = errors.New("no such middleware")

// OpenBreaker opens by hand the breaker that guards host's upstream in the middleware name
// (any host for scope engine) for d from now (zero: its openFor, the key's override or
// breaker.openFor), whatever its state: the clock starts again, even when that shortens an
// open period. Until then the breaker reports it was opened by hand, and the failures it
// records change nothing (breaker.Breaker.ForceOpen). With a shared store, the other
// instances adopt the deadline at their next origin fetch, capped at their
// breaker.maxOpenFor. It is the operator's switch, for the admin API to expose.
func OpenBreaker(name, host string, d time.Duration) error {
	e, b, err := controlled(name, host)
	if err != nil {
		return err
	}
	openBreaker(e, b, d)
	return nil
}

// openBreaker opens b by hand for d (zero: its openFor), restarting its clock.
func openBreaker(e *engine, b *breaker.Breaker, d time.Duration) {
	now := e.now()
	b.ForceOpen(now, d)
	e.events.current().Emit(events.BreakerOpenedByHand, events.Str("scope", b.Key()),
		events.Dur("open_for", b.Status(now).OpenUntil.Sub(now)))
}

// CloseBreaker closes by hand the breaker that guards host's upstream in the middleware name,
// whoever opened it, and clears its counts, so the failures that opened it cannot reopen it
// at once; the results of fetches let through before are ignored. With a shared store it
// also clears the shared deadline, or the next read would adopt it again.
func CloseBreaker(name, host string) error {
	e, b, err := controlled(name, host)
	if err != nil {
		return err
	}
	return closeBreaker(e, b.Key())
}

// closeBreaker closes the breaker of scope key by hand and clears its shared deadline.
func closeBreaker(e *engine, key string) error {
	b := e.breakers.Get(key, e.now())
	b.ForceClose(e.now())
	e.events.current().Emit(events.BreakerClosedByHand, events.Str("scope", key))
	if st, _ := e.breakerSync.current(); st != nil {
		ctx, cancel := context.WithTimeout(context.Background(), e.storeTimeout)
		defer cancel()
		if err := st.Delete(ctx, e.breakerSync.prefix+key); err != nil {
			return fmt.Errorf("clearing the shared deadline of %s in %s: %w", key, e.name, err)
		}
	}
	return nil
}

func controlled(name, host string) (*engine, *breaker.Breaker, error) {
	registry.mu.Lock()
	e := registry.engines[name]
	registry.mu.Unlock()
	if e == nil {
		return nil, nil, fmt.Errorf("%w: %q", ErrNoEngine, name)
	}
	h, path := breaker.SplitPathKey(host)
	return e, breakerOf(e, h, path, e.now()), nil
}
