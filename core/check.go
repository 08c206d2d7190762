package core

import (
	"github.com/weirproxy/weir/core/breaker"
	"github.com/weirproxy/weir/core/redisstore"
)

// Check reports what New would refuse in s, with New's own message: the provider plugin
// checks its presets with it (through weir's Config.Check), so that a preset it publishes
// and the middleware that loads it can never disagree. It runs New's validation, then
// builds what New builds that can refuse a setting and holds neither a goroutine nor a
// connection: the breaker group with its overrides, the budgets, admission and pacing, and,
// for a store.url, the store without its near cache (which dials nothing before it is used),
// closed at once. No engine is built or registered.
func Check(s Settings) error {
	if err := s.validate(); err != nil {
		return err
	}
	// With the defaults New applies before it builds the engine (engineFor).
	s = s.withDefaults()
	group, err := breaker.NewGroup(s.Breaker)
	if err != nil {
		return err
	}
	if err := applyOverrides(&engine{breakers: group}, &engine{}, s.BreakerOverrides); err != nil {
		return err
	}
	if _, err := newBudgets("check", s.Budgets, s.StoreTimeout, s.Now); err != nil {
		return err
	}
	if _, err := newAdmission(s.Admission); err != nil {
		return err
	}
	if _, err := buildPaceTable(nil, pacesByName(s.Pacing), nil, queueWait(s.Limiter.MaxQueueWait), s.Limiter.AfterFunc); err != nil {
		return err
	}
	if s.StoreURL == "" || s.Store != nil {
		return nil
	}
	rs, err := redisstore.New(redisstore.Settings{URL: s.StoreURL, KeyPrefix: s.StoreKeyPrefix, MaxEntrySize: int(s.MaxEntrySize)})
	if err != nil {
		return err
	}
	return rs.Close()
}
