package core

import (
	"fmt"
	"sync"
	"time"

	"github.com/weirproxy/weir/core/breaker"
	"github.com/weirproxy/weir/core/flight"
	"github.com/weirproxy/weir/core/limit"
	"github.com/weirproxy/weir/core/neg"
	"github.com/weirproxy/weir/core/store"
)

// engine is the state of one middleware that outlives Traefik's reloads: its store, its
// flight table and its hit-for-miss marks. Handlers built by New for each router and each
// configuration share it.
type engine struct {
	name        string
	fingerprint string
	mem         *store.Memory // the store when it is process memory; nil otherwise
	store       store.Store
	flights     *flight.Group
	leaderAge   time.Duration
	limiter     *limit.Limiter
	breakers    *breaker.Group
	breakerConf string
	neg         *neg.Cache
	negConf     string
	log         func(msg string)
}

func (e *engine) fetchPanicked(key string, r interface{}) {
	e.log(fmt.Sprintf("middleware %s: origin fetch for %s panicked: %v", e.name, key, r))
}

// registry holds the engines of this process, keyed by middleware name. Traefik keeps one
// interpreter per plugin for the life of the process, so a package variable lives that long.
var registry = struct {
	// mu guards engines.
	mu      sync.Mutex
	engines map[string]*engine
}{engines: make(map[string]*engine)}

// engineFor finds the engine of the middleware name, or builds it. A reload with the same
// cache-relevant settings keeps the stored entries; one that changes them empties the cache.
func engineFor(name string, s Settings) (*engine, error) {
	fp := s.fingerprint()
	registry.mu.Lock()
	old := registry.engines[name]
	e := old
	if old == nil || old.fingerprint != fp || old.leaderAge != s.LeaderMaxAge {
		// A changed engine is a new value, never one changed in place: the handlers of the
		// previous configuration still serve requests and read their engine without a lock.
		e = &engine{name: name, fingerprint: fp, leaderAge: s.LeaderMaxAge, log: s.Log}
		if old != nil && old.fingerprint == fp {
			e.mem = old.mem
			e.store = old.store
		} else {
			e.store = s.Store
			if e.store == nil {
				e.mem = store.NewMemory(store.MemorySettings{MaxSize: s.MaxSize, MaxEntrySize: s.MaxEntrySize})
				e.store = e.mem
			}
		}
		if old != nil && old.leaderAge == s.LeaderMaxAge {
			e.flights = old.flights
		} else {
			// Flights under way keep running for those who wait on them; new ones use the
			// new group.
			e.flights = flight.New(flight.Settings{LeaderMaxAge: s.LeaderMaxAge, Now: s.Now, OnPanic: e.fetchPanicked})
		}
		if old != nil {
			e.limiter = old.limiter
		}
		registry.engines[name] = e
	}
	var err error
	// Breakers and negative entries keep their state across reloads that do not change
	// their settings.
	if conf := fmt.Sprintf("%+v", s.Breaker); e.breakers == nil || e.breakerConf != conf {
		if e.breakers, err = breaker.NewGroup(s.Breaker); err != nil {
			registry.mu.Unlock()
			return nil, err
		}
		e.breakerConf = conf
	}
	if conf := fmt.Sprintf("%+v", s.Negative); e.neg == nil || e.negConf != conf {
		if e.neg, err = neg.New(s.Negative); err != nil {
			registry.mu.Unlock()
			return nil, err
		}
		e.negConf = conf
	}
	if e.limiter == nil {
		e.limiter, err = limit.New(s.Limiter)
	} else {
		// Held slots and queued requests carry over; new caps apply from now.
		err = e.limiter.Update(s.Limiter)
	}
	registry.mu.Unlock()
	return e, err
}
