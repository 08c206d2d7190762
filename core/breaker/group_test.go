package breaker

import (
	"strconv"
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
