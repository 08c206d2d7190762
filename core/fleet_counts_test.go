package core

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/breaker"
	"github.com/weirproxy/weir/core/store"
)

// downStore is a shared store that fails every call.
type downStore struct{}

var errDown = errors.New("store down")

func (downStore) Get(ctx context.Context, key string) (*store.Entry, error) { return nil, errDown }
func (downStore) Set(ctx context.Context, key string, e *store.Entry) error { return errDown }
func (downStore) Delete(ctx context.Context, key string) error              { return errDown }

// TestFleetCountsOpenBothInstances: two instances sharing a store, each seeing half the
// failures (10 of minRequests 20), both open at their next failure once they have read each
// other's counts; a store that fails leaves each with its own counts, under the floor.
func TestFleetCountsOpenBothInstances(t *testing.T) {
	const key = "api.example.com"
	tests := []struct {
		desc     string
		st       store.Store
		wantOpen bool
	}{
		{desc: "shared store", st: store.NewMemory(store.MemorySettings{}), wantOpen: true},
		{desc: "store down: local counts", st: downStore{}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			clock := newFakeClock()
			newInstance := func() (*fleet, *breaker.Group) {
				return newTestFleet(t, clock, breaker.Settings{Rand: func() float64 { return 0.5 }}, nil, tc.st)
			}
			fail := func(g *breaker.Group, n int) {
				b := g.Get(key, clock.Now())
				for i := 0; i < n; i++ {
					b.RecordCall(b.Allow(clock.Now()), 503, true, 0, 0, clock.Now())
				}
			}
			a, ga := newInstance()
			b, gb := newInstance()
			fail(ga, 10)
			fail(gb, 10)
			a.pollOnce()
			b.pollOnce()
			a.pollOnce()
			clock.Add(100 * time.Millisecond)
			fail(ga, 1)
			fail(gb, 1)
			for name, g := range map[string]*breaker.Group{"A": ga, "B": gb} {
				got := g.Get(key, clock.Now()).State(clock.Now())
				if tc.wantOpen && got != breaker.StateOpen {
					t.Errorf("%s: %s after 11 of the fleet's 22 failures, want open", name, breaker.StateName(got))
				}
				if !tc.wantOpen && got != breaker.StateClosed {
					t.Errorf("%s: %s with its own 11 failures alone, want closed", name, breaker.StateName(got))
				}
			}
		})
	}
}

// TestFleetCountsAgeOut: an instance that stops writing drops out of the others' counts
// within fleetCountsFresh.
func TestFleetCountsAgeOut(t *testing.T) {
	const key = "api.example.com"
	clock := newFakeClock()
	shared := store.NewMemory(store.MemorySettings{})
	s := breaker.Settings{Rand: func() float64 { return 0.5 }, Window: time.Minute}
	a, ga := newTestFleet(t, clock, s, nil, shared)
	b, gb := newTestFleet(t, clock, s, nil, shared)
	ba := ga.Get(key, clock.Now())
	for i := 0; i < 19; i++ {
		ba.RecordCall(ba.Allow(clock.Now()), 503, true, 0, 0, clock.Now())
	}
	a.pollOnce()
	clock.Add(fleetCountsFresh + time.Millisecond)
	bb := gb.Get(key, clock.Now())
	bb.RecordCall(bb.Allow(clock.Now()), 503, true, 0, 0, clock.Now())
	b.pollOnce()
	bb.RecordCall(bb.Allow(clock.Now()), 503, true, 0, 0, clock.Now())
	if got := bb.State(clock.Now()); got != breaker.StateClosed {
		t.Errorf("B with A's counts gone stale: %s, want closed", breaker.StateName(got))
	}
}
