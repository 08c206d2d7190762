package breaker

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

func newTestGroup(t *testing.T, s Settings) *Group {
	t.Helper()
	if s.Rand == nil {
		s.Rand = fixedRand(0.5)
	}
	g, err := NewGroup(s)
	if err != nil {
		t.Fatalf("NewGroup() error = %v", err)
	}
	return g
}

// wantKeys fails t unless g holds a breaker for each of keys and no more.
func wantKeys(t *testing.T, g *Group, keys ...string) {
	t.Helper()
	if g.Len() != len(keys) {
		t.Errorf("Len() = %d, want %d", g.Len(), len(keys))
	}
	for _, k := range keys {
		if _, ok := g.Lookup(k); !ok {
			t.Errorf("Lookup(%q) found nothing, want a breaker", k)
		}
	}
}

func TestGroupGetReturnsOneBreakerPerKey(t *testing.T) {
	g := newTestGroup(t, Settings{})
	a := g.Get("a", t0)
	if g.Get("a", t0) != a {
		t.Errorf("Get(a) twice returned two breakers, want one")
	}
	if g.Get("b", t0) == a {
		t.Errorf("Get(b) returned a's breaker")
	}
	if a.Key() != "a" {
		t.Errorf("Key() = %q, want a", a.Key())
	}
	if _, ok := g.Lookup("c"); ok {
		t.Errorf("Lookup(c) found a breaker that was never made")
	}
}

func TestGroupEvictsLeastRecentlyUsedClosed(t *testing.T) {
	tests := []struct {
		desc  string
		setup func(g *Group)
		want  []string
	}{
		{
			desc:  "oldest goes",
			setup: func(g *Group) {},
			want:  []string{"b", "c", "d"},
		},
		{
			desc:  "a touched breaker stays",
			setup: func(g *Group) { g.Get("a", t0) },
			want:  []string{"a", "c", "d"},
		},
		{
			desc:  "an open breaker stays",
			setup: func(g *Group) { g.Get("a", t0).ForceOpen(t0, time.Minute) },
			want:  []string{"a", "c", "d"},
		},
		{
			desc: "when all are open the oldest goes",
			setup: func(g *Group) {
				for _, k := range []string{"a", "b", "c"} {
					g.Get(k, t0).ForceOpen(t0, time.Minute)
				}
			},
			want: []string{"b", "c", "d"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			g := newTestGroup(t, Settings{MaxBreakers: 3})
			for _, k := range []string{"a", "b", "c"} {
				g.Get(k, t0)
			}
			tc.setup(g)
			g.Get("d", t0)
			wantKeys(t, g, tc.want...)
		})
	}
}

func TestGroupIsBoundedUnderAFlood(t *testing.T) {
	g := newTestGroup(t, Settings{MaxBreakers: 10, Scope: ScopeHost})
	g.Get("origin.example", t0).ForceOpen(t0, time.Minute)
	for i := 0; i < 1000; i++ {
		g.Get(ScopeKey(ScopeHost, "h"+strconv.Itoa(i)+".example:80"), t0)
		g.Get("origin.example", t0)
	}
	if g.Len() != 10 {
		t.Errorf("Len() = %d, want 10", g.Len())
	}
	if b, ok := g.Lookup("origin.example"); !ok || b.State(t0) != StateOpen {
		t.Errorf("the open breaker of a busy host was evicted")
	}
}

func TestGroupObserveAndSnapshot(t *testing.T) {
	var keys []string
	g := newTestGroup(t, Settings{OnTrip: func(key string, until time.Time) { keys = append(keys, key) }})
	if g.Observe("gone", t0.Add(-time.Second), t0) || g.Len() != 0 {
		t.Errorf("Observe(past deadline) made a breaker")
	}
	if !g.Observe("remote", t0.Add(time.Minute), t0) {
		t.Errorf("Observe(remote, t0+1m) = false, want true")
	}
	g.Get("b", t0)
	g.Get("a", t0).ForceOpen(t0, time.Second)

	snap := g.Snapshot(t0.Add(2 * time.Second))
	want := []struct {
		key   string
		state int
	}{{"a", StateHalfOpen}, {"b", StateClosed}, {"remote", StateOpen}}
	if len(snap) != len(want) {
		t.Fatalf("Snapshot() = %+v, want %d entries", snap, len(want))
	}
	for i, w := range want {
		if snap[i].Key != w.key || snap[i].State != w.state {
			t.Errorf("Snapshot()[%d] = %s %s, want %s %s", i, snap[i].Key, StateName(snap[i].State), w.key, StateName(w.state))
		}
	}
	if len(keys) != 1 || keys[0] != "a" {
		t.Errorf("OnTrip keys = %v, want [a]", keys)
	}
}

// TestAllClosed: AllClosed is true exactly while no breaker of the group is open or
// half-open, whatever opened or closed them (trip, probe, Observe, ForceOpen, ForceClose),
// and counts each breaker once however often it opens or closes again.
func TestAllClosed(t *testing.T) {
	g := newTestGroup(t, Settings{})
	a := g.Get("a", t0)
	b := g.Get("b", t0)
	later := t0.Add(DefaultOpenFor + time.Second)
	var probe Permit
	steps := []struct {
		desc string
		do   func()
		want bool
	}{
		{desc: "two closed breakers", do: func() {}, want: true},
		{desc: "a trips", do: func() { tripAt(t, a, t0) }, want: false},
		{desc: "b opened by hand as well", do: func() { b.ForceOpen(t0, time.Minute) }, want: false},
		{desc: "b opened again while open", do: func() { b.ForceOpen(t0, 2*time.Minute) }, want: false},
		{desc: "b closed by hand, a still open", do: func() { b.ForceClose(t0) }, want: false},
		{desc: "b closed again while closed", do: func() { b.ForceClose(t0) }, want: false},
		{desc: "a half-open with its probe out", do: func() { probe = a.Allow(later) }, want: false},
		{desc: "a's probe fails", do: func() { a.Record(probe, 503, true, later) }, want: false},
		{desc: "a's next probe succeeds", do: func() {
			at := later.Add(time.Hour)
			a.Record(a.Allow(at), 200, false, at)
		}, want: true},
		{desc: "b adopts another instance's deadline", do: func() { g.Observe("b", t0.Add(time.Minute), t0) }, want: false},
		{desc: "b closed by hand", do: func() { b.ForceClose(t0) }, want: true},
		{desc: "a breaker made on the way opens", do: func() { g.Get("c", t0).ForceOpen(t0, time.Minute) }, want: false},
		{desc: "and closes", do: func() { g.Get("c", t0).ForceClose(t0) }, want: true},
	}
	for _, st := range steps {
		st.do()
		if got := AllClosed(g); got != st.want {
			t.Fatalf("%s: AllClosed() = %t, want %t (states a=%s b=%s)", st.desc, got, st.want,
				StateName(a.State(t0)), StateName(b.State(t0)))
		}
	}
}

// TestAllClosedForgetsEvicted: an open breaker the group evicts no longer holds AllClosed
// false (no request finds it again, and it may never close), and what it does afterwards
// does not count.
func TestAllClosedForgetsEvicted(t *testing.T) {
	g := newTestGroup(t, Settings{MaxBreakers: 1})
	x := g.Get("x", t0)
	x.ForceOpen(t0, time.Minute)
	if AllClosed(g) {
		t.Fatalf("AllClosed() = true with x open, want false")
	}
	g.Get("y", t0)
	if _, ok := g.Lookup("x"); ok {
		t.Fatalf("x was not evicted")
	}
	if !AllClosed(g) {
		t.Errorf("AllClosed() = false after the open x was evicted, want true")
	}
	x.ForceClose(t0)
	x.ForceOpen(t0, time.Minute)
	if !AllClosed(g) {
		t.Errorf("AllClosed() = false after the evicted x opened again, want true")
	}
	g.Get("y", t0).ForceOpen(t0, time.Minute)
	if AllClosed(g) {
		t.Errorf("AllClosed() = true with y open, want false: the count went below zero")
	}
	if alone, err := New("alone", Settings{}); err != nil {
		t.Fatalf("New() error = %v", err)
	} else {
		alone.ForceOpen(t0, time.Minute)
		alone.ForceClose(t0)
	}
}

// TestAllClosedCounterUnderContention: breakers opening and closing on several goroutines
// while new keys evict them leave the count exact: zero once every breaker has closed.
func TestAllClosedCounterUnderContention(t *testing.T) {
	g := newTestGroup(t, Settings{MaxBreakers: 3})
	const workers, rounds = 4, 200
	done := make(chan struct{}, workers+1)
	for w := 0; w < workers; w++ {
		key := "w" + strconv.Itoa(w)
		go func() {
			for i := 0; i < rounds; i++ {
				b := g.Get(key, t0)
				b.ForceOpen(t0, time.Minute)
				AllClosed(g)
				b.ForceClose(t0)
			}
			done <- struct{}{}
		}()
	}
	go func() {
		for i := 0; i < rounds; i++ {
			g.Get("flood"+strconv.Itoa(i), t0)
		}
		done <- struct{}{}
	}()
	for i := 0; i < workers+1; i++ {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("workers hang")
		}
	}
	if n := atomic.LoadInt32(g.notClosed); n != 0 {
		t.Errorf("count of breakers not closed = %d with every breaker closed, want 0", n)
	}
	if !AllClosed(g) {
		t.Errorf("AllClosed() = false with every breaker closed, want true")
	}
}

// The recency list orders eviction across several new keys: a touched breaker moves ahead of
// the untouched, a key whose declaration ends comes back as the most recently used, and only
// the sixteen least recently used are looked at for a closed one.
func TestGroupEvictionOrder(t *testing.T) {
	g := newTestGroup(t, Settings{MaxBreakers: 4})
	for _, k := range []string{"a", "b", "c", "d"} {
		g.Get(k, t0)
	}
	g.Get("b", t0)
	g.Get("a", t0) // least recently used first: c, d, b, a
	if err := g.Declare("d"); err != nil {
		t.Fatalf("Declare(d) = %v", err)
	}
	g.Get("x", t0) // c, b, a, x beside the declared d: nothing evicted
	wantKeys(t, g, "a", "b", "c", "d", "x")
	g.RemoveOverride("d") // c, b, a, x, d: one over the bound until the next new key
	g.Get("y", t0)
	wantKeys(t, g, "a", "x", "d", "y")
	g.Get("z", t0)
	wantKeys(t, g, "x", "d", "y", "z")

	g = newTestGroup(t, Settings{MaxBreakers: evictScan + 1})
	for i := 0; i <= evictScan; i++ {
		b := g.Get("h"+strconv.Itoa(i), t0)
		if i < evictScan {
			b.ForceOpen(t0, time.Minute)
		}
	}
	// The closed breaker is seventeenth from the least recently used end: out of reach, so
	// the least recently used goes, open as it is.
	g.Get("new", t0)
	if _, ok := g.Lookup("h0"); ok {
		t.Errorf("h0, the least recently used, stayed; want it evicted")
	}
	if _, ok := g.Lookup("h" + strconv.Itoa(evictScan)); !ok {
		t.Errorf("the closed breaker beyond the scan was evicted; want h0 evicted")
	}
}

// TestGroupFrontKeyStays: a Get of the key at the front moves nothing, and a front key
// pinned and put back leaves the order right.
func TestGroupFrontKeyStays(t *testing.T) {
	g := newTestGroup(t, Settings{MaxBreakers: 3})
	for _, k := range []string{"a", "b", "c", "c"} {
		g.Get(k, t0)
	}
	// c, the front key, pinned: b, a in the list.
	if err := g.Declare("c"); err != nil {
		t.Fatalf("Declare(c) = %v", err)
	}
	g.Get("b", t0)
	g.RemoveOverride("c") // c, b, a
	g.Get("c", t0)
	g.Get("a", t0) // a, c, b
	g.Get("a", t0)
	g.Get("x", t0)
	wantKeys(t, g, "a", "c", "x")
	if b := g.Get("x", t0); Of(g, "x", t0) != b {
		t.Errorf("Of and Get found different breakers for one key")
	}
}

// groupKeys returns n keys and a group holding a breaker for each, made in order.
func groupKeys(b *testing.B, n int, s Settings) (*Group, []string) {
	s.Rand = fixedRand(0.5)
	g, err := NewGroup(s)
	if err != nil {
		b.Fatal(err)
	}
	keys := make([]string, n)
	for i := 0; i < n; i++ {
		keys[i] = "h" + strconv.Itoa(i) + ".example"
		g.Get(keys[i], t0)
	}
	return g, keys
}

// BenchmarkGroupGet measures finding the breaker of a key among a few hundred, taken round
// robin, so that each Get moves a breaker that is the least recently used to the front.
func BenchmarkGroupGet(b *testing.B) {
	g, keys := groupKeys(b, 256, Settings{})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		g.Get(keys[i%256], t0)
	}
}

// BenchmarkGroupGetEvict measures a Get in a full group that makes a new breaker and evicts
// the least recently used: 512 keys round robin through a group of 256.
func BenchmarkGroupGetEvict(b *testing.B) {
	g, keys := groupKeys(b, 512, Settings{MaxBreakers: 256})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		g.Get(keys[i%512], t0)
	}
}
