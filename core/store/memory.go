package store

import (
	"context"
	"strings"
	"sync"

	"github.com/weirproxy/weir/core/entry"
)

// Defaults for the memory store.
const (
	DefaultMaxSize      = 32 << 20
	DefaultMaxEntrySize = 2 << 20
)

// MemorySettings bound a Memory store.
type MemorySettings struct {
	// MaxSize is the byte budget for all entries: the heap they hold (Entry.Size), their
	// keys and the store's own bookkeeping, its tag and variant indexes included. Zero means
	// DefaultMaxSize.
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
//
// For purges (Purger) the store indexes its entries by tag and the variants by their
// primary key (the key up to its first NUL byte, httpcache.VariantKey), so that PurgeTag and
// PurgeKey touch only what they drop. The indexes hold keys, not entries, are kept in step
// on every Set, Delete, eviction and purge, and are counted in the budget (indexCost). The
// memory store forgets entries only when it evicts them or is told to: the engine deletes
// what it finds expired, so nothing expires behind the indexes' back. PurgePrefix has no
// index: it reads every key, under the lock, once, so a large store holds its lock, and so
// every hit, for as long as that takes; purges by prefix are an operator's rare request.
type Memory struct {
	maxSize, maxEntrySize int64

	// mu guards everything below and the links of the items.
	mu    sync.Mutex
	items map[string]*memItem
	// tags holds, for each tag, the keys of the entries carrying it; variants holds, for
	// each primary key, the keys of its variants. A set emptied is deleted.
	tags     map[string]map[string]struct{}
	variants map[string]map[string]struct{}
	head     *memItem // most recently added or given a second chance
	tail     *memItem // next under the eviction hand
	size     int64
	// evictions counts the entries evicted to stay within maxSize.
	evictions int64
	// epoch counts the times the store was emptied at once (Clear, PurgePrefix of ""),
	// for SetInEpoch.
	epoch int64
}

var (
	_ Store  = (*Memory)(nil)
	_ Purger = (*Memory)(nil)
)

type memItem struct {
	key   string
	entry *Entry
	size  int64
	// prev is nearer the head, next nearer the tail.
	prev, next *memItem
	// used is set by every hit since the item last passed the eviction hand.
	used bool
	// indexed is set while the item is in the tag or variant index: only those items pay
	// for leaving it when they go.
	indexed bool
}

// The heap of a 64-bit platform, as entry.Entry.Size counts it: a string header, and a map's
// header and table directory with the fewest slots a map has.
const (
	stringHeader = 16
	mapHeader    = 112
	minMapSlots  = 8
)

// itemHeap is what the store holds for each entry besides the entry and its key's bytes: the
// memItem (50 bytes, in a 64-byte class) and a slot of items (a string header and a pointer,
// in a map at least half full after it doubles).
const itemHeap = 64 + 2*(stringHeader+8+1)

// indexCost is what one membership of an entry in the tag or variant index may take: a set
// of its own (a map's header and first slots, each a string header and a control byte) and
// its slot in the index (a string header and a pointer, doubled as itemHeap's). A set shared
// by many entries takes about a tenth of that per member; counting every membership as a set
// of its own keeps the budget a bound on the heap whatever the tags are.
const indexCost = mapHeader + minMapSlots*(stringHeader+1) + 2*(stringHeader+8+1)

// itemCost is what an entry stored under key counts against the budget: the heap that
// storing it holds (Entry.Size) and its memberships of the indexes. variant tells whether
// key is a variant's (holds a NUL byte, httpcache.VariantKey): the caller has looked.
func itemCost(key string, e *Entry, variant bool) int64 {
	n := entry.SizeOf(e) + itemHeap + (len(key)+len(key)>>3+15)&^15
	if len(e.Tags) > 0 {
		n += len(e.Tags) * indexCost
	}
	if variant {
		n += indexCost
	}
	return int64(n)
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
	return &Memory{
		maxSize: s.MaxSize, maxEntrySize: s.MaxEntrySize, items: make(map[string]*memItem),
		tags: make(map[string]map[string]struct{}), variants: make(map[string]map[string]struct{}),
	}
}

// Lookup is Get without a context or an error, for the hit path. It is a function, not a
// method: in Yaegi a method call goes through a reflective wrapper that a function call does
// not, and this one is on every hit.
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
	return Put(m, key, e, -1)
}

// Epoch is how many times the store has been emptied at once (Clear, or PurgePrefix of
// ""): read it before work whose result must not outlive an emptying, and store the
// result with SetInEpoch.
func (m *Memory) Epoch() int64 {
	m.mu.Lock()
	n := m.epoch
	m.mu.Unlock()
	return n
}

// SetInEpoch is Set, unless the store was emptied since Epoch returned epoch: then it
// stores nothing and returns ErrEmptied. The check and the store are made under one lock,
// so an entry is either stored before an emptying, which drops it, or refused after it.
func (m *Memory) SetInEpoch(key string, e *Entry, epoch int64) error {
	return Put(m, key, e, epoch)
}

// Put is Set and, with epoch not negative, SetInEpoch: a function, for the engine's miss
// path, which calls it directly rather than Set through the Store interface (under Yaegi a
// method call goes through a reflective wrapper that a function call does not; Set reads
// no context).
func Put(m *Memory, key string, e *Entry, epoch int64) error {
	variant := strings.IndexByte(key, 0) > 0
	size := itemCost(key, e, variant)
	// The per-entry limit is on the answer's body, as the engine and redisstore apply it;
	// what the entry holds beside it counts against the budget, which it must fit alone.
	if int64(len(e.Body)) > m.maxEntrySize || size > m.maxSize {
		return ErrTooLarge
	}
	m.mu.Lock()
	if epoch >= 0 && epoch != m.epoch {
		m.mu.Unlock()
		return ErrEmptied
	}
	it := m.items[key]
	if it != nil {
		if it.indexed {
			index(m, it, false)
		}
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
	if len(e.Tags) > 0 || variant {
		index(m, it, true)
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
	clearLocked(m)
	m.mu.Unlock()
}

// clearLocked removes every entry. It must be called with mu held.
func clearLocked(m *Memory) {
	m.epoch++
	m.head = nil
	m.tail = nil
	m.items = make(map[string]*memItem)
	m.tags = make(map[string]map[string]struct{})
	m.variants = make(map[string]map[string]struct{})
	m.size = 0
}

// PurgeKey implements Purger: the entry under key and every variant the variant index
// holds for it.
func (m *Memory) PurgeKey(_ context.Context, key string) (int, error) {
	n := 0
	m.mu.Lock()
	if it := m.items[key]; it != nil {
		m.remove(it)
		n++
	}
	n += removeAll(m, m.variants[key])
	m.mu.Unlock()
	return n, nil
}

// PurgeTag implements Purger, from the tag index.
func (m *Memory) PurgeTag(_ context.Context, tag string) (int, error) {
	m.mu.Lock()
	n := removeAll(m, m.tags[tag])
	m.mu.Unlock()
	return n, nil
}

// removeAll removes the items of the keys in set, a set of one of the indexes, and returns
// how many. remove deletes them from set while the loop reads it, which a range over a map
// allows; the set itself goes with its last member. It must be called with mu held.
func removeAll(m *Memory, set map[string]struct{}) int {
	n := 0
	for k := range set {
		m.remove(m.items[k])
		n++
	}
	return n
}

// PurgePrefix implements Purger. "" empties the store at once; any other prefix is compared
// with every key, under the lock (see Memory).
func (m *Memory) PurgePrefix(_ context.Context, prefix string) (int, error) {
	m.mu.Lock()
	n := len(m.items)
	if prefix == "" {
		clearLocked(m)
		m.mu.Unlock()
		return n, nil
	}
	n = removeWhereLocked(m, func(key string) bool { return strings.HasPrefix(key, prefix) })
	m.mu.Unlock()
	return n, nil
}

// DeleteFunc removes every entry whose key match reports, and returns how many it removed.
// match is called with the store's lock held: it must be quick and call nothing of the
// store's.
func (m *Memory) DeleteFunc(match func(key string) bool) int {
	m.mu.Lock()
	n := removeWhereLocked(m, match)
	m.mu.Unlock()
	return n
}

// removeWhereLocked removes every entry whose key match reports, and returns how many. It
// must be called with mu held.
func removeWhereLocked(m *Memory, match func(key string) bool) int {
	n := 0
	for key, it := range m.items {
		if match(key) {
			m.remove(it)
			n++
		}
	}
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
	if it.indexed {
		index(m, it, false)
	}
	unlink(m, it)
	delete(m.items, it.key)
	m.size -= it.size
}

// index puts it in the tag index under each of its entry's tags and, for a variant, in the
// variant index under its primary key (the key up to its first NUL byte, if that is not the
// first byte: keys beginning with one are the engine's own, such as shared breaker
// deadlines, and no variants), or, with in false, takes it out of them again. A function
// rather than a method, called only for items that have something to index: in Yaegi, Set
// and remove would otherwise pay for its frame on every call. It must be called with mu
// held.
func index(m *Memory, it *memItem, in bool) {
	if i := strings.IndexByte(it.key, 0); i > 0 {
		member(m.variants, it.key[:i], it.key, in)
	}
	for _, t := range it.entry.Tags {
		member(m.tags, t, it.key, in)
	}
	it.indexed = in
}

// member adds key to the set of idx named name (in), or deletes it and, when the set is
// left empty, the set.
func member(idx map[string]map[string]struct{}, name, key string, in bool) {
	set := idx[name]
	if !in {
		delete(set, key)
		if len(set) == 0 {
			delete(idx, name)
		}
		return
	}
	if set == nil {
		set = make(map[string]struct{})
		idx[name] = set
	}
	set[key] = struct{}{}
}

// pushFront and unlink are a copy of the list code that core/limit writes out too
// (ARCHITECTURE.md, "Linked lists"), kept on purpose: Yaegi has no generics, so shared list
// code would hold interface{} values, container/list's shape: an allocation beside each
// element and a type assertion on every read.
//
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
