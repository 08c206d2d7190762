package core

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/admin"
	"github.com/weirproxy/weir/core/breaker"
	"github.com/weirproxy/weir/core/store"
	"github.com/weirproxy/weir/internal/redistest"
)

// TestConsoleFleetNamesEveryInstance: two instances of one middleware on the same Redis
// (two engines of the same name, the first taken out of the process's registry as if it ran
// in another Traefik), each having written the control record, are each in the other's
// api/fleet with the time it wrote, itself first and seen now; an instance that wrote
// nothing for fifteen minutes is gone. The ids are random hex, nothing of the host.
func TestConsoleFleetNamesEveryInstance(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	clock := newFakeClock()
	o := staticOrigin(t, 200, []string{"Cache-Control", "max-age=600"}, "page")
	name := uniqueEngineName(t)
	s := adminSettings(Settings{Now: clock.Now, Log: discardLog, StoreURL: "redis://" + srv.Addr})
	a := mustNew(t, name, s, o)
	registry.mu.Lock()
	delete(registry.engines, name)
	registry.mu.Unlock()
	b := mustNew(t, name, s, o)
	t.Cleanup(func() {
		a.e.breakerSync.fleet.close()
		if a.e.closer != nil {
			a.e.closer.Close()
		}
	})
	if a.e.presence.id == b.e.presence.id {
		t.Fatalf("both instances are %q", a.e.presence.id)
	}
	declare := func(h *Handler, key string) {
		t.Helper()
		wantCode(t, "declare "+key, adminDo(t, h, "POST", "http://example.com/_weir/api/breakers/declare", `{"key":"`+key+`"}`, adminToken), 200)
	}
	aWrote := clock.Now()
	declare(a, "a.example.com")
	clock.Add(5 * time.Second)
	bWrote := clock.Now()
	declare(b, "b.example.com")
	// Within fleetSeenEvery of its last, a write of a's does not write its time again.
	clock.Add(time.Second)
	declare(a, "c.example.com")
	clock.Add(time.Minute)

	fleetOf := func(h *Handler) admin.Fleet {
		t.Helper()
		var f admin.Fleet
		adminJSON(t, h, "api/fleet", &f)
		return f
	}
	hexID := regexp.MustCompile(`^[0-9a-f]{16}$`)
	tests := []struct {
		desc        string
		h           *Handler
		self, other string
		otherSeen   time.Time
	}{
		{desc: "a's list", h: a, self: a.e.presence.id, other: b.e.presence.id, otherSeen: bWrote},
		{desc: "b's list", h: b, self: b.e.presence.id, other: a.e.presence.id, otherSeen: aWrote},
	}
	for _, tt := range tests {
		f := fleetOf(tt.h)
		if !f.Shared || len(f.Instances) != 2 {
			t.Errorf("%s: got %+v, want the two instances", tt.desc, f)
			continue
		}
		self, other := f.Instances[0], f.Instances[1]
		if self.ID != tt.self || !self.Self || !self.Seen.Equal(clock.Now()) {
			t.Errorf("%s: first %+v, want itself (%s) seen now (%s)", tt.desc, self, tt.self, clock.Now())
		}
		if other.ID != tt.other || other.Self || !other.Seen.Equal(tt.otherSeen) {
			t.Errorf("%s: second %+v, want %s seen at %s", tt.desc, other, tt.other, tt.otherSeen)
		}
		for _, in := range f.Instances {
			if !hexID.MatchString(in.ID) {
				t.Errorf("%s: id %q, want 16 hex digits", tt.desc, in.ID)
			}
		}
	}

	// Fifteen minutes after b last wrote, a's list is a alone.
	clock.Add(fleetSeenFor)
	if f := fleetOf(a); len(f.Instances) != 1 || f.Instances[0].ID != a.e.presence.id {
		t.Errorf("after fifteen quiet minutes: got %+v, want a alone", f)
	}
}

// TestFleetCountsMarkPresence: a write of the breakers' counts marks the instance in the
// presence record, with the engine's id; a fleet without a presence (a test's) writes none.
func TestFleetCountsMarkPresence(t *testing.T) {
	clock := newFakeClock()
	shared := store.NewMemory(store.MemorySettings{})
	f, g := newTestFleet(t, clock, breaker.Settings{Rand: func() float64 { return 0.5 }}, nil, shared)
	b := g.Get("api.example.com", clock.Now())
	b.RecordCall(b.Allow(clock.Now()), 503, true, 0, 0, clock.Now())
	f.pollOnce()
	rec, err := readSeen(context.Background(), shared, fleetSeenPrefix+"mw")
	if err != nil || len(rec.Instances) != 0 {
		t.Fatalf("without a presence: got %+v, %v, want no record", rec, err)
	}
	f.presence = newPresence("mw")
	f.presence.setStore(shared)
	f.id = f.presence.id
	clock.Add(time.Second)
	b.RecordCall(b.Allow(clock.Now()), 503, true, 0, 0, clock.Now())
	f.pollOnce()
	rec, err = readSeen(context.Background(), shared, fleetSeenPrefix+"mw")
	if err != nil || len(rec.Instances) != 1 || !rec.Instances[f.id].Equal(clock.Now()) {
		t.Errorf("after a write of the counts: got %+v, %v, want %s seen at %s", rec, err, f.id, clock.Now())
	}
}

// TestPruneSeen: the presence record keeps the instances seen within fleetSeenFor either
// way of now, with ids of fleetIDMax bytes at most, and the fleetInstancesMax most recent.
func TestPruneSeen(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rec := &fleetSeenRecord{Instances: map[string]time.Time{
		"recent": now.Add(-time.Minute), "old": now.Add(-fleetSeenFor - time.Second),
		"ahead": now.Add(fleetSeenFor + time.Second), "long" + string(make([]byte, fleetIDMax)): now,
	}}
	pruneSeen(rec, now)
	if len(rec.Instances) != 1 || !rec.Instances["recent"].Equal(now.Add(-time.Minute)) {
		t.Errorf("got %v, want recent alone", rec.Instances)
	}
	rec = &fleetSeenRecord{Instances: map[string]time.Time{}}
	for i := 0; i < fleetInstancesMax+10; i++ {
		rec.Instances[itoa(int64(i))] = now.Add(-time.Duration(i) * time.Second)
	}
	pruneSeen(rec, now)
	if _, ok := rec.Instances[itoa(int64(fleetInstancesMax))]; len(rec.Instances) != fleetInstancesMax || ok {
		t.Errorf("got %d instances, want the %d most recent", len(rec.Instances), fleetInstancesMax)
	}
}
