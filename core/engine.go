package core

import (
	"fmt"
	"sync"
	"time"

	"github.com/weirproxy/weir/core/admin"
	"github.com/weirproxy/weir/core/admit"
	"github.com/weirproxy/weir/core/breaker"
	"github.com/weirproxy/weir/core/events"
	"github.com/weirproxy/weir/core/flight"
	"github.com/weirproxy/weir/core/limit"
	"github.com/weirproxy/weir/core/missrate"
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
	// hot is what the hit path reads directly: mem, or the shared store's local memory
	// (its near cache, and what is kept while the store is lost: store.Fallback).
	hot       *store.Memory
	store     store.Store
	flights   *flight.Group
	leaderAge time.Duration
	limiter   *limit.Limiter
	closer    interface{ Close() error }
	breakers  *breaker.Group
	// breaker is the one breaker of scope engine, found once: scope lookups cost
	// interpreted calls on every origin fetch. Nil for the host (default) and domain scopes.
	breaker *breaker.Breaker
	// breakerPaths are breaker.paths, longest first (breaker.ParsePaths); nil for none.
	breakerPaths []string
	// breakerSync shares the breakers' open deadlines through a shared store.
	breakerSync *breakerSync
	// presence names this instance to the others sharing the store (fleet_presence.go),
	// across reloads.
	presence *presence
	// passSample samples pass-through requests for the breakers, kept with them.
	passSample  *passSampler
	breakerConf string
	neg         *neg.Cache
	negConf     string
	missRate    *missrate.Detector
	missConf    string
	// budgets are the request budgets' tables, kept across reloads that do not change them;
	// nil when off.
	budgets    *budgets
	budgetConf string
	// pacing is the paced origins' turns, the same from the first configuration on
	// (keepPacing); paceConf is pacing as configured.
	pacing   *pacing
	paceConf string
	// admission is admission control, kept across reloads that do not change it; nil when
	// off.
	admission *admit.Controller
	admitConf string
	// warm runs warming (warm.*), across reloads; warmConf is warm.* as this engine was
	// built with it, and warmOn why New starts a run ("" for none): a new store, or
	// warm.* changed.
	warm     *warmer
	warmConf string
	warmOn   string
	// adminBrake counts failed admin attempts by client address, across reloads
	// (keepAdminBrake).
	adminBrake *admin.Brake
	// anomalies keeps the recent miss-rate anomalies for the admin, across reloads.
	anomalies *anomalyLog
	// private is the private cache (private.*), across reloads that do not change it
	// (keepPrivate); nil when off.
	private *privateCache
	// overridden lists the keys breaker.overrides gave parameters, so that a reload that
	// drops one removes its override.
	overridden []string
	// metrics are the engine's metrics, across reloads.
	metrics *engineMetrics
	// events is the event log, across reloads; conf names every setting, so that a reload
	// that changes none writes no config_applied line.
	events *eventLog
	conf   string
	log    func(msg string)
	// adminSwept is the admin.path whose entries were swept from this engine's store
	// (sweepAdmin), carried with the store across reloads: "" until one is. adminSweep is
	// closed when that sweep ends (nil when this engine started none).
	adminSwept string
	adminSweep chan struct{}
	// now, breakerScope and storeTimeout serve the operator controls (operator.go).
	now          func() time.Time
	breakerScope string
	storeTimeout time.Duration
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
// Breakers, negative entries, the detector and the flight table keep their state across
// reloads that do not change their own settings; the limiter is updated in place (held slots
// and queued requests carry over).
//
// A changed engine is a new value, never one changed in place: the handlers of the previous
// configuration still serve requests and read their engine without a lock.
func engineFor(name string, s Settings) (*engine, error) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	old := registry.engines[name]
	if old == nil {
		old = &engine{}
	}
	var err error
	e := &engine{
		name: name,
		log:  s.Log,

		now:          s.Now,
		breakerScope: s.Breaker.Scope,
		storeTimeout: s.StoreTimeout,

		fingerprint: s.fingerprint(),
		leaderAge:   s.LeaderMaxAge,
		breakerConf: fmt.Sprintf("%+v", s.Breaker),
		negConf:     fmt.Sprintf("%+v", s.Negative),
		missConf:    fmt.Sprintf("%+v", s.MissRate),
	}
	e.metrics = old.metrics
	if e.metrics == nil {
		if e.metrics, err = newEngineMetrics(name); err != nil {
			return nil, err
		}
	}
	e.presence = old.presence
	if e.presence == nil {
		e.presence = newPresence(name)
	}
	e.events = old.events
	if e.events == nil {
		e.events = &eventLog{}
	}
	e.events.configure(name, s)
	if old.store != nil && old.fingerprint == e.fingerprint {
		e.store, e.mem, e.hot, e.closer = old.store, old.mem, old.hot, old.closer
		e.adminSwept = old.adminSwept
	} else {
		if e.store, e.mem, e.hot, err = newStore(name, s, e.events); err != nil {
			return nil, err
		}
		warmAssertions(e.store)
		if c, ok := e.store.(interface{ Close() error }); ok {
			e.closer = c
		}
		if old.closer != nil {
			// Handlers of the old configuration may still call it: they see ErrClosed,
			// which reads as a miss.
			old.closer.Close()
		}
	}
	if old.flights != nil && old.leaderAge == e.leaderAge {
		e.flights = old.flights
	} else {
		// Flights under way keep running for those who wait on them; new ones use the new
		// group.
		e.flights = flight.New(flight.Settings{LeaderMaxAge: s.LeaderMaxAge, Now: s.Now, OnPanic: e.fetchPanicked})
	}
	e.pacing = old.pacing
	if e.pacing == nil {
		e.pacing = newPacing()
	}
	if old.breakers != nil && old.breakerConf == e.breakerConf {
		e.breakers = old.breakers
		e.breakerSync = old.breakerSync
		e.passSample = old.passSample
	} else {
		e.passSample = newPassSampler(s.Breaker)
		bs := &breakerSync{name: name, prefix: breakerKeyPrefix + name + "\x00"}
		if old.breakerSync != nil && old.breakerSync.fleet != nil {
			// The group it served is replaced.
			old.breakerSync.fleet.close()
		}
		bsettings := s.Breaker
		timeout := s.StoreTimeout
		bsettings.OnTrip = func(key string, until time.Time) { bs.tripped(key, until, timeout) }
		if e.breakers, err = breaker.NewGroup(bsettings); err != nil {
			return nil, err
		}
		bs.fleet = newFleet(name, e.breakers, e.pacing, s.Now)
		// The engine's id, not one per breaker group: a reload is not a new instance.
		bs.fleet.id = e.presence.id
		bs.fleet.presence = e.presence
		e.breakerSync = bs
	}
	if e.mem == nil {
		e.presence.setStore(sharedOnly(e.store))
		e.breakerSync.setStore(sharedOnly(e.store), changesOf(e.store), s.Log)
	} else {
		e.presence.setStore(nil)
		e.breakerSync.setStore(nil, nil, s.Log)
	}
	if err := applyOverrides(e, old, s.BreakerOverrides); err != nil {
		return nil, err
	}
	if paths, _ := breaker.ParsePaths(s.BreakerPaths); len(paths) > 0 {
		e.breakerPaths = paths
	}
	if s.Breaker.Scope == breaker.ScopeEngine && e.breakerPaths == nil {
		e.breaker = e.breakers.Get(breaker.ScopeKey(breaker.ScopeEngine, ""), time.Time{})
	}
	if old.neg != nil && old.negConf == e.negConf {
		e.neg = old.neg
	} else if e.neg, err = neg.New(s.Negative); err != nil {
		return nil, err
	}
	if old.missRate != nil && old.missConf == e.missConf {
		e.missRate = old.missRate
	} else if e.missRate, err = missrate.New(s.MissRate); err != nil {
		return nil, err
	}
	if err := keepBudgets(e, old, s); err != nil {
		return nil, err
	}
	keepWarmer(e, old, s)
	if err := keepPrivate(e, old, s); err != nil {
		return nil, err
	}
	keepAdminBrake(e, old)
	e.anomalies = old.anomalies
	if e.anomalies == nil {
		e.anomalies = &anomalyLog{}
	}
	if old.limiter != nil {
		e.limiter = old.limiter
		err = e.limiter.Update(s.Limiter)
	} else {
		e.limiter, err = limit.New(s.Limiter)
	}
	if err != nil {
		return nil, err
	}
	if err := keepPacing(e, old, s); err != nil {
		return nil, err
	}
	// Last of what may fail (keepAdmission).
	if err := keepAdmission(e, old, s); err != nil {
		return nil, err
	}
	privateConf := ""
	if e.private != nil {
		privateConf = e.private.conf
	}
	e.conf = fmt.Sprintf("%s limiter=%+v admin=%s format=%s paths=%q ignore429=%v private=%s", e.fingerprint+e.breakerConf+e.negConf+e.missConf+e.budgetConf+e.paceConf+e.admitConf+e.warmConf,
		s.Limiter, s.AdminPath, s.LogFormat, e.breakerPaths, s.BreakerIgnoreStatus429, privateConf)
	registry.engines[name] = e
	dropAdmission(e, old)
	if base := s.AdminPath; base != "" && e.adminSwept != base && e.mem == nil {
		e.adminSwept = base
		e.adminSweep = make(chan struct{})
		sweepAdmin(e, base, e.adminSweep)
	}
	if e.conf != old.conf {
		// Once per change, not once per router that the change rebuilds.
		e.events.current().Emit(events.ConfigApplied, events.Bool("reload", old.name != ""),
			events.Bool("cache_kept", old.store != nil && e.store == old.store))
	}
	return e, nil
}

// recoverTo ends a goroutine of Weir's that panicked with a log line instead of taking
// Traefik down with it.
func recoverTo(log func(string), what string) {
	if r := recover(); r != nil && log != nil {
		log(fmt.Sprintf("recovered a panic while %s: %v", what, r))
	}
}
