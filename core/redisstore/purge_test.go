package redisstore

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/store"
	"github.com/weirproxy/weir/internal/redistest"
	"github.com/weirproxy/weir/internal/storetest"
)

// The Redis store passes the suite every Purger passes, behind a Guard and with a near tier,
// each case under a key prefix of its own on one server; a purge of everything leaves no key
// under the prefix, the index's sets included.
func TestPurgeSuite(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	cases := 0
	open := func(t *testing.T) storetest.PurgeStore {
		cases++
		st := newStore(t, Settings{URL: "redis://" + srv.Addr, KeyPrefix: "case" + strconv.Itoa(cases) + ":", NearMaxSize: nearSize})
		return store.NewGuard(st, store.GuardSettings{Timeout: callWait})
	}
	empty := func(t *testing.T, _ storetest.PurgeStore) {
		t.Helper()
		if keys := serverKeys(t, srv, "case"+strconv.Itoa(cases)+":*"); len(keys) != 0 {
			t.Errorf("keys left under the prefix: %q", keys)
		}
	}
	storetest.Purges(t, open, empty)
}

// serverKeys lists the server's keys matching pattern, sorted.
func serverKeys(t *testing.T, srv *redistest.Server, pattern string) []string {
	t.Helper()
	reply, ok := srv.MustDo("KEYS", pattern).([]interface{})
	if !ok {
		t.Fatalf("KEYS %s: not a list", pattern)
	}
	keys := make([]string, 0, len(reply))
	for _, k := range reply {
		keys = append(keys, fmt.Sprint(k))
	}
	sort.Strings(keys)
	return keys
}

// serverInt sends a command whose reply is an integer.
func serverInt(t *testing.T, srv *redistest.Server, cmd, key string) int64 {
	t.Helper()
	n, ok := srv.MustDo(cmd, key).(int64)
	if !ok {
		t.Fatalf("%s %q: not an integer", cmd, key)
	}
	return n
}

// Each purge drops this process's near copies before it returns, and another process's as
// the server's invalidations arrive.
func TestPurgeDropsNearCopies(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	a, b := nearStore(t, srv), nearStore(t, srv)
	ctx := testCtx(t)
	tests := []struct {
		desc    string
		op, arg string
	}{
		{desc: "key", op: "key", arg: storetest.KeyA},
		{desc: "prefix", op: "prefix", arg: "http://h/"},
		{desc: "tag", op: "tag", arg: "t1"},
		{desc: "everything", op: "prefix", arg: ""},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			storetest.Fill(ctx, t, a)
			nearGet(t, a, storetest.KeyA)
			nearGet(t, a, storetest.KeyAVar1)
			nearGet(t, b, storetest.KeyA)
			nearGet(t, b, storetest.KeyAVar1)
			if n, err := storetest.Purge(ctx, a, tc.op, tc.arg); n < 2 || err != nil {
				t.Fatalf("purge %s %q = %d, %v; want at least 2, nil", tc.op, tc.arg, n, err)
			}
			if near(a, storetest.KeyA) != nil || near(a, storetest.KeyAVar1) != nil {
				t.Errorf("the purging store still holds its near copies")
			}
			waitFor(t, "the other store dropping its copies", func() bool {
				return near(b, storetest.KeyA) == nil && near(b, storetest.KeyAVar1) == nil
			})
			if e, err := b.Get(ctx, storetest.KeyAVar1); e != nil || err != nil {
				t.Errorf("the other store's Get after the purge = %v, %v; want nil, nil", e, err)
			}
			a.PurgePrefix(ctx, "")
		})
	}
}

// Glob characters in a purged prefix, and in the store's key prefix, are matched as
// themselves: the purge drops only keys that begin with it.
func TestPurgePrefixGlobCharacters(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	ctx := testCtx(t)
	// A neighbour whose keys the unescaped pattern "w*[x]:..." would match.
	st := newStore(t, Settings{URL: "redis://" + srv.Addr, KeyPrefix: `w*[x]\?:`})
	neighbour := newStore(t, Settings{URL: "redis://" + srv.Addr, KeyPrefix: `wwx?:`})
	keys := []string{`http://h/a*b`, `http://h/a?b`, `http://h/[ab]`, `http://h/a\b`, `http://h/a]`, `http://h/axb`, `http://h/a`, `http://h/b`}
	tests := []struct {
		prefix  string
		dropped []string
	}{
		{prefix: `http://h/a*`, dropped: []string{`http://h/a*b`}},
		{prefix: `http://h/a?`, dropped: []string{`http://h/a?b`}},
		{prefix: `http://h/[`, dropped: []string{`http://h/[ab]`}},
		{prefix: `http://h/[ab]`, dropped: []string{`http://h/[ab]`}},
		{prefix: `http://h/a\`, dropped: []string{`http://h/a\b`}},
		{prefix: `http://h/a]`, dropped: []string{`http://h/a]`}},
		{prefix: `http://h/a`, dropped: []string{`http://h/a*b`, `http://h/a?b`, `http://h/a\b`, `http://h/a]`, `http://h/axb`, `http://h/a`}},
		{prefix: ``, dropped: keys},
	}
	now := time.Now()
	for _, tc := range tests {
		t.Run(tc.prefix, func(t *testing.T) {
			for _, k := range keys {
				if err := st.Set(ctx, k, storetest.Entry(now, nil)); err != nil {
					t.Fatalf("Set(%q): %v", k, err)
				}
				if err := neighbour.Set(ctx, k, storetest.Entry(now, nil)); err != nil {
					t.Fatalf("neighbour's Set(%q): %v", k, err)
				}
			}
			n, err := st.PurgePrefix(ctx, tc.prefix)
			if n != len(tc.dropped) || err != nil {
				t.Errorf("PurgePrefix(%q) = %d, %v; want %d, nil", tc.prefix, n, err, len(tc.dropped))
			}
			for _, k := range keys {
				e, err := st.Get(ctx, k)
				if err != nil {
					t.Fatalf("Get(%q): %v", k, err)
				}
				if want := !storetest.Contains(tc.dropped, k); (e != nil) != want {
					t.Errorf("after PurgePrefix(%q), %q is stored: %v, want %v", tc.prefix, k, e != nil, want)
				}
				if e, _ := neighbour.Get(ctx, k); e == nil {
					t.Errorf("the neighbour's %q was dropped", k)
				}
			}
		})
	}
}

// A purge of everything drops what is under the store's key prefix and nothing else: not
// another prefix's keys, not a key that only begins like the prefix without it.
func TestPurgeEverythingKeepsOtherPrefixes(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	ctx := testCtx(t)
	a := newStore(t, Settings{URL: "redis://" + srv.Addr, KeyPrefix: "app:"})
	b := newStore(t, Settings{URL: "redis://" + srv.Addr, KeyPrefix: "app2:"})
	storetest.Fill(ctx, t, a)
	storetest.Fill(ctx, t, b)
	srv.MustDo("SET", "app", "not weir's")
	srv.MustDo("SET", "other:k", "not weir's")
	n, err := a.PurgePrefix(ctx, "")
	if n != len(storetest.Fixture) || err != nil {
		t.Errorf("PurgePrefix(\"\") = %d, %v; want %d, nil", n, err, len(storetest.Fixture))
	}
	if keys := serverKeys(t, srv, "app:*"); len(keys) != 0 {
		t.Errorf("keys left under the prefix: %q", keys)
	}
	for _, k := range []string{"app", "other:k"} {
		if serverInt(t, srv, "EXISTS", k) != 1 {
			t.Errorf("%q was dropped", k)
		}
	}
	for _, f := range storetest.Fixture {
		if e, _ := b.Get(ctx, f.Key); e == nil {
			t.Errorf("the other prefix's %q was dropped", f.Key)
		}
	}
	// b's tags still reach b's entries.
	if n, err := b.PurgeTag(ctx, "t1"); n != 3 || err != nil {
		t.Errorf("the other prefix's PurgeTag(t1) = %d, %v; want 3, nil", n, err)
	}
}

// The index in Redis: a set per tag and per primary key with variants, holding cache keys,
// expiring no sooner than its longest-lived member; entries without either are plain SETs.
func TestTagIndexInRedis(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	now := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	st := newStore(t, Settings{URL: "redis://" + srv.Addr, Now: func() time.Time { return now }})
	ctx := testCtx(t)
	entry := func(keep time.Duration, tags ...string) *store.Entry {
		return &store.Entry{Status: 200, Born: now, FreshUntil: now, KeepUntil: now.Add(keep), Tags: tags}
	}
	tagSetKey := DefaultKeyPrefix + tagSet + "t"
	varSetKey := DefaultKeyPrefix + variantSet + "http://h/v"

	if err := st.Set(ctx, "http://h/plain", entry(time.Hour)); err != nil {
		t.Fatalf("Set: %v", err)
	}
	if keys := serverKeys(t, srv, "*"); fmt.Sprint(keys) != "[weir:http://h/plain]" {
		t.Errorf("keys after an untagged Set = %q, want the entry's alone", keys)
	}
	if err := st.Set(ctx, "http://h/1", entry(time.Hour, "t")); err != nil {
		t.Fatalf("Set: %v", err)
	}
	if err := st.Set(ctx, "http://h/v\x00g1\x00vary\x00Accept:a", entry(2*time.Hour, "t")); err != nil {
		t.Fatalf("Set of a variant: %v", err)
	}
	members, _ := srv.MustDo("SMEMBERS", tagSetKey).([]interface{})
	if got := fmt.Sprint(sortedStrings(members)); got != "[http://h/1 http://h/v\x00g1\x00vary\x00Accept:a]" {
		t.Errorf("tag set = %q, want both cache keys", got)
	}
	if got, _ := srv.MustDo("SMEMBERS", varSetKey).([]interface{}); len(got) != 1 || fmt.Sprint(got[0]) != "http://h/v\x00g1\x00vary\x00Accept:a" {
		t.Errorf("variant set = %q, want the variant's key", got)
	}
	ttl := func(key string) time.Duration {
		return time.Duration(serverInt(t, srv, "PTTL", key)) * time.Millisecond
	}
	if got := ttl(tagSetKey); got <= time.Hour || got > 2*time.Hour {
		t.Errorf("tag set's time to live = %v, want the longer member's, 2h", got)
	}
	// A member kept for less does not shorten the set's life.
	if err := st.Set(ctx, "http://h/2", entry(time.Minute, "t")); err != nil {
		t.Fatalf("Set: %v", err)
	}
	if got := ttl(tagSetKey); got <= time.Hour {
		t.Errorf("tag set's time to live after a shorter member = %v, want 2h still", got)
	}
	if err := st.Set(ctx, "http://h/3", entry(3*time.Hour, "t")); err != nil {
		t.Fatalf("Set: %v", err)
	}
	if got := ttl(tagSetKey); got <= 2*time.Hour {
		t.Errorf("tag set's time to live after a longer member = %v, want 3h", got)
	}
	// The purge takes the set away with its members.
	if n, err := st.PurgeTag(ctx, "t"); n != 4 || err != nil {
		t.Errorf("PurgeTag(t) = %d, %v; want 4, nil", n, err)
	}
	if serverInt(t, srv, "EXISTS", tagSetKey) != 0 {
		t.Errorf("the tag's set outlived its purge")
	}
}

func sortedStrings(list []interface{}) []string {
	out := make([]string, 0, len(list))
	for _, v := range list {
		out = append(out, fmt.Sprint(v))
	}
	sort.Strings(out)
	return out
}

// Members whose entries are gone are pruned as entries with the tag keep being stored: the
// set stays about the size of its live members rather than growing with every key it ever
// held. Which members a Set probes is random; the bound below holds with a wide margin.
func TestTagSetPruned(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	st := newStore(t, Settings{URL: "redis://" + srv.Addr})
	ctx := testCtx(t)
	now := time.Now()
	const gone, live = 100, 200
	for i := 0; i < gone; i++ {
		if err := st.Set(ctx, "http://h/gone/"+strconv.Itoa(i), storetest.Entry(now, []string{"t"})); err != nil {
			t.Fatalf("Set: %v", err)
		}
	}
	// As if they had expired.
	for _, k := range serverKeys(t, srv, DefaultKeyPrefix+"http://h/gone/*") {
		srv.MustDo("DEL", k)
	}
	for i := 0; i < live; i++ {
		if err := st.Set(ctx, "http://h/live/"+strconv.Itoa(i), storetest.Entry(now, []string{"t"})); err != nil {
			t.Fatalf("Set: %v", err)
		}
	}
	size := serverInt(t, srv, "SCARD", DefaultKeyPrefix+tagSet+"t")
	// Each Set probes two members: about 2d of the dead go per Set while a fraction d of the
	// set is dead, so after 200 Sets some 15 of the 100 remain; 60 would be very unlucky.
	if size > live+60 {
		t.Errorf("tag set holds %d members for %d live entries and %d gone", size, live, gone)
	}
	t.Logf("tag set holds %d members for %d live entries and %d gone", size, live, gone)
}

// An entry that cannot be indexed is not kept: no purge could find it.
func TestSetUnindexableIsNotKept(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	st := newStore(t, Settings{URL: "redis://" + srv.Addr})
	ctx := testCtx(t)
	// Not a set: SADD fails with WRONGTYPE.
	srv.MustDo("SET", DefaultKeyPrefix+tagSet+"broken", "x")
	if err := st.Set(ctx, "http://h/k", storetest.Entry(time.Now(), []string{"ok", "broken"})); err == nil {
		t.Errorf("Set with a tag whose set is no set succeeded")
	}
	if serverInt(t, srv, "EXISTS", DefaultKeyPrefix+"http://h/k") != 0 {
		t.Errorf("the entry was kept unindexed")
	}
}

// A server that lost the scripts (restarted, SCRIPT FLUSH) is sent them again.
func TestScriptsSentAgain(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	st := newStore(t, Settings{URL: "redis://" + srv.Addr})
	ctx := testCtx(t)
	now := time.Now()
	for i := 0; i < 2; i++ {
		srv.MustDo("SCRIPT", "FLUSH")
		if err := st.Set(ctx, "http://h/"+strconv.Itoa(i), storetest.Entry(now, []string{"t"})); err != nil {
			t.Fatalf("Set after SCRIPT FLUSH: %v", err)
		}
	}
	srv.MustDo("SCRIPT", "FLUSH")
	if n, err := st.PurgeTag(ctx, "t"); n != 2 || err != nil {
		t.Errorf("PurgeTag after SCRIPT FLUSH = %d, %v; want 2, nil", n, err)
	}
}

// A tag with more members than a purge takes at once is purged whole, batch by batch, and
// so is a prefix with more keys than one SCAN reads.
func TestPurgeInBatches(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	st := newStore(t, Settings{URL: "redis://" + srv.Addr})
	now := time.Now()
	const n = purgeBatch*2 + 7
	// A context per call: callWait bounds each call, not the hundreds of them, which take
	// longer than that interpreted on a loaded machine.
	fillTagged := func() {
		for i := 0; i < n; i++ {
			ctx, cancel := context.WithTimeout(context.Background(), callWait)
			err := st.Set(ctx, "http://h/"+strconv.Itoa(i), storetest.Entry(now, []string{"t"}))
			cancel()
			if err != nil {
				t.Fatalf("Set: %v", err)
			}
		}
	}
	fillTagged()
	if got, err := st.PurgeTag(testCtx(t), "t"); got != n || err != nil {
		t.Errorf("PurgeTag = %d, %v; want %d, nil", got, err, n)
	}
	fillTagged()
	if got, err := st.PurgePrefix(testCtx(t), "http://h/"); got != n || err != nil {
		t.Errorf("PurgePrefix = %d, %v; want %d, nil", got, err, n)
	}
	if keys := serverKeys(t, srv, DefaultKeyPrefix+"http*"); len(keys) != 0 {
		t.Errorf("%d keys left", len(keys))
	}
}

// BenchmarkSetTagged measures a Set with three tags (one script, one round trip), against
// BenchmarkSet's plain SET of the same entry.
func BenchmarkSetTagged(b *testing.B) {
	benchmarkSet(b, []string{"product-42", "products", "home"}, "http://h/p")
}

// BenchmarkSetVariant measures a Set of a variant, indexed under its primary key.
func BenchmarkSetVariant(b *testing.B) {
	benchmarkSet(b, nil, "http://h/p\x00g1\x00vary\x00Accept-Encoding:gzip")
}

func benchmarkSet(b *testing.B, tags []string, key string) {
	srv := redistest.Start(b, redistest.Config{})
	st := newStore(b, Settings{URL: "redis://" + srv.Addr})
	e := sampleEntry(time.Now())
	e.Tags = tags
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := st.Set(ctx, key, e); err != nil {
			b.Fatal(err)
		}
	}
}
