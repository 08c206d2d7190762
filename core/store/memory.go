package store

import (
	"context"
	"sync"
)

// Defaults for the memory store.
const (
	DefaultMaxSize      = 32 << 20
	DefaultMaxEntrySize = 2 << 20
)

// MemorySettings bound a Memory store.
type MemorySettings struct {
	// MaxSize is the byte budget for all entries: the heap they hold (Entry.Size), their
	// keys and the store's own bookkeeping. Zero means DefaultMaxSize.
	MaxSize int64
	// MaxEntrySize is the largest body stored. Zero means DefaultMaxEntrySize.
	MaxEntrySize int64
}

// Memory is an in-process store: a map with least-recently-used eviction by bytes, as
// groupcache's lru but bounded by size rather than count. It never fails and never blocks
// on anything but its own lock, so the engine calls it on the hit path directly.
//
// Recency is kept as a second chance (CLOCK) rather than by moving an item on every hit: a
// hit only sets a flag, which costs the interpreter a fraction of a list operation, and
// eviction gives flagged entries one more trip round the list. The list runs through the
// items themselves, as every list in Weir does (ARCHITECTURE.md).
type Memory struct {
	maxSize, maxEntrySize int64

	// mu guards everything below and the links of the items.
	mu    sync.Mutex
	items map[string]*memItem
	head  *memItem // most recently added or given a second chance
	tail  *memItem // next under the eviction hand
	size  int64
	// evictions counts the entries evicted to stay within maxSize.
	evictions int64
}

type memItem struct {
	key   string
	entry *Entry
	size  int64
	// prev is nearer the head, next nearer the tail.
	prev, next *memItem
	// used is set by every hit since the item last passed the eviction hand.
	used bool
}

// itemHeap is what the store holds for each entry besides the entry and its key's bytes: the
// memItem (49 bytes, in a 64-byte class) and a slot of items (a string header and a pointer,
// in a map at least half full after it doubles).
const itemHeap = 64 + 2*(stringHeader+8+1)

// itemCost is what an entry stored under key counts against the budget: the heap that
// storing it holds (Entry.Size).
func itemCost(key string, e *Entry) int64 {
	return int64(e.Size() + itemHeap + (len(key)+len(key)>>3+15)&^15)
}

// NewMemory returns an empty memory store.
func NewMemory(s MemorySettings) *Memory {
	if s.MaxSize <= 0 {
		s.MaxSize = DefaultMaxSize
	}
	if s.MaxEntrySize <= 0 {
		s.MaxEntrySize = DefaultMaxEntrySize
	}
	if s.MaxEntrySize > s.MaxSize {
		s.MaxEntrySize = s.MaxSize
	}
	return &Memory{maxSize: s.MaxSize, maxEntrySize: s.MaxEntrySize, items: make(map[string]*memItem)}
}

// Lookup is Get without a context or an error, for the hit path. It is a function, not a
// method: in Yaegi a method call costs about three times a function call, and this one is
// on every hit.
func Lookup(m *Memory, key string) *Entry {
	m.mu.Lock()
	it := m.items[key]
	if it == nil {
		m.mu.Unlock()
		return nil
	}
	it.used = true
	e := it.entry
	m.mu.Unlock()
	return e
}

// Get implements Store.
func (m *Memory) Get(_ context.Context, key string) (*Entry, error) {
	return Lookup(m, key), nil
}

// Set implements Store. It evicts least recently used entries until the new one fits.
func (m *Memory) Set(_ context.Context, key string, e *Entry) error {
	size := itemCost(key, e)
	// The per-entry limit is on the answer's body, as the engine and redisstore apply it;
	// what the entry holds beside it counts against the budget, which it must fit alone.
	if int64(len(e.Body)) > m.maxEntrySize || size > m.maxSize {
		return ErrTooLarge
	}
	m.mu.Lock()
	it := m.items[key]
	if it != nil {
		m.size += size - it.size
		it.entry = e
		it.size = size
		it.used = true
	} else {
		it = &memItem{key: key, entry: e, size: size}
		pushFront(m, it)
		m.items[key] = it
		m.size += size
	}
	for m.size > m.maxSize {
		m.evictOne(it)
	}
	m.mu.Unlock()
	return nil
}

// Delete implements Store.
func (m *Memory) Delete(_ context.Context, key string) error {
	m.mu.Lock()
	if it := m.items[key]; it != nil {
		m.remove(it)
	}
	m.mu.Unlock()
	return nil
}

// Clear removes every entry.
func (m *Memory) Clear() {
	m.mu.Lock()
	m.head = nil
	m.tail = nil
	m.items = make(map[string]*memItem)
	m.size = 0
	m.mu.Unlock()
}

// DeleteFunc removes every entry whose key match reports, and returns how many it removed.
// match is called with the store's lock held: it must be quick and call nothing of the
// store's.
func (m *Memory) DeleteFunc(match func(key string) bool) int {
	n := 0
	m.mu.Lock()
	for key, it := range m.items {
		if match(key) {
			m.remove(it)
			n++
		}
	}
	m.mu.Unlock()
	return n
}

// Evictions reports how many entries were evicted to stay within the byte budget.
func (m *Memory) Evictions() int64 {
	m.mu.Lock()
	n := m.evictions
	m.mu.Unlock()
	return n
}

// Len reports the number of entries and the bytes they take.
func (m *Memory) Len() (entries int, bytes int64) {
	m.mu.Lock()
	entries = len(m.items)
	bytes = m.size
	m.mu.Unlock()
	return entries, bytes
}

// evictOne removes the least recently used item that has had no hit since the hand last
// passed it; items with hits go back to the front, once. keep, the item being set, is never
// the one removed: once the others have had their second chance it would be the oldest
// unused item, and a Set that succeeded would leave nothing stored. It fits alone, since Set
// refuses an item over maxSize. It must be called with mu held.
func (m *Memory) evictOne(keep *memItem) {
	for {
		it := m.tail
		if !it.used && it != keep {
			m.remove(it)
			m.evictions++
			return
		}
		it.used = false
		unlink(m, it)
		pushFront(m, it)
	}
}

// remove must be called with mu held.
func (m *Memory) remove(it *memItem) {
	unlink(m, it)
	delete(m.items, it.key)
	m.size -= it.size
}

// pushFront puts it at the head of the list. It must be called with mu held.
func pushFront(m *Memory, it *memItem) {
	it.prev = nil
	it.next = m.head
	if m.head != nil {
		m.head.prev = it
	} else {
		m.tail = it
	}
	m.head = it
}

// unlink takes it out of the list. It must be called with mu held.
func unlink(m *Memory, it *memItem) {
	if it.prev != nil {
		it.prev.next = it.next
	} else {
		m.head = it.next
	}
	if it.next != nil {
		it.next.prev = it.prev
	} else {
		m.tail = it.prev
	}
	it.prev = nil
	it.next = nil
}
