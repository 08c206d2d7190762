package core

import (
	"fmt"

	"github.com/weirproxy/weir/core/redisstore"
	"github.com/weirproxy/weir/core/store"
)

// newStore builds the store that s names: a shared Redis-protocol store behind the store
// breaker when StoreURL is set (FR-STF-1, FR-STF-2), process memory otherwise. Connecting
// is lazy, so a store that is down does not fail New: lookups are misses until it is back.
func newStore(name string, s Settings) (st store.Store, mem *store.Memory, err error) {
	if s.Store != nil {
		return s.Store, nil, nil
	}
	if s.StoreURL == "" {
		mem = store.NewMemory(store.MemorySettings{MaxSize: s.MaxSize, MaxEntrySize: s.MaxEntrySize})
		return mem, mem, nil
	}
	rs, err := redisstore.New(redisstore.Settings{
		URL:          s.StoreURL,
		KeyPrefix:    s.StoreKeyPrefix,
		MaxEntrySize: int(s.MaxEntrySize),
		Now:          s.Now,
	})
	if err != nil {
		return nil, nil, err
	}
	log := s.Log
	guard := store.NewGuard(rs, store.GuardSettings{
		Timeout: s.StoreTimeout,
		Now:     s.Now,
		// Logged once per state change, never per request.
		OnStateChange: func(open bool, err error) {
			if open {
				log(fmt.Sprintf("middleware %s: shared store unavailable, serving from the origin: %v", name, err))
				return
			}
			log(fmt.Sprintf("middleware %s: shared store available again", name))
		},
	})
	return closingGuard{guard, rs}, nil, nil
}

// closingGuard is the guard with its store's Close, so a reload that moves to another store
// closes the old one's connections.
type closingGuard struct {
	*store.Guard
	rs *redisstore.Store
}

func (c closingGuard) Close() error { return c.rs.Close() }
