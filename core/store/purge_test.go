package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"testing"
	"time"
)

// purge runs the purge op ("key", "prefix" or "tag") of p with arg. (The suite every
// Purger passes, internal/storetest, runs from purge_suite_test.go: this package's own tests
// cannot import it.)
func purge(ctx context.Context, p Purger, op, arg string) (int, error) {
	switch op {
	case "key":
		return p.PurgeKey(ctx, arg)
	case "prefix":
		return p.PurgePrefix(ctx, arg)
	default:
		return p.PurgeTag(ctx, arg)
	}
}

// tagged is an answer carrying tags, kept for an hour after now.
func tagged(now time.Time, tags []string) *Entry {
	e := &Entry{Status: 200, Body: []byte("x"), Born: now, FreshUntil: now.Add(time.Minute), KeepUntil: now.Add(time.Hour), Tags: tags}
	e.Prepare()
	return e
}

// checkIndex checks that the tag and variant indexes name exactly the items held with their
// tags and variants, with no empty set, and that the bytes counted are the items' costs.
func checkIndex(t *testing.T, m *Memory) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	want := map[string]bool{}
	var size int64
	for k, it := range m.items {
		size += memCost(k, it.entry)
		for _, tag := range it.entry.Tags {
			want["tag "+tag+" "+k] = true
		}
		if i := indexOfNUL(k); i > 0 {
			want["variant "+k[:i]+" "+k] = true
		}
		if it.indexed != (len(it.entry.Tags) > 0 || indexOfNUL(k) > 0) {
			t.Errorf("%q indexed = %v with %d tags", k, it.indexed, len(it.entry.Tags))
		}
	}
	got := map[string]bool{}
	for name, set := range m.tags {
		if len(set) == 0 {
			t.Errorf("tag %q has an empty set", name)
		}
		for k := range set {
			got["tag "+name+" "+k] = true
		}
	}
	for name, set := range m.variants {
		if len(set) == 0 {
			t.Errorf("key %q has an empty variant set", name)
		}
		for k := range set {
			got["variant "+name+" "+k] = true
		}
	}
	if fmt.Sprint(sortedKeys(got)) != fmt.Sprint(sortedKeys(want)) {
		t.Errorf("index holds %q, want %q", sortedKeys(got), sortedKeys(want))
	}
	if size != m.size {
		t.Errorf("store counts %d bytes, its items cost %d", m.size, size)
	}
}

func indexOfNUL(k string) int {
	for i := 0; i < len(k); i++ {
		if k[i] == 0 {
			return i
		}
	}
	return -1
}

func sortedKeys(set map[string]bool) []string {
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// The indexes follow every change of what is stored: a replaced entry's old tags no longer
// find it, and deleted and evicted entries leave no member behind.
func TestMemoryIndexFollowsChanges(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	e := tagged(now, []string{"a", "b"})
	m := NewMemory(MemorySettings{MaxSize: 4 * memCost("http://h/0", e)})
	steps := []struct {
		desc string
		do   func()
		tag  string
		want int // entries PurgeTag(tag) would find
	}{
		{desc: "set", do: func() { m.Set(ctx, "http://h/1", e) }, tag: "a", want: 1},
		{desc: "replaced without the tag", do: func() { m.Set(ctx, "http://h/1", tagged(now, []string{"b"})) }, tag: "a", want: 0},
		{desc: "replaced with it again", do: func() { m.Set(ctx, "http://h/1", e) }, tag: "a", want: 1},
		{desc: "deleted", do: func() { m.Delete(ctx, "http://h/1") }, tag: "b", want: 0},
		{desc: "variants set", do: func() {
			m.Set(ctx, "http://h/2", tagged(now, nil))
			m.Set(ctx, "http://h/2\x00v1", e)
		}, tag: "b", want: 1},
		{desc: "evicted by newer entries", do: func() {
			for i := 3; i < 10; i++ {
				m.Set(ctx, "http://h/"+strconv.Itoa(i), tagged(now, []string{"c"}))
			}
		}, tag: "b", want: 0},
		{desc: "purged by tag", do: func() { m.PurgeTag(ctx, "c") }, tag: "c", want: 0},
		{desc: "set again", do: func() {
			m.Set(ctx, "http://h/2", tagged(now, []string{"d"}))
			m.Set(ctx, "http://h/2\x00v1", tagged(now, []string{"d"}))
			m.Set(ctx, "http://h/2\x00v2", tagged(now, []string{"d"}))
		}, tag: "d", want: 3},
		{desc: "purged with its variants", do: func() { m.PurgeKey(ctx, "http://h/2") }, tag: "d", want: 0},
		{desc: "set once more", do: func() { m.Set(ctx, "http://h/3\x00v1", tagged(now, []string{"e"})) }, tag: "e", want: 1},
		{desc: "purged by prefix", do: func() { m.PurgePrefix(ctx, "http://h/3") }, tag: "e", want: 0},
		{desc: "cleared", do: func() {
			m.Set(ctx, "http://h/4\x00v1", tagged(now, []string{"f"}))
			m.Clear()
		}, tag: "f", want: 0},
	}
	for _, st := range steps {
		st.do()
		checkIndex(t, m)
		m.mu.Lock()
		got := len(m.tags[st.tag])
		m.mu.Unlock()
		if got != st.want {
			t.Errorf("after %s: tag %q indexes %d entries, want %d", st.desc, st.tag, got, st.want)
		}
	}
}

// Each purge of a Guard reaches its store with its argument, without the guard's timeout,
// and returns what the store returned.
func TestGuardPurgesThrough(t *testing.T) {
	for _, op := range []string{"key", "prefix", "tag"} {
		t.Run(op, func(t *testing.T) {
			h := newGuardHarness(GuardSettings{})
			n, err := purge(context.Background(), h.g, op, "x")
			if n != 7 || err != nil {
				t.Errorf("purge = %d, %v; want 7, nil", n, err)
			}
			if h.inner.purged != op+" x" {
				t.Errorf("the store was asked %q, want %q", h.inner.purged, op+" x")
			}
			if h.inner.deadline != -1 {
				t.Errorf("the purge had a deadline %v away; want the caller's, none", h.inner.deadline)
			}
		})
	}
}

// Failed purges count as failed calls, and an open breaker refuses purges; a purge whose
// caller's context ended is not counted.
func TestGuardPurgeBreaker(t *testing.T) {
	h := newGuardHarness(GuardSettings{})
	ctx, cancel := context.WithTimeout(context.Background(), -time.Second)
	defer cancel()
	for i := 0; i < 2*DefaultGuardFailures; i++ {
		h.inner.results = []error{context.DeadlineExceeded}
		purge(ctx, h.g, "tag", "x")
	}
	if h.g.Open() {
		t.Fatalf("purges whose caller's deadline passed opened the breaker")
	}
	for i := 0; i < DefaultGuardFailures; i++ {
		h.inner.results = []error{errBoom}
		if _, err := purge(context.Background(), h.g, "prefix", "x"); !errors.Is(err, errBoom) {
			t.Fatalf("failing purge %d: err = %v, want %v", i, err, errBoom)
		}
	}
	calls := h.inner.calls
	if n, err := purge(context.Background(), h.g, "key", "x"); n != 0 || !errors.Is(err, ErrUnavailable) {
		t.Errorf("purge with the breaker open = %d, %v; want 0, ErrUnavailable", n, err)
	}
	if h.inner.calls != calls {
		t.Errorf("a refused purge reached the store")
	}
	h.wantChanges(t, "open=true err=boom")
}

func TestGuardPurgeUnsupported(t *testing.T) {
	g := NewGuard(nopStore{}, GuardSettings{})
	for _, op := range []string{"key", "prefix", "tag"} {
		if n, err := purge(context.Background(), g, op, "x"); n != 0 || !errors.Is(err, ErrPurgeUnsupported) {
			t.Errorf("%s purge of a store that cannot = %d, %v; want 0, ErrPurgeUnsupported", op, n, err)
		}
	}
}

// shopMemory holds two product pages tagged with their product and "products", and a home
// page without tags.
func shopMemory(ctx context.Context) *Memory {
	m := NewMemory(MemorySettings{})
	now := time.Now()
	m.Set(ctx, "http://shop/p/1", &Entry{Status: 200, KeepUntil: now.Add(time.Hour), Tags: []string{"product-1", "products"}})
	m.Set(ctx, "http://shop/p/2", &Entry{Status: 200, KeepUntil: now.Add(time.Hour), Tags: []string{"product-2", "products"}})
	m.Set(ctx, "http://shop/", &Entry{Status: 200, KeepUntil: now.Add(time.Hour)})
	return m
}

// A purge of a tag drops every entry carrying it, whatever else it carries.
func ExampleMemory_PurgeTag() {
	ctx := context.Background()
	m := shopMemory(ctx)
	fmt.Println(m.PurgeTag(ctx, "product-1"))
	fmt.Println(m.PurgeTag(ctx, "products"))
	fmt.Println(Lookup(m, "http://shop/") != nil)
	// Output:
	// 1 <nil>
	// 1 <nil>
	// true
}

// TestExampleMemoryPurgeTag asserts what ExampleMemory_PurgeTag shows, for yaegi test.
func TestExampleMemoryPurgeTag(t *testing.T) {
	ctx := context.Background()
	m := shopMemory(ctx)
	if n, err := m.PurgeTag(ctx, "product-1"); n != 1 || err != nil {
		t.Errorf("PurgeTag(product-1) = %d, %v; want 1, nil", n, err)
	}
	if n, err := m.PurgeTag(ctx, "products"); n != 1 || err != nil {
		t.Errorf("PurgeTag(products) = %d, %v; want 1, nil", n, err)
	}
	wantKeys(t, m, []string{"http://shop/"}, []string{"http://shop/p/1", "http://shop/p/2"})
}
