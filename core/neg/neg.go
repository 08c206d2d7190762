// Package neg is Weir's negative cache: for a moment after the origin fails on a key with
// nothing stored, it remembers the failure, so that the requests that follow get the same
// status without reaching the origin (FR-NEG-1).
//
// An entry holds a status and an optional Retry-After, never a body (FR-NEG-2). Only failures
// of the origin's health are remembered: 502, 503 and 504, which is how the engine reports
// network errors too. A 500, a 4xx, and any failure of a request that carried credentials are
// refused (FR-NEG-4): those speak of the request, or of one user, not of the origin.
//
// The package knows nothing of HTTP beyond those status codes: the engine decides when to
// record, what to serve, and when a success or a purge makes an entry obsolete.
package neg

import (
	"container/list"
	"sync"
	"sync/atomic"
	"time"
)

// Failure is what the engine knows of a failed fetch when it records it.
type Failure struct {
	// Status is the status to serve from the entry: 502, 503 or 504. The engine maps network
	// errors to 502 (connection refused or reset) or 504 (timeout).
	Status int
	// RetryAfter is the origin's Retry-After as a duration, or zero for none.
	RetryAfter time.Duration
	// Credentialed marks a request that carried credentials (Authorization, a cookie the
	// engine treats as one); its failure is never remembered (FR-NEG-4).
	Credentialed bool
}

// Entry is a remembered failure.
type Entry struct {
	Status     int
	RetryAfter time.Duration
	// At is when the failure was recorded: the origin's RetryAfter counts from it.
	At time.Time
	// Until is when the entry stops being served; the engine derives Cache-Status ttl from it.
	Until time.Time
}

// Cacheable reports whether the cache records the failure f: a 502, 503 or 504 of a
// request without credentials.
func Cacheable(f Failure) bool {
	if f.Credentialed {
		return false
	}
	return f.Status == 502 || f.Status == 503 || f.Status == 504
}

// node is one entry in the map and in the age list.
type node struct {
	key string
	e   Entry
	// elem is the node's element in the age list (its Value is the node), so that a move or
	// a removal finds it at once.
	elem *list.Element
}

// Cache remembers failures by key. Its methods are safe for concurrent use; each takes one
// lock and does one map access.
type Cache struct {
	ttl time.Duration
	max int

	// mu guards entries and the age list. Every entry lives for the same TTL, so the oldest
	// recorded is also the first to expire: expired entries gather at the oldest end, where
	// Record drops them, and eviction takes from the same end.
	mu      sync.Mutex
	entries map[string]*node
	// ages holds every *node, the oldest recorded at the front, the newest at the back.
	ages *list.List
	// held is len(entries), changed under mu and read without it (Empty).
	held int32
}

// Empty reports whether c holds no failure: one atomic load, so that a miss with nothing
// remembered (nearly every miss) pays neither Lookup's lock nor its call. A function, not a
// method: under Yaegi a method call costs its wrapper (docs/yaegi.md). A failure recorded
// while Empty reads is as if recorded just after.
func Empty(c *Cache) bool {
	return atomic.LoadInt32(&c.held) == 0
}

// New returns an empty cache, or an error naming the first invalid setting.
func New(s Settings) (*Cache, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	s = s.withDefaults()
	return &Cache{ttl: s.TTL, max: s.MaxEntries, entries: make(map[string]*node), ages: list.New()}, nil
}

// Record remembers the failure f for key for the cache's TTL from now and reports whether it
// did; it refuses failures that Cacheable rejects. Recording a key again starts its TTL
// afresh.
func (c *Cache) Record(key string, f Failure, now time.Time) bool {
	if !Cacheable(f) {
		return false
	}
	ra := f.RetryAfter
	if ra < 0 {
		ra = 0
	}
	e := Entry{Status: f.Status, RetryAfter: ra, At: now, Until: now.Add(c.ttl)}
	c.mu.Lock()
	n := c.entries[key]
	if n != nil {
		n.e = e
		c.ages.MoveToBack(n.elem)
		c.mu.Unlock()
		return true
	}
	for el := c.ages.Front(); el != nil; el = c.ages.Front() {
		old := el.Value.(*node)
		if now.Before(old.e.Until) {
			break
		}
		c.drop(old)
	}
	if len(c.entries) >= c.max {
		c.drop(c.ages.Front().Value.(*node))
	}
	n = &node{key: key, e: e}
	c.entries[key] = n
	n.elem = c.ages.PushBack(n)
	atomic.AddInt32(&c.held, 1)
	c.mu.Unlock()
	return true
}

// Lookup returns the failure remembered for key, if one is still in force at now. An expired
// entry is dropped.
func (c *Cache) Lookup(key string, now time.Time) (Entry, bool) {
	c.mu.Lock()
	n := c.entries[key]
	if n == nil {
		c.mu.Unlock()
		return Entry{}, false
	}
	if !now.Before(n.e.Until) {
		c.drop(n)
		c.mu.Unlock()
		return Entry{}, false
	}
	e := n.e
	c.mu.Unlock()
	return e, true
}

// Forget drops what is remembered for key: a successful fetch or a purge makes it obsolete.
func (c *Cache) Forget(key string) {
	c.mu.Lock()
	if n := c.entries[key]; n != nil {
		c.drop(n)
	}
	c.mu.Unlock()
}

// Len returns how many entries the cache holds, expired ones not yet dropped included.
func (c *Cache) Len() int {
	c.mu.Lock()
	n := len(c.entries)
	c.mu.Unlock()
	return n
}

// drop removes n from the map and the age list. c.mu must be held.
//
// The age list is a container/list rather than a list of the package's own: only Record
// moves or adds an element, once per failed origin fetch, and the list holds at most
// MaxEntries nodes, so an element allocated beside each node and a type assertion where
// expiry and eviction read one cost nothing that counts. The memory store and the limiter,
// on hot paths, keep lists of their own (ARCHITECTURE.md, "Linked lists").
func (c *Cache) drop(n *node) {
	c.ages.Remove(n.elem)
	delete(c.entries, n.key)
	atomic.AddInt32(&c.held, -1)
}
