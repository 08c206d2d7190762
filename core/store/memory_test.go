package store

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirproxy/weir/internal/await"
)

// memEntry returns an entry whose Size is exactly size bytes (at least the fixed overhead).
func memEntry(size int) *Entry {
	e := &Entry{Status: 200}
	if n := size - e.Size(); n > 0 {
		e.Body = make([]byte, n)
	}
	return e
}

// memCost is what an entry stored under key counts against the budget.
func memCost(key string, e *Entry) int64 {
	return itemCost(key, e, strings.IndexByte(key, 0) > 0)
}

// wantKeys checks which keys m holds without counting the checks as uses, and that its list
// links every item it holds.
func wantKeys(t *testing.T, m *Memory, present, absent []string) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := linked(t, m); n != len(m.items) {
		t.Errorf("the list links %d items, the store holds %d", n, len(m.items))
	}
	for _, k := range present {
		if m.items[k] == nil {
			t.Errorf("%q was evicted, want it kept", k)
		}
	}
	for _, k := range absent {
		if m.items[k] != nil {
			t.Errorf("%q was kept, want it evicted", k)
		}
	}
}

func TestMemorySetGetDelete(t *testing.T) {
	ctx := context.Background()
	m := NewMemory(MemorySettings{})
	e := memEntry(200)
	if got, err := m.Get(ctx, "a"); got != nil || err != nil {
		t.Fatalf("Get on empty store = %v, %v; want nil, nil", got, err)
	}
	mustSet(t, m, "a", e)
	if got, err := m.Get(ctx, "a"); got != e || err != nil {
		t.Errorf("Get = %p, %v; want %p, nil", got, err, e)
	}
	if got := Lookup(m, "a"); got != e {
		t.Errorf("Lookup = %p, want %p", got, e)
	}
	if n, b := m.Len(); n != 1 || b != memCost("a", e) {
		t.Errorf("Len = %d, %d; want 1, %d", n, b, memCost("a", e))
	}
	if err := m.Delete(ctx, "a"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if err := m.Delete(ctx, "a"); err != nil {
		t.Errorf("Delete of a missing key: %v, want nil", err)
	}
	if n, b := m.Len(); n != 0 || b != 0 {
		t.Errorf("Len after Delete = %d, %d; want 0, 0", n, b)
	}
}

func TestMemoryReplaceAccountsBytes(t *testing.T) {
	m := NewMemory(MemorySettings{MaxSize: 10000, MaxEntrySize: 5000})
	small, big := memEntry(300), memEntry(2000)
	tests := []struct {
		desc string
		e    *Entry
	}{
		{desc: "first", e: small},
		{desc: "grow", e: big},
		{desc: "shrink", e: small},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			mustSet(t, m, "k", tc.e)
			if got := Lookup(m, "k"); got != tc.e {
				t.Errorf("Lookup returned another entry than the last one set")
			}
			if n, b := m.Len(); n != 1 || b != memCost("k", tc.e) {
				t.Errorf("Len = %d, %d; want 1, %d", n, b, memCost("k", tc.e))
			}
		})
	}
}

// Eviction is least recently used by bytes, as a second chance (CLOCK): an entry with a
// hit since the hand last passed outlives one without.
func TestMemoryEvictsLeastRecentlyUsedByBytes(t *testing.T) {
	ctx := context.Background()
	e := memEntry(1000)
	cost := memCost("k0", e)
	// Room for three entries, not four.
	m := NewMemory(MemorySettings{MaxSize: 3*cost + cost/2, MaxEntrySize: cost * 3})
	for i := 0; i < 3; i++ {
		mustSet(t, m, "k"+strconv.Itoa(i), e)
	}
	// k0 is used again: k1 is now the least recently used.
	Lookup(m, "k0")
	mustSet(t, m, "k3", e)
	wantKeys(t, m, []string{"k0", "k2", "k3"}, []string{"k1"})
	if n, b := m.Len(); n != 3 || b != 3*cost {
		t.Errorf("Len = %d, %d; want 3, %d", n, b, 3*cost)
	}

	// Get counts as a use, as Lookup does: k2 and k3 outlive k0, whose use the hand has
	// already spent.
	m.Get(ctx, "k2")
	Lookup(m, "k3")
	mustSet(t, m, "k4", e)
	wantKeys(t, m, []string{"k2", "k3", "k4"}, []string{"k0"})

	// A big entry evicts as many as it needs, and is itself kept.
	big := memEntry(int(2 * cost))
	mustSet(t, m, "big", big)
	wantKeys(t, m, []string{"big"}, nil)
	wantWithinBudget(t, m, 2)
}

// An entry just set is never the one evicted to make room for it, even when every other
// entry has had a hit.
func TestMemoryKeepsTheEntryJustSet(t *testing.T) {
	ctx := context.Background()
	e := memEntry(1000)
	cost := memCost("k0", e)
	m := NewMemory(MemorySettings{MaxSize: 3 * cost, MaxEntrySize: 2 * cost})
	for i := 0; i < 3; i++ {
		m.Set(ctx, "k"+strconv.Itoa(i), e)
	}
	for i := 0; i < 3; i++ {
		Lookup(m, "k"+strconv.Itoa(i))
	}
	mustSet(t, m, "k3", memEntry(1000))
	if Lookup(m, "k3") == nil {
		t.Error("Set succeeded but the entry was evicted at once")
	}
	wantWithinBudget(t, m, 3)
}

// Replacing an entry counts as a use.
func TestMemoryUpdateCountsAsUse(t *testing.T) {
	ctx := context.Background()
	e := memEntry(1000)
	cost := memCost("k0", e)
	m := NewMemory(MemorySettings{MaxSize: 2 * cost, MaxEntrySize: cost})
	m.Set(ctx, "k0", e)
	m.Set(ctx, "k1", e)
	m.Set(ctx, "k0", memEntry(1000))
	m.Set(ctx, "k2", e)
	wantKeys(t, m, []string{"k0", "k2"}, []string{"k1"})
}

func TestMemoryPerEntryLimit(t *testing.T) {
	ctx := context.Background()
	m := NewMemory(MemorySettings{MaxSize: 100000, MaxEntrySize: 2000})
	fields := make(http.Header, 1000)
	for i := 0; i < 1000; i++ {
		fields["X-Field-"+strconv.Itoa(i)] = []string{"v"}
	}
	tests := []struct {
		desc string
		key  string
		e    *Entry
		want error
	}{
		{desc: "body at the limit", key: "k", e: &Entry{Status: 200, Body: make([]byte, 2000)}},
		{desc: "body over the limit", key: "big", e: &Entry{Status: 200, Body: make([]byte, 2001)}, want: ErrTooLarge},
		{desc: "small body, header fields over the whole budget", key: "fields", e: &Entry{Status: 200, Header: fields}, want: ErrTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			tc.e.Prepare()
			if err := m.Set(ctx, tc.key, tc.e); !errors.Is(err, tc.want) {
				t.Errorf("Set = %v, want %v", err, tc.want)
			}
		})
	}
	wantKeys(t, m, []string{"k"}, []string{"big", "fields"})
	if n, _ := m.Len(); n != 1 {
		t.Errorf("entries = %d, want 1", n)
	}
}

func TestNewMemoryDefaults(t *testing.T) {
	tests := []struct {
		desc                string
		s                   MemorySettings
		wantSize, wantEntry int64
	}{
		{desc: "zero means defaults", s: MemorySettings{}, wantSize: DefaultMaxSize, wantEntry: DefaultMaxEntrySize},
		{desc: "negative means defaults", s: MemorySettings{MaxSize: -1, MaxEntrySize: -1}, wantSize: DefaultMaxSize, wantEntry: DefaultMaxEntrySize},
		{desc: "entry limit capped by the budget", s: MemorySettings{MaxSize: 1000, MaxEntrySize: 5000}, wantSize: 1000, wantEntry: 1000},
		{desc: "small budget caps the default entry limit", s: MemorySettings{MaxSize: 1 << 20}, wantSize: 1 << 20, wantEntry: 1 << 20},
		{desc: "explicit values kept", s: MemorySettings{MaxSize: 1 << 20, MaxEntrySize: 1 << 10}, wantSize: 1 << 20, wantEntry: 1 << 10},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			m := NewMemory(tc.s)
			if m.maxSize != tc.wantSize || m.maxEntrySize != tc.wantEntry {
				t.Errorf("limits = %d, %d; want %d, %d", m.maxSize, m.maxEntrySize, tc.wantSize, tc.wantEntry)
			}
		})
	}
}

// linked returns how many items m's list holds, walked from the head, after checking that
// every link back agrees and the list ends at the tail. m.mu must be held.
func linked(t *testing.T, m *Memory) int {
	t.Helper()
	n := 0
	var prev *memItem
	for it := m.head; it != nil; it = it.next {
		if it.prev != prev {
			t.Fatalf("item %d of the list (%q) links back to the wrong item", n, it.key)
		}
		prev = it
		n++
	}
	if m.tail != prev {
		t.Fatalf("the list's tail is not its last item")
	}
	return n
}

// Sets of tagged entries and variants, lookups, deletions and purges run side by side
// without corrupting the list, the indexes or the count of bytes (run with -race).
func TestMemoryConcurrentUse(t *testing.T) {
	ctx := context.Background()
	e := tagged(time.Now(), []string{"even", "all"})
	odd := tagged(time.Now(), []string{"odd", "all"})
	m := NewMemory(MemorySettings{MaxSize: 30 * memCost("http://h/00\x00v0", e)})
	await.Goroutines(t, 8, 10*time.Second, "concurrent Set, Lookup, Delete and purges", func(g int) {
		for i := 0; i < 300; i++ {
			k := "http://h/" + strconv.Itoa((g*7+i)%40)
			switch i % 7 {
			case 0:
				m.Set(ctx, k, e)
			case 1:
				m.Set(ctx, k+"\x00v"+strconv.Itoa(i%3), odd)
			case 2:
				Lookup(m, k)
			case 3:
				m.Delete(ctx, k)
			case 4:
				m.PurgeKey(ctx, k)
			case 5:
				m.PurgeTag(ctx, []string{"even", "odd", "all"}[i%3])
			default:
				m.PurgePrefix(ctx, k)
			}
		}
	})
	checkIndex(t, m)
	n, b := m.Len()
	m.mu.Lock()
	listLen := linked(t, m)
	m.mu.Unlock()
	if n != listLen || b > m.maxSize {
		t.Errorf("Len = %d, %d; list holds %d entries; budget %d", n, b, listLen, m.maxSize)
	}
}

// The memory store bounds what it holds by bytes and drops the least recently used entry.
func ExampleMemory() {
	ctx := context.Background()
	// Each entry below holds about 750 bytes: its 300-byte body, the Entry itself and the
	// store's bookkeeping.
	m := NewMemory(MemorySettings{MaxSize: 2000, MaxEntrySize: 600})
	body := make([]byte, 300)
	m.Set(ctx, "/a", &Entry{Status: 200, Body: body})
	m.Set(ctx, "/b", &Entry{Status: 200, Body: body})
	Lookup(m, "/a")                                   // /a is now the most recently used
	m.Set(ctx, "/c", &Entry{Status: 200, Body: body}) // over budget: /b goes
	fmt.Println(Lookup(m, "/a") != nil, Lookup(m, "/b") != nil, Lookup(m, "/c") != nil)
	fmt.Println(m.Set(ctx, "/big", &Entry{Status: 200, Body: make([]byte, 1000)}))
	// Output:
	// true false true
	// entry over the per-entry size limit
}

// TestExampleMemory asserts what ExampleMemory shows, for yaegi test, which runs no Example.
func TestExampleMemory(t *testing.T) {
	ctx := context.Background()
	m := NewMemory(MemorySettings{MaxSize: 2000, MaxEntrySize: 600})
	body := make([]byte, 300)
	m.Set(ctx, "/a", &Entry{Status: 200, Body: body})
	m.Set(ctx, "/b", &Entry{Status: 200, Body: body})
	Lookup(m, "/a")
	m.Set(ctx, "/c", &Entry{Status: 200, Body: body})
	wantKeys(t, m, []string{"/a", "/c"}, []string{"/b"})
	if err := m.Set(ctx, "/big", &Entry{Status: 200, Body: make([]byte, 1000)}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Set of a 1000-byte body = %v, want ErrTooLarge", err)
	}
}

// headerHeavyEntry is an answer with fields header fields and a 1 KiB body, built as the
// engine builds what it stores: a header map sized for it, each field's values copied into
// an array of their own, the entry prepared.
func headerHeavyEntry(i, fields int) *Entry {
	h := make(http.Header, fields+1)
	for f := 0; f < fields; f++ {
		h["X-Field-"+strconv.Itoa(f)] = append([]string(nil), "value "+strconv.Itoa(f)+" of answer "+strconv.Itoa(i))
	}
	h["Content-Length"] = []string{"1024"}
	born := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	e := &Entry{Status: 200, Header: h, Body: make([]byte, 1024), Born: born, FreshUntil: born.Add(time.Minute), KeepUntil: born.Add(time.Minute)}
	e.Prepare()
	return e
}

// liveHeap is the heap in use after a full collection.
func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// The budget bounds the heap that the stored entries hold, header fields, tags and indexes
// and all: a store filled with answers of 300 header fields each, or with variants carrying
// many tags, holds at most its budget plus 10% (the allowance covers the heap's own rounding
// and what the runtime allocates meanwhile; the answers fill 0.94 to 0.95 of the budget, the
// tagged variants 0.89, their index being counted as if each tag were an entry's own).
// Entries are built as the engine
// stores them, and as Decode builds them for the near cache: each a copy of its own input
// (redigo allocates every reply), whose array the body keeps alive. Under Yaegi the figures
// are the same: interpreted structs are laid out as compiled ones.
func TestMemoryBudgetBoundsTheHeap(t *testing.T) {
	const (
		budget = 8 << 20
		fields = 300
	)
	tests := []struct {
		desc  string
		entry func(i int) *Entry
	}{
		{desc: "answers as the engine stores them", entry: func(i int) *Entry { return headerHeavyEntry(i, fields) }},
		{desc: "answers decoded for the near cache", entry: func(i int) *Entry {
			e, err := Decode(append([]byte(nil), Encode(headerHeavyEntry(i, fields))...))
			if err != nil {
				panic(err)
			}
			return e
		}},
		// Small answers, many tags each, most of them their own: the index's sets, one per
		// tag, are most of what is held.
		{desc: "variants with many tags", entry: func(i int) *Entry {
			e := headerHeavyEntry(i, 2)
			e.Tags = make([]string, 0, 24)
			for j := 0; j < 20; j++ {
				e.Tags = append(e.Tags, "product-"+strconv.Itoa(i)+"-"+strconv.Itoa(j))
			}
			e.Tags = append(e.Tags, "all", "products", "shared-"+strconv.Itoa(i%10), "shared-"+strconv.Itoa(i%100))
			return e
		}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			before := liveHeap()
			m := NewMemory(MemorySettings{MaxSize: budget})
			// Set until the store has evicted as many entries as it holds: it is full.
			held := 0
			for i := 0; i < 100000; i++ {
				if err := m.Set(context.Background(), "http://example.com/answer/"+strconv.Itoa(i/4)+"\x00v"+strconv.Itoa(i%4), tc.entry(i)); err != nil {
					t.Fatalf("Set: %v", err)
				}
				if held, _ = m.Len(); i+1 >= 2*held {
					break
				}
			}
			heap := liveHeap() - before
			_, counted := m.Len()
			runtime.KeepAlive(m)
			t.Logf("%d entries counted as %d bytes hold %d bytes of heap: %.2f of the budget", held, counted, heap, float64(heap)/budget)
			if heap > budget+budget/10 {
				t.Errorf("heap held = %d bytes (%.2f of the budget), want at most the budget %d plus 10%%", heap, float64(heap)/budget, budget)
			}
		})
	}
}

// BenchmarkMemorySet measures a Set into a full store: the entry linked in, and one evicted
// to make room.
func BenchmarkMemorySet(b *testing.B) {
	e := memEntry(1000)
	const keys = 4096
	m := NewMemory(MemorySettings{MaxSize: keys / 2 * memCost("k0000", e)})
	names := make([]string, keys)
	for i := range names {
		names[i] = fmt.Sprintf("k%04d", i)
	}
	ctx := context.Background()
	for i := 0; i < keys; i++ {
		m.Set(ctx, names[i], e)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.Set(ctx, names[i%keys], e)
	}
}

// mustSet sets key to e in m, failing the test if Set fails.
func mustSet(t *testing.T, m *Memory, key string, e *Entry) {
	t.Helper()
	if err := m.Set(context.Background(), key, e); err != nil {
		t.Fatalf("Set(%q): %v", key, err)
	}
}

// wantWithinBudget fails the test unless m holds n entries within its budget of bytes.
func wantWithinBudget(t *testing.T, m *Memory, n int) {
	t.Helper()
	if got, b := m.Len(); got != n || b > m.maxSize {
		t.Errorf("Len = %d, %d; want %d entries within the budget %d", got, b, n, m.maxSize)
	}
}
