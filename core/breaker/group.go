package breaker

import (
	"container/list"
	"sync"
	"sync/atomic"
	"time"
)

// evictScan is how many of the least recently used breakers a full Group looks at for a
// closed one to evict, before it evicts the least recently used whatever its state.
const evictScan = 16

// node is a breaker with its key, in its Group's map and, unless pinned, its recency list.
type node struct {
	key string
	b   *Breaker
	// elem is the node's element in the recency list (its Value is the node), so that a
	// move or a removal finds it at once; nil while the node is not in the list.
	elem *list.Element
	// pinned marks a key declared or overridden: its node stays out of the recency list,
	// with elem nil, and is never evicted.
	pinned bool
}

// Group holds the breakers of one engine, one per scope key (see ScopeKey), and bounds how
// many it holds: when full, a new key evicts a closed breaker among the least recently used,
// so a flood of host names costs at most MaxBreakers breakers. An evicted breaker that the
// engine still holds keeps working; it is simply no longer shared. Keys that an operator
// declared or overrode (override.go) are held apart from that bound, up to MaxBreakers more.
type Group struct {
	s Settings // validated, defaults applied

	// notClosed counts the group's breakers that are open or half-open, for AllClosed,
	// which reads it without a lock. Each breaker changes it with its own mu held, as it
	// opens or closes; an eviction takes an open breaker out of it.
	notClosed *int32

	// mu guards nodes, the recency list and pinned. Lock order: a Group's mu, then a
	// Breaker's.
	mu    sync.Mutex
	nodes map[string]*node
	// recent holds the *node of every key not pinned, the most recently used at the front.
	recent *list.List
	// pinned counts the nodes of declared or overridden keys, which the list does not hold.
	pinned int
	// front is the node known to be at the front of the recency list, or nil: a Get of the
	// key just used, as a flood of misses on one host asks, moves nothing. Every push sets
	// it and every unlink of it clears it.
	front *node
}

// NewGroup returns an empty group whose breakers use s, or an error naming the first invalid
// setting.
func NewGroup(s Settings) (*Group, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &Group{s: s.withDefaults(), nodes: make(map[string]*node), recent: list.New(), notClosed: new(int32)}, nil
}

// Get returns the breaker for key, making a closed one if there is none.
func (g *Group) Get(key string, now time.Time) *Breaker {
	return Of(g, key, now)
}

// Of is g.Get(key, now) as a function: it runs before every origin fetch, and in Yaegi a
// method call costs several times a function call (docs/yaegi.md); so is the move to the
// front of the recency list, a call into compiled code, which the key at the front already
// skips.
func Of(g *Group, key string, now time.Time) *Breaker {
	g.mu.Lock()
	n := g.nodes[key]
	if n == nil {
		n = addRecent(g, key, now)
	} else if n != g.front && n.elem != nil {
		// A pinned node, out of the list, stays out.
		g.recent.MoveToFront(n.elem)
		g.front = n
	}
	g.mu.Unlock()
	return n.b
}

// addRecent makes key's breaker the most recently used, evicting first while the list is
// full. g.mu must be held. A function of its own: Get runs it once per key, and in Yaegi
// its slots would otherwise cost every Get (docs/yaegi.md). A loop rather than one
// eviction: RemoveOverride puts keys back in the list without evicting.
func addRecent(g *Group, key string, now time.Time) *node {
	for len(g.nodes)-g.pinned >= g.s.MaxBreakers && g.recent.Len() > 0 {
		g.evict(now)
	}
	n := g.add(key)
	g.pushFront(n)
	return n
}

// add makes key's breaker and node, in neither the list nor the pinned; the caller puts it
// in one. g.mu must be held.
func (g *Group) add(key string) *node {
	b := newBreaker(key, g.s)
	b.notClosed = g.notClosed
	n := &node{key: key, b: b}
	g.nodes[key] = n
	return n
}

// AllClosed tells, with one atomic load and no lock, whether every breaker of g is closed:
// a caller that records no outcome (a pass-through request) may then go ahead without
// finding its breaker or asking it for a permit. While any breaker of g is open or half-open
// it reports false, and the caller asks the breaker of its own upstream.
//
// A function rather than a method: in Yaegi a method call costs several times a function
// call (docs/yaegi.md), and this one runs on every pass-through request.
func AllClosed(g *Group) bool {
	return atomic.LoadInt32(g.notClosed) == 0
}

// NotClosed is the count that AllClosed reads, for a caller that loads it with
// atomic.LoadInt32 itself: every breaker of g is closed while it reads zero. On the
// pass-through path that saves an interpreted call per request (docs/yaegi.md).
func NotClosed(g *Group) *int32 {
	return g.notClosed
}

// Lookup returns the breaker for key without making one.
func (g *Group) Lookup(key string) (*Breaker, bool) {
	g.mu.Lock()
	n := g.nodes[key]
	g.mu.Unlock()
	if n == nil {
		return nil, false
	}
	return n.b, true
}

// Observe adopts a deadline learned from another instance for key (see Breaker.Observe),
// making the breaker if needed. A deadline already passed makes no breaker.
func (g *Group) Observe(key string, openUntil, now time.Time) bool {
	if !openUntil.After(now) {
		return false
	}
	return Of(g, key, now).Observe(openUntil, now)
}

// Defaults returns the settings every key of the group has unless overridden, with the
// defaults applied.
func (g *Group) Defaults() Settings {
	return g.s
}

// Len returns how many breakers the group holds.
func (g *Group) Len() int {
	g.mu.Lock()
	n := len(g.nodes)
	g.mu.Unlock()
	return n
}

// evict drops the least recently used closed breaker among the last evictScan, or the least
// recently used one if all of those are open or half-open. g.mu must be held.
func (g *Group) evict(now time.Time) {
	e := g.recent.Back()
	if e == nil {
		return
	}
	victim := e.Value.(*node)
	for i := 0; i < evictScan && e != nil; i++ {
		n := e.Value.(*node)
		if n.b.State(now) == StateClosed {
			victim = n
			break
		}
		e = e.Prev()
	}
	g.unlink(victim)
	delete(g.nodes, victim.key)
	// No request finds an evicted breaker again; one still open must not hold AllClosed
	// false until it closes, which it may never do.
	b := victim.b
	b.mu.Lock()
	if b.tripped && b.notClosed != nil {
		atomic.AddInt32(b.notClosed, -1)
	}
	b.notClosed = nil
	b.mu.Unlock()
}

// The recency list is a container/list rather than a list of the package's own: Get runs
// on the way to an origin fetch, never on a hit, and the list holds at most MaxBreakers
// nodes, so an element allocated beside each node and a type assertion where eviction reads
// one cost nothing that counts. The memory store and the limiter, on hot paths, keep lists
// of their own (ARCHITECTURE.md, "Linked lists").
//
// pushFront makes n, not in the list, the most recently used. g.mu must be held.
func (g *Group) pushFront(n *node) {
	n.elem = g.recent.PushFront(n)
	g.front = n
}

// unlink takes n out of the recency list. g.mu must be held.
func (g *Group) unlink(n *node) {
	g.recent.Remove(n.elem)
	n.elem = nil
	if g.front == n {
		g.front = nil
	}
}
