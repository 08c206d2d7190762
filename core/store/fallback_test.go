package store

import (
	"context"
	"errors"
	"testing"
)

// errRemote is the failure of a remote store that cannot be reached.
var errRemote = errors.New("connection refused")

// flakyStore is a remote store that fails every call with fail while fail is set.
type flakyStore struct {
	m    *Memory
	fail error
}

func (f *flakyStore) Get(ctx context.Context, key string) (*Entry, error) {
	if f.fail != nil {
		return nil, f.fail
	}
	return f.m.Get(ctx, key)
}

func (f *flakyStore) Set(ctx context.Context, key string, e *Entry) error {
	if f.fail != nil {
		return f.fail
	}
	return f.m.Set(ctx, key, e)
}

func (f *flakyStore) Delete(ctx context.Context, key string) error {
	if f.fail != nil {
		return f.fail
	}
	return f.m.Delete(ctx, key)
}

func (f *flakyStore) PurgeKey(ctx context.Context, key string) (int, error) {
	if f.fail != nil {
		return 0, f.fail
	}
	return f.m.PurgeKey(ctx, key)
}

func (f *flakyStore) PurgePrefix(ctx context.Context, prefix string) (int, error) {
	if f.fail != nil {
		return 0, f.fail
	}
	return f.m.PurgePrefix(ctx, prefix)
}

func (f *flakyStore) PurgeTag(ctx context.Context, tag string) (int, error) {
	if f.fail != nil {
		return 0, f.fail
	}
	return f.m.PurgeTag(ctx, tag)
}

// fallbackFixture is a Fallback over a flaky remote, lost while down is set.
type fallbackFixture struct {
	remote *flakyStore
	local  *Memory
	down   bool
	f      *Fallback
}

func newFallbackFixture() *fallbackFixture {
	x := &fallbackFixture{remote: &flakyStore{m: NewMemory(MemorySettings{})}, local: NewMemory(MemorySettings{})}
	x.f = NewFallback(x.remote, x.local, func() bool { return x.down })
	return x
}

// lose makes the remote store fail every call and count as lost.
func (x *fallbackFixture) lose() {
	x.remote.fail = errRemote
	x.down = true
}

// wantLocal checks whether local memory holds key.
func wantLocal(t *testing.T, m *Memory, key string, want bool) {
	t.Helper()
	if got := Lookup(m, key) != nil; got != want {
		t.Errorf("local memory holds %q: %v, want %v", key, got, want)
	}
}

func TestFallbackSet(t *testing.T) {
	tests := []struct {
		desc string
		// fail is the remote's error; down whether the remote counts as lost.
		fail      error
		down      bool
		entry     *Entry
		wantErr   error
		wantLocal bool
	}{
		{desc: "remote takes it", entry: memEntry(500)},
		{desc: "remote lost: kept locally", fail: errRemote, down: true, entry: memEntry(500), wantLocal: true},
		{desc: "remote breaker open: kept locally", fail: ErrUnavailable, down: true, entry: memEntry(500), wantLocal: true},
		{desc: "one failed call, remote not lost: not kept", fail: errRemote, entry: memEntry(500), wantErr: errRemote},
		{desc: "too large for the remote: not kept", fail: ErrTooLarge, down: true, entry: memEntry(500), wantErr: ErrTooLarge},
		{desc: "too large for local memory: the remote's error", fail: errRemote, down: true,
			entry: memEntry(int(DefaultMaxEntrySize) + 4096), wantErr: errRemote},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			x := newFallbackFixture()
			x.remote.fail = tc.fail
			x.down = tc.down
			err := x.f.Set(context.Background(), "k", tc.entry)
			if !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Errorf("Set: err = %v, want %v", err, tc.wantErr)
			}
			wantLocal(t, x.local, "k", tc.wantLocal)
			if e := Lookup(x.local, "k"); e != nil && !e.Fallback {
				t.Error("the copy kept locally is not marked Fallback")
			}
		})
	}
}

// TestFallbackOutage walks a remote store through an outage: before it, entries go to the
// remote and nothing is kept locally; during it, entries are kept and read locally,
// deletions and purges reach local copies (the purges report the remote's failure); once
// the owner empties local memory (the store back), nothing kept during the outage is read
// again, and the remote's entries are.
func TestFallbackOutage(t *testing.T) {
	ctx := context.Background()
	x := newFallbackFixture()
	before := memEntry(500)
	if err := x.f.Set(ctx, "before", before); err != nil {
		t.Fatalf("Set before the outage: %v", err)
	}
	wantLocal(t, x.local, "before", false)

	x.lose()
	if got, err := x.f.Get(ctx, "before"); got != nil || !errors.Is(err, errRemote) {
		t.Errorf("Get of a remote entry during the outage = %v, %v; want nil, the remote's error", got, err)
	}
	during := memEntry(600)
	for _, k := range []string{"a", "b", "c", "d"} {
		if err := x.f.Set(ctx, k, during); err != nil {
			t.Fatalf("Set(%q) during the outage: %v", k, err)
		}
	}
	// What local memory keeps is a copy marked as the fallback's, for the engine's count of
	// its hits; the caller's entry, which its flight hands on, is left as it was.
	if got, err := x.f.Get(ctx, "a"); got == nil || err != nil || !got.Fallback || got.Status != during.Status || string(got.Body) != string(during.Body) {
		t.Errorf("Get during the outage = %v, %v; want the entry kept locally, marked Fallback", got, err)
	}
	if during.Fallback {
		t.Error("Set marked the caller's entry Fallback, want only the local copy marked")
	}
	if err := x.f.Delete(ctx, "a"); !errors.Is(err, errRemote) {
		t.Errorf("Delete during the outage: err = %v, want the remote's error", err)
	}
	wantLocal(t, x.local, "a", false)
	purges := []struct {
		desc  string
		purge func() (int, error)
		gone  string
	}{
		{"PurgeKey", func() (int, error) { return x.f.PurgeKey(ctx, "b") }, "b"},
		{"PurgePrefix", func() (int, error) { return x.f.PurgePrefix(ctx, "c") }, "c"},
	}
	for _, p := range purges {
		n, err := p.purge()
		if n != 1 || !errors.Is(err, errRemote) {
			t.Errorf("%s during the outage = %d, %v; want 1 (the local copy), the remote's error", p.desc, n, err)
		}
		wantLocal(t, x.local, p.gone, false)
	}

	// The store back: its owner empties local memory.
	x.remote.fail = nil
	x.down = false
	x.local.Clear()
	if got, err := x.f.Get(ctx, "d"); got != nil || err != nil {
		t.Errorf("Get of an entry kept during the outage, once the store is back = %v, %v; want nil, nil", got, err)
	}
	if got, err := x.f.Get(ctx, "before"); got != before || err != nil {
		t.Errorf("Get of the remote's entry once the store is back = %v, %v; want it", got, err)
	}
}

// TestFallbackEmptiedDuringSet: an entry whose remote write failed while local memory was
// emptied (the store came back meanwhile) is not kept: it would outlive the emptying that
// ends the outage's copies.
func TestFallbackEmptiedDuringSet(t *testing.T) {
	x := newFallbackFixture()
	x.remote.fail = errRemote
	x.f = NewFallback(x.remote, x.local, func() bool {
		x.local.Clear()
		return true
	})
	if err := x.f.Set(context.Background(), "k", memEntry(500)); !errors.Is(err, errRemote) {
		t.Errorf("Set: err = %v, want the remote's error", err)
	}
	wantLocal(t, x.local, "k", false)
}

// TestFallbackPurgeTag: a purge by tag during an outage drops the local copies carrying
// the tag; with the remote up it returns the remote's count.
func TestFallbackPurgeTag(t *testing.T) {
	ctx := context.Background()
	x := newFallbackFixture()
	tagged := memEntry(500)
	tagged.Tags = []string{"t"}
	if err := x.f.Set(ctx, "up", tagged); err != nil {
		t.Fatalf("Set: %v", err)
	}
	x.lose()
	if err := x.f.Set(ctx, "down", tagged); err != nil {
		t.Fatalf("Set during the outage: %v", err)
	}
	if n, err := x.f.PurgeTag(ctx, "t"); n != 1 || !errors.Is(err, errRemote) {
		t.Errorf("PurgeTag during the outage = %d, %v; want 1, the remote's error", n, err)
	}
	wantLocal(t, x.local, "down", false)
	x.remote.fail = nil
	if n, err := x.f.PurgeTag(ctx, "t"); n != 1 || err != nil {
		t.Errorf("PurgeTag with the remote back = %d, %v; want 1 (the remote's entry), nil", n, err)
	}
}

func TestMemorySetInEpoch(t *testing.T) {
	tests := []struct {
		desc string
		// empty empties the store between Epoch and SetInEpoch.
		empty   func(m *Memory)
		wantErr error
	}{
		{desc: "not emptied", empty: func(*Memory) {}},
		{desc: "Clear", empty: func(m *Memory) { m.Clear() }, wantErr: ErrEmptied},
		{desc: "purge of everything", empty: func(m *Memory) { m.PurgePrefix(context.Background(), "") }, wantErr: ErrEmptied},
		{desc: "purge of a prefix", empty: func(m *Memory) { m.PurgePrefix(context.Background(), "x") }},
		{desc: "a deletion", empty: func(m *Memory) { m.Delete(context.Background(), "k") }},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			m := NewMemory(MemorySettings{})
			epoch := m.Epoch()
			tc.empty(m)
			err := m.SetInEpoch("k", memEntry(500), epoch)
			if err != tc.wantErr {
				t.Errorf("SetInEpoch: err = %v, want %v", err, tc.wantErr)
			}
			wantLocal(t, m, "k", tc.wantErr == nil)
		})
	}
}

// TestFallbackOverGuard: a Fallback over a Guard reads through it as a function
// (ReadShared), with the Guard's breaker and local memory behind it as through Get.
func TestFallbackOverGuard(t *testing.T) {
	remote := &flakyStore{m: NewMemory(MemorySettings{})}
	local := NewMemory(MemorySettings{})
	g := NewGuard(remote, GuardSettings{})
	f := NewFallback(g, local, func() bool { return false })
	if f.guard != g {
		t.Fatal("NewFallback did not take its remote store for a Guard")
	}
	ctx := context.Background()
	e := &Entry{Status: 200}
	if err := remote.m.Set(ctx, "k", e); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadShared(f, ctx, "k"); got != e || err != nil {
		t.Errorf("ReadShared = %v, %v; want the remote entry", got, err)
	}
	remote.fail = errRemote
	if got, err := ReadShared(f, ctx, "k"); got != nil || !errors.Is(err, errRemote) {
		t.Errorf("ReadShared with the remote failing and nothing local = %v, %v; want %v", got, err, errRemote)
	}
	if err := local.Set(ctx, "k", e); err != nil {
		t.Fatal(err)
	}
	if got, err := f.Get(ctx, "k"); got != e || err != nil {
		t.Errorf("Get with the remote failing = %v, %v; want the local entry", got, err)
	}
	if got, err := ReadShared(f, ctx, "k"); got != e || err != nil {
		t.Errorf("ReadShared with the remote failing = %v, %v; want the local entry", got, err)
	}
	// ReadShared records its failures with the guard's breaker, as Get does: with the one
	// above, DefaultGuardFailures in a row open it.
	for i := 3; i < DefaultGuardFailures; i++ {
		ReadShared(f, ctx, "k")
	}
	if !g.Open() {
		t.Errorf("guard open after %d failed reads = false, want true", DefaultGuardFailures)
	}
	if got, err := ReadShared(f, ctx, "k"); got != e || err != nil {
		t.Errorf("ReadShared with the guard open = %v, %v; want the local entry", got, err)
	}
}

// BenchmarkReadShared measures what the engine's read of a shared store costs above the
// store's own Get: a Fallback over a Guard over memory read as a TimedGetter, as the Redis
// store is. Under Yaegi
// (scripts/yaegi-cost.sh core/store BenchmarkReadShared) it counts the layers' share of a hit
// read from Redis.
func BenchmarkReadShared(b *testing.B) {
	remote := NewMemory(MemorySettings{})
	e := &Entry{Status: 200}
	ctx := context.Background()
	if err := remote.Set(ctx, "k", e); err != nil {
		b.Fatal(err)
	}
	f := NewFallback(NewGuard(timedMemory{Memory: remote}, GuardSettings{}), NewMemory(MemorySettings{}), func() bool { return false })
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if got, err := ReadShared(f, ctx, "k"); got != e || err != nil {
			b.Fatalf("ReadShared = %v, %v", got, err)
		}
	}
}
