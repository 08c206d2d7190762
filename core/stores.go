package core

import (
	"context"
	"fmt"

	"github.com/weirproxy/weir/core/events"
	"github.com/weirproxy/weir/core/redisstore"
	"github.com/weirproxy/weir/core/store"
)

// newStore builds the store that s names: a shared Redis-protocol store behind the store
// breaker when StoreURL is set (FR-STF-1, FR-STF-2), process memory otherwise. Connecting
// is lazy, so a store that is down does not fail New: until it is back, answers are kept in
// local memory (store.Fallback).
//
// mem is the store when it is process memory. hot is what the hit path may read without
// going through the store: mem, or the shared store's local memory (its near cache, and
// what is kept while the store is lost: store.Fallback); nil for a store of the tests'.
func newStore(name string, s Settings, ev *eventLog) (st store.Store, mem, hot *store.Memory, err error) {
	if s.Store != nil {
		return s.Store, nil, nil, nil
	}
	if s.StoreURL == "" {
		mem = store.NewMemory(store.MemorySettings{MaxSize: s.MaxSize, MaxEntrySize: s.MaxEntrySize})
		return mem, mem, mem, nil
	}
	log := s.Log
	nearOn := !s.StoreNoNearCache
	var nearSize int64
	if nearOn {
		nearSize = s.MaxSize
	}
	rs, err := redisstore.New(redisstore.Settings{
		URL:          s.StoreURL,
		KeyPrefix:    s.StoreKeyPrefix,
		MaxEntrySize: int(s.MaxEntrySize),
		Now:          s.Now,
		NearMaxSize:  nearSize,
		// Once per change of state, from the tracking goroutine. Tracking back empties the
		// near cache, and with it what was kept there while the store was lost (Fallback).
		OnNearChange: func(live bool, err error) {
			if live {
				ev.current().Emit(events.NearCacheBack)
				return
			}
			ev.current().Emit(events.NearCacheLost, events.Str("error", errText(err)))
		},
		// Logged once per invalid entry read, which is then deleted.
		OnInvalid: func(key string, err error) {
			log(fmt.Sprintf("middleware %s: shared store entry %q deleted, read as a miss: %v", name, key, err))
		},
	})
	if err != nil {
		return nil, nil, nil, err
	}
	// What the hit path reads: the near cache, or, with it off, memory that holds only what
	// is kept while the store is lost.
	local := rs.Near()
	if local == nil {
		local = store.NewMemory(store.MemorySettings{MaxSize: s.MaxSize, MaxEntrySize: s.MaxEntrySize})
	}
	guard := store.NewGuard(rs, store.GuardSettings{
		Timeout: s.StoreTimeout,
		Now:     s.Now,
		// Once per state change, never per request. The store back empties local memory:
		// what was kept there while it was lost is known to no other instance.
		OnStateChange: func(open bool, err error) {
			if open {
				ev.current().Emit(events.StoreBreakerOpened, events.Str("error", errText(err)))
				return
			}
			local.Clear()
			ev.current().Emit(events.StoreBreakerClosed)
		},
	})
	down := func() bool { return guard.Open() || (nearOn && !rs.NearLive()) }
	return sharedStore{store.NewFallback(guard, local, down), guard, rs, nearOn}, nil, local, nil
}

// errText is an event's error field: empty for none.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// sharedStore is the shared store as the engine uses it: the guarded Redis store with local
// memory behind it (store.Fallback), and the Redis store's Close, so a reload that moves to
// another store closes the old one's connections.
type sharedStore struct {
	*store.Fallback
	guard *store.Guard
	rs    *redisstore.Store
	// near is store.nearCache.
	near bool
}

func (c sharedStore) Close() error { return c.rs.Close() }

func (c sharedStore) sweep(ctx context.Context, match string, drop func(key string) bool) (int, error) {
	return c.rs.Sweep(ctx, match, drop)
}

// guarded is a store whose records shared with the other instances bypass local memory.
// An interface, not an assertion to sharedStore: Yaegi v0.16.1 fails to load a type
// assertion to a struct that embeds a pointer (docs/yaegi.md).
type guarded interface {
	sharedRecords() *store.Guard
}

// sharedRecords is the guarded Redis store without local memory (store.Fallback) in front: what
// the fleet's records (breaker deadlines, control, window counts) and shared budgets
// (store.Booker) are read from and written to. Kept locally while the store is lost, such
// a record would be read back as if other instances had written it.
func (c sharedStore) sharedRecords() *store.Guard { return c.guard }

// sharedOnly is st's guarded store when st is a shared store, else st.
func sharedOnly(st store.Store) store.Store {
	if g, ok := st.(guarded); ok {
		return g.sharedRecords()
	}
	return st
}

// bookerOf is what counts st's shared budgets: its guarded store when st is a shared store,
// else nil. The guard is returned as its own type and made a Booker here: under Yaegi
// v0.16.1, an interface value handed on as another interface (store.Store) then asserted to
// a third (store.Booker) failed the assertion (docs/yaegi.md).
func bookerOf(st store.Store) store.Booker {
	if g, ok := st.(guarded); ok {
		return g.sharedRecords()
	}
	return nil
}

// fallbackOf is st's store.Fallback when st is a shared store, else nil: what the request
// path reads through (sharedGet). An interface, as for guarded.
func fallbackOf(st store.Store) *store.Fallback {
	if f, ok := st.(interface{ fallback() *store.Fallback }); ok {
		return f.fallback()
	}
	return nil
}

func (c sharedStore) fallback() *store.Fallback { return c.Fallback }

// storeChanges is what tells the fleet whether anything under a shared store's prefix
// changed (redisstore.Store.ChangeMark), and wakes it when something does (ChangeSignal).
type storeChanges struct {
	mark   func() (mark int64, tracked bool)
	signal func() <-chan struct{}
}

// changesOf is st's storeChanges: nil when st is no shared store. An interface, as for
// guarded.
func changesOf(st store.Store) *storeChanges {
	c, ok := st.(interface{ redis() *redisstore.Store })
	if !ok {
		return nil
	}
	rs := c.redis()
	return &storeChanges{
		mark: func() (int64, bool) {
			mark, tracked := rs.ChangeMark()
			return mark, tracked
		},
		signal: func() <-chan struct{} { return rs.ChangeSignal() },
	}
}

func (c sharedStore) redis() *redisstore.Store { return c.rs }

// warmAssertions asserts st once to each interface that the admin and PURGE assert it to
// later, on requests that may come at once: Yaegi v0.16.1 builds the method types of the
// value's type and of the interface on a first assertion, without a lock, and two first
// assertions at the same moment can panic (docs/yaegi.md, "First assertions race"). Called
// where st is built, on one goroutine.
func warmAssertions(st store.Store) {
	_, _ = st.(remoteState)
	_, _ = st.(sweeper)
	_, _ = st.(store.Purger)
}

// remoteState is what the admin reads of a shared store.
type remoteState interface {
	breakerOpen() bool
	nearOn() bool
	nearLive() bool
}

func (c sharedStore) breakerOpen() bool { return c.guard.Open() }
func (c sharedStore) nearOn() bool      { return c.near }
func (c sharedStore) nearLive() bool    { return c.rs.NearLive() }
