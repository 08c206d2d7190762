package core

import (
	"fmt"

	"github.com/weirproxy/weir/core/events"
	"github.com/weirproxy/weir/core/redisstore"
	"github.com/weirproxy/weir/core/store"
)

// newStore builds the store that s names: a shared Redis-protocol store behind the store
// breaker when StoreURL is set (FR-STF-1, FR-STF-2), process memory otherwise. Connecting
// is lazy, so a store that is down does not fail New: lookups are misses until it is back.
//
// mem is the store when it is process memory. hot is what the hit path may read without
// going through the store: mem, or the shared store's near tier (nil when there is none).
func newStore(name string, s Settings, ev *eventLog) (st store.Store, mem, hot *store.Memory, err error) {
	if s.Store != nil {
		return s.Store, nil, nil, nil
	}
	if s.StoreURL == "" {
		mem = store.NewMemory(store.MemorySettings{MaxSize: s.MaxSize, MaxEntrySize: s.MaxEntrySize})
		return mem, mem, mem, nil
	}
	log := s.Log
	var nearSize int64
	if !s.StoreNoNearCache {
		nearSize = s.MaxSize
	}
	rs, err := redisstore.New(redisstore.Settings{
		URL:          s.StoreURL,
		KeyPrefix:    s.StoreKeyPrefix,
		MaxEntrySize: int(s.MaxEntrySize),
		Now:          s.Now,
		NearMaxSize:  nearSize,
		// Once per change of state, from the tracking goroutine.
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
	guard := store.NewGuard(rs, store.GuardSettings{
		Timeout: s.StoreTimeout,
		Now:     s.Now,
		// Once per state change, never per request.
		OnStateChange: func(open bool, err error) {
			if open {
				ev.current().Emit(events.StoreBreakerOpened, events.Str("error", errText(err)))
				return
			}
			ev.current().Emit(events.StoreBreakerClosed)
		},
	})
	return closingGuard{guard, rs}, nil, rs.Near(), nil
}

// errText is an event's error field: empty for none.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// closingGuard is the guard with its store's Close, so a reload that moves to another store
// closes the old one's connections.
type closingGuard struct {
	*store.Guard
	rs *redisstore.Store
}

func (c closingGuard) Close() error { return c.rs.Close() }

// remoteState is what the admin reads of a shared store.
type remoteState interface {
	breakerOpen() bool
	nearLive() bool
}

func (c closingGuard) breakerOpen() bool { return c.Guard.Open() }
func (c closingGuard) nearLive() bool    { return c.rs.NearLive() }
