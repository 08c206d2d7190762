package core

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/breaker"
	"github.com/weirproxy/weir/core/store"
)

// TestFleetSharesOperatorActions: what an operator does through one instance, another
// sharing the store applies at its next read, once; an instance that starts later takes the
// overrides and skips an open whose deadline passed.
func TestFleetSharesOperatorActions(t *testing.T) {
	clock := newFakeClock()
	shared := store.NewMemory(store.MemorySettings{})
	a, ga := newTestFleet(t, clock, breaker.Settings{}, nil, shared)
	b, gb := newTestFleet(t, clock, breaker.Settings{}, nil, shared)
	state := func(g *breaker.Group, key string) int { return g.Get(key, clock.Now()).State(clock.Now()) }
	override := func(g *breaker.Group, key string) breaker.Override {
		for _, ko := range g.Overrides() {
			if ko.Key == key {
				return ko.Override
			}
		}
		return breaker.Override{}
	}

	ga.Get("api.example.com", clock.Now()).ForceOpen(clock.Now(), time.Minute)
	if err := a.publishAction("open", "api.example.com", clock.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	b.pollOnce()
	if got := state(gb, "api.example.com"); got != breaker.StateOpen {
		t.Fatalf("B after A opened: state %d, want open", got)
	}
	o := breaker.Override{Window: 30 * time.Second}
	if err := ga.SetOverride("api.example.com", o); err != nil {
		t.Fatal(err)
	}
	if err := a.publishOverride("api.example.com", o.String(), false); err != nil {
		t.Fatal(err)
	}
	if err := a.publishDeclare("new.example.com"); err != nil {
		t.Fatal(err)
	}
	// B acts too, on what it has applied so far.
	gb.Get("api.example.com", clock.Now()).ForceClose(clock.Now())
	if err := b.publishAction("close", "api.example.com", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if got := override(gb, "api.example.com"); got != o {
		t.Errorf("B's override %+v, want %+v: B applies what A did before it writes", got, o)
	}
	a.pollOnce()
	if got := state(ga, "api.example.com"); got != breaker.StateClosed {
		t.Errorf("A after B closed: state %d, want closed", got)
	}
	// A later instance, once the open's deadline has passed.
	clock.Add(2 * time.Minute)
	c, gc := newTestFleet(t, clock, breaker.Settings{}, nil, shared)
	c.pollOnce()
	if got := override(gc, "api.example.com"); got != o {
		t.Errorf("a later instance's override %+v, want %+v", got, o)
	}
	if _, ok := gc.Lookup("new.example.com"); !ok {
		t.Errorf("a later instance does not hold the declared key")
	}
	if got := state(gc, "api.example.com"); got != breaker.StateClosed {
		t.Errorf("a later instance: state %d, want closed", got)
	}
	// Removing the override reaches the others.
	ga.RemoveOverride("api.example.com")
	if err := a.publishOverride("api.example.com", "", true); err != nil {
		t.Fatal(err)
	}
	b.pollOnce()
	if got := override(gb, "api.example.com"); got != (breaker.Override{}) {
		t.Errorf("B after A's reset: override %+v, want none", got)
	}
}

// TestFleetIgnoresUnreadableRecord: the record is untrusted input.
func TestFleetIgnoresUnreadableRecord(t *testing.T) {
	clock := newFakeClock()
	shared := store.NewMemory(store.MemorySettings{})
	f, _ := newTestFleet(t, clock, breaker.Settings{}, nil, shared)
	ent := &store.Entry{Status: 200, Body: []byte("{not json"), Born: clock.Now(), FreshUntil: clock.Now().Add(time.Hour), KeepUntil: clock.Now().Add(time.Hour)}
	ent.Prepare()
	if err := shared.Set(context.Background(), f.key, ent); err != nil {
		t.Fatal(err)
	}
	f.pollOnce()
	if err := f.publishOverride("a.example.com", "window=20s", false); err != nil {
		t.Fatalf("publishing over an unreadable record: %v, want it replaced", err)
	}
	f2, g2 := newTestFleet(t, clock, breaker.Settings{}, nil, shared)
	f2.pollOnce()
	if ov := g2.Overrides(); len(ov) != 1 || ov[0].Key != "a.example.com" {
		t.Errorf("overrides read from the new record %+v, want a.example.com's", ov)
	}
}

// countingStore is a shared store that counts the reads of one key and fails every call
// while down is set.
type countingStore struct {
	st    store.Store
	key   string
	reads int
	down  bool
}

func (c *countingStore) Get(ctx context.Context, key string) (*store.Entry, error) {
	if key == c.key {
		c.reads++
	}
	if c.down {
		return nil, errDown
	}
	return c.st.Get(ctx, key)
}

func (c *countingStore) Set(ctx context.Context, key string, e *store.Entry) error {
	if c.down {
		return errDown
	}
	return c.st.Set(ctx, key, e)
}

func (c *countingStore) Delete(ctx context.Context, key string) error {
	if c.down {
		return errDown
	}
	return c.st.Delete(ctx, key)
}

// TestFleetReadsControlOnChange: with a store that tells of changes under its prefix, an
// instance reads the control record when its change mark moved since the last read that
// reached the store, and every poll while the store does not track changes; a failed read,
// or a store set again, leaves no mark to trust.
func TestFleetReadsControlOnChange(t *testing.T) {
	clock := newFakeClock()
	shared := store.NewMemory(store.MemorySettings{})
	a, _ := newTestFleet(t, clock, breaker.Settings{}, nil, shared)
	b, gb := newTestFleet(t, clock, breaker.Settings{}, nil, nil)
	counted := &countingStore{st: shared, key: b.key}
	mark, tracked := int64(1), true
	b.st = counted
	b.changes = &storeChanges{mark: func() (int64, bool) { return mark, tracked }}
	hasOverride := func(key string) bool {
		t.Helper()
		_, ok := gb.Lookup(key)
		return ok
	}
	poll := func(desc string, wantReads int) {
		t.Helper()
		b.pollOnce()
		if counted.reads != wantReads {
			t.Fatalf("%s: %d reads of the control record, want %d", desc, counted.reads, wantReads)
		}
	}

	poll("first poll, no record", 1)
	poll("mark unchanged, no record", 1)
	if err := a.publishDeclare("one.example.com"); err != nil {
		t.Fatal(err)
	}
	mark++
	poll("mark moved", 2)
	if !hasOverride("one.example.com") {
		t.Errorf("after the mark moved: one.example.com not declared, want it")
	}
	poll("mark unchanged", 2)
	poll("mark unchanged again", 2)

	tracked = false
	poll("untracked", 3)
	poll("untracked again", 4)
	tracked = true
	poll("tracked again: the untracked read left no mark", 5)
	poll("tracked, unchanged", 5)

	mark++
	counted.down = true
	poll("store down", 6)
	counted.down = false
	if err := a.publishDeclare("two.example.com"); err != nil {
		t.Fatal(err)
	}
	poll("after a failed read, same mark", 7)
	if !hasOverride("two.example.com") {
		t.Errorf("after a failed read: two.example.com not declared, want it")
	}
	poll("unchanged after the store is back", 7)

	// Set again (a reload): the marks of the store before say nothing. No loop: the test
	// polls.
	b.stop = make(chan struct{})
	b.setStore(counted, b.changes, discardLog)
	poll("store set again, same mark", 8)
	poll("unchanged since", 8)
}

// TestFleetSleepsUntilChange: the loop sleeps on the store's change signal only while the
// store tracks changes, none came since the record was read, and the breakers have nothing
// to share; a result recorded while it sleeps wakes it.
func TestFleetSleepsUntilChange(t *testing.T) {
	clock := newFakeClock()
	shared := store.NewMemory(store.MemorySettings{})
	f, g := newTestFleet(t, clock, breaker.Settings{}, nil, shared)
	mark, tracked := int64(1), true
	signal := make(chan struct{})
	f.changes = &storeChanges{mark: func() (int64, bool) { return mark, tracked }, signal: func() <-chan struct{} { return signal }}
	sleeps := func(desc string, want bool) {
		t.Helper()
		got := f.sleep() != nil
		if got != want {
			t.Fatalf("%s: sleeps %v, want %v", desc, got, want)
		}
		if asleep := atomic.LoadInt32(&f.asleep) == 1; asleep != want {
			t.Fatalf("%s: asleep %v, want %v", desc, asleep, want)
		}
		atomic.StoreInt32(&f.asleep, 0)
	}

	sleeps("nothing read yet", false)
	f.pollOnce()
	sleeps("read, unchanged since", true)
	mark++
	sleeps("changed since the read", false)
	f.pollOnce()
	sleeps("read again", true)
	tracked = false
	sleeps("untracked", false)
	tracked = true

	b := g.Get("api.example.com", clock.Now())
	p := b.Allow(clock.Now())
	b.RecordCall(p, 200, false, time.Millisecond, 0, clock.Now())
	sleeps("counts to share", false)
	f.pollOnce()
	clock.Add(time.Minute)
	f.pollOnce()
	sleeps("counts gone and unpublished", true)

	// A result recorded while asleep wakes the loop.
	e := &engine{breakerSync: &breakerSync{fleet: f}}
	wakeFleet(e)
	select {
	case <-f.wakeup:
		t.Fatalf("woken while awake")
	default:
	}
	atomic.StoreInt32(&f.asleep, 1)
	wakeFleet(e)
	select {
	case <-f.wakeup:
	default:
		t.Fatalf("asleep, a result recorded: not woken")
	}
}
