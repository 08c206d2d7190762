// Package storetest holds what every store.Purger must do, as one suite that the tests of
// the memory store and of the Redis store both run: the same entries stored, the same
// purges, the same keys dropped and kept. Test-only, outside core/ as internal/redistest is.
package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/store"
)

// PurgeStore is a store with purges.
type PurgeStore interface {
	store.Store
	store.Purger
}

// Keys of Fixture.
const (
	KeyA      = "http://h/a"
	KeyAVar1  = "http://h/a\x00g1\x00vary\x00Accept:gzip"
	KeyAVar2  = "http://h/a\x00g2\x00vary\x00Accept"
	KeyAB     = "http://h/ab"
	KeyABVar  = "http://h/ab\x00g1\x00vary\x00Accept:br"
	KeyHTTPS  = "https://h/a"
	KeyPort   = "http://h:8080/a"
	KeyEngine = "\x00breaker:m\x00h"
	KeyOther  = "http://other/x"
)

// Fixture is what the suite stores, key by key, with each entry's tags: a URL with variants
// of two generations, a longer path beside it, the same path by https and on another port,
// one of the engine's own keys (a shared breaker deadline), and another host.
var Fixture = []struct {
	Key  string
	Tags []string
}{
	{KeyA, []string{"t1"}},
	{KeyAVar1, []string{"t1", "t2"}},
	{KeyAVar2, []string{"t2"}},
	{KeyAB, []string{"t2"}},
	{KeyABVar, nil},
	{KeyHTTPS, []string{"t1", "t1"}}, // a tag listed twice
	{KeyPort, nil},
	{KeyEngine, nil},
	{KeyOther, []string{"other"}},
}

// Cases are purges of Fixture and the keys each drops.
var Cases = []struct {
	Desc    string
	Op, Arg string // Op: "key", "prefix" or "tag"
	Dropped []string
}{
	{Desc: "key with its variants", Op: "key", Arg: KeyA, Dropped: []string{KeyA, KeyAVar1, KeyAVar2}},
	{Desc: "key whose variants outlive it", Op: "key", Arg: KeyAB, Dropped: []string{KeyAB, KeyABVar}},
	{Desc: "key without variants", Op: "key", Arg: KeyPort, Dropped: []string{KeyPort}},
	{Desc: "key not stored", Op: "key", Arg: "http://h/zz"},
	{Desc: "variant key alone", Op: "key", Arg: KeyAVar1, Dropped: []string{KeyAVar1}},
	{Desc: "empty key", Op: "key", Arg: ""},
	{Desc: "prefix drops a longer path too", Op: "prefix", Arg: KeyA, Dropped: []string{KeyA, KeyAVar1, KeyAVar2, KeyAB, KeyABVar}},
	{Desc: "host", Op: "prefix", Arg: "http://h/", Dropped: []string{KeyA, KeyAVar1, KeyAVar2, KeyAB, KeyABVar}},
	{Desc: "host without its slash reaches its ports", Op: "prefix", Arg: "http://h", Dropped: []string{KeyA, KeyAVar1, KeyAVar2, KeyAB, KeyABVar, KeyPort}},
	{Desc: "scheme", Op: "prefix", Arg: "https://", Dropped: []string{KeyHTTPS}},
	{Desc: "prefix matching nothing", Op: "prefix", Arg: "http://nowhere/"},
	{Desc: "everything", Op: "prefix", Arg: "", Dropped: []string{KeyA, KeyAVar1, KeyAVar2, KeyAB, KeyABVar, KeyHTTPS, KeyPort, KeyEngine, KeyOther}},
	{Desc: "tag", Op: "tag", Arg: "t1", Dropped: []string{KeyA, KeyAVar1, KeyHTTPS}},
	{Desc: "another tag", Op: "tag", Arg: "t2", Dropped: []string{KeyAVar1, KeyAVar2, KeyAB}},
	{Desc: "tag of no entry", Op: "tag", Arg: "t3"},
	{Desc: "empty tag", Op: "tag", Arg: ""},
	{Desc: "a tag is no prefix", Op: "tag", Arg: "t"},
}

// Purge runs the purge op ("key", "prefix" or "tag") of p with arg.
func Purge(ctx context.Context, p store.Purger, op, arg string) (int, error) {
	switch op {
	case "key":
		return p.PurgeKey(ctx, arg)
	case "prefix":
		return p.PurgePrefix(ctx, arg)
	default:
		return p.PurgeTag(ctx, arg)
	}
}

// Entry is a valid answer carrying tags, fresh for a minute and kept for an hour from now.
func Entry(now time.Time, tags []string) *store.Entry {
	e := &store.Entry{
		Status: 200, Body: []byte("x"), Born: now, FreshUntil: now.Add(time.Minute),
		KeepUntil: now.Add(time.Hour), Tags: tags,
	}
	e.Prepare()
	return e
}

// Fill stores Fixture in st.
func Fill(ctx context.Context, t *testing.T, st store.Store) {
	t.Helper()
	now := time.Now()
	for _, f := range Fixture {
		if err := st.Set(ctx, f.Key, Entry(now, f.Tags)); err != nil {
			t.Fatalf("Set(%q): %v", f.Key, err)
		}
	}
}

// Purges runs every case against a store that open returns, empty, for the case: Fixture
// stored, the purge's count, the keys it dropped gone and the others kept, the same purge
// again dropping nothing, and a purge of everything dropping what was kept, after which
// empty, when not nil, checks that the store holds nothing more of its own (its indexes, the
// bytes it counts).
func Purges(t *testing.T, open func(t *testing.T) PurgeStore, empty func(t *testing.T, st PurgeStore)) {
	for _, tc := range Cases {
		t.Run(tc.Desc, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			st := open(t)
			Fill(ctx, t, st)
			n, err := Purge(ctx, st, tc.Op, tc.Arg)
			if err != nil || n != len(tc.Dropped) {
				t.Errorf("purge %s %q = %d, %v; want %d, nil", tc.Op, tc.Arg, n, err, len(tc.Dropped))
			}
			kept := 0
			for _, f := range Fixture {
				want := !Contains(tc.Dropped, f.Key)
				e, err := st.Get(ctx, f.Key)
				if err != nil {
					t.Fatalf("Get(%q): %v", f.Key, err)
				}
				if (e != nil) != want {
					t.Errorf("after the purge %q is stored: %v, want %v", f.Key, e != nil, want)
				}
				if want {
					kept++
				}
			}
			if n, err := Purge(ctx, st, tc.Op, tc.Arg); n != 0 || err != nil {
				t.Errorf("the same purge again = %d, %v; want 0, nil", n, err)
			}
			if n, err := st.PurgePrefix(ctx, ""); n != kept || err != nil {
				t.Errorf("purge of everything after it = %d, %v; want the %d kept, nil", n, err, kept)
			}
			if empty != nil {
				empty(t, st)
			}
		})
	}
}

// Contains tells whether keys holds key.
func Contains(keys []string, key string) bool {
	for _, k := range keys {
		if k == key {
			return true
		}
	}
	return false
}
