package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/store"
	"github.com/weirproxy/weir/internal/redistest"
	"github.com/weirproxy/weir/internal/storetest"
)

// The store against a real Redis Cluster of three primaries that the tests start: keys
// spread over the primaries by slot, MOVED and ASK followed, the index kept with per-key
// commands, and the near cache told of changes by every primary.

func TestParseClusterURL(t *testing.T) {
	tests := []struct {
		desc     string
		url      string
		nodes    []string
		password string
		tls      bool
	}{
		{desc: "one node", url: "redis-cluster://10.0.0.1:7000/", nodes: []string{"10.0.0.1:7000"}},
		{desc: "several nodes, default port", url: "redis-cluster://a:7000,b,c:7002", nodes: []string{"a:7000", "b:6379", "c:7002"}},
		{desc: "IPv6 nodes", url: "redis-cluster://[::1]:7000,[::1]:7001/", nodes: []string{"[::1]:7000", "[::1]:7001"}},
		{desc: "password", url: "redis-cluster://:p%40ss@a:7000,b:7001/", nodes: []string{"a:7000", "b:7001"}, password: "p@ss"},
		{desc: "TLS", url: "rediss-cluster://a:7000,b:7001/?insecureSkipVerify=true", nodes: []string{"a:7000", "b:7001"}, tls: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			srv, err := parseURL(tc.url)
			if err != nil {
				t.Fatalf("parseURL(%q): %v", tc.url, err)
			}
			if !srv.cluster || fmt.Sprint(srv.nodes) != fmt.Sprint(tc.nodes) || srv.password != tc.password || (srv.tls != nil) != tc.tls {
				t.Errorf("parseURL(%q) = cluster %v nodes %q password %q TLS %v; want a cluster of %q, %q, TLS %v",
					tc.url, srv.cluster, srv.nodes, srv.password, srv.tls != nil, tc.nodes, tc.password, tc.tls)
			}
		})
	}
}

func TestParseClusterURLErrors(t *testing.T) {
	tests := []struct {
		desc string
		url  string
		want string
	}{
		{desc: "no node", url: "redis-cluster:///", want: `store.url: "redis-cluster:///": needs a host, as in redis-cluster://host:6379`},
		{desc: "database", url: "redis-cluster://a:7000,b:7001/2", want: `store.url: "redis-cluster://a:7000,b:7001/2": a cluster has database 0 only`},
		{desc: "bad port", url: "redis-cluster://a:7000,b:x/", want: `store.url: "redis-cluster://a:7000,b:x/": port "x" out of range`},
		{desc: "empty node", url: "redis-cluster://a:7000,/", want: `store.url: "redis-cluster://a:7000,/": node "" needs a host`},
		{desc: "password redacted", url: "redis-cluster://:secret@a,b/3", want: `store.url: "redis-cluster://:xxxxx@a,b/3": a cluster has database 0 only`},
		{desc: "list without the cluster scheme", url: "redis://a:1,b:2/", want: `one host only; a list of nodes takes the redis-cluster or redis-sentinel scheme`},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			_, err := parseURL(tc.url)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("parseURL(%q): err = %v, want %q", tc.url, err, tc.want)
			}
		})
	}
}

// clusterKeys is how many keys the tests spread over a cluster: enough to reach every
// primary.
const clusterKeys = 60

// TestClusterRoundTrip: a store that knows one node of the cluster stores keys on the
// primaries their slots name, spread over all three, and reads and deletes them.
func TestClusterRoundTrip(t *testing.T) {
	c := redistest.StartCluster(t, 3, 0)
	st := newStore(t, Settings{URL: c.URL(), Timeout: time.Second})
	ctx := testCtx(t)
	e := sampleEntry(time.Now())
	perNode := make(map[string]int)
	for i := 0; i < clusterKeys; i++ {
		key := "http://h/k" + strconv.Itoa(i)
		if err := st.Set(ctx, key, e); err != nil {
			t.Fatalf("Set(%q): %v", key, err)
		}
		owner := c.Owner(c.Slot(t, DefaultKeyPrefix+key))
		if v, err := owner.Do("EXISTS", DefaultKeyPrefix+key); err != nil || v != int64(1) {
			t.Errorf("EXISTS %q on %s, the owner of its slot = %v, %v; want 1", key, owner.Addr, v, err)
		}
		perNode[owner.Addr]++
		got, err := st.Get(ctx, key)
		if err != nil {
			t.Fatalf("Get(%q): %v", key, err)
		}
		sameEntry(t, got, e)
	}
	if len(perNode) != 3 {
		t.Errorf("keys per primary = %v, want keys on all 3", perNode)
	}
	if err := st.Delete(ctx, "http://h/k0"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if got, err := st.Get(ctx, "http://h/k0"); got != nil || err != nil {
		t.Errorf("Get after Delete = %v, %v; want nil, nil", got, err)
	}
	if err := st.Ping(ctx); err != nil {
		t.Errorf("Ping: %v", err)
	}
	t.Logf("keys per primary: %v (%s)", perNode, c)
}

// TestClusterRedirections moves a slot from one primary to another as redis-cli
// --cluster reshard does: while it migrates, a key already on the importing node is
// reached through ASK; once moved, the old owner's MOVED is followed.
func TestClusterRedirections(t *testing.T) {
	c := redistest.StartCluster(t, 3, 0)
	st := newStore(t, Settings{URL: c.URLAll(), Timeout: time.Second})
	ctx := testCtx(t)
	e := sampleEntry(time.Now())
	// Keys of one slot: the hash tag decides it.
	const before, during = "{weir-test}before", "{weir-test}during"
	slot := c.Slot(t, DefaultKeyPrefix+before)
	from := c.Owner(slot)
	to := c.Primaries[0]
	if to == from {
		to = c.Primaries[1]
	}
	if err := st.Set(ctx, before, e); err != nil {
		t.Fatalf("Set before the migration: %v", err)
	}
	fromID, toID := nodeIDOf(t, from), nodeIDOf(t, to)
	s := strconv.Itoa(slot)
	to.MustDo("CLUSTER", "SETSLOT", s, "IMPORTING", fromID)
	from.MustDo("CLUSTER", "SETSLOT", s, "MIGRATING", toID)

	// A key the old owner does not hold goes to the importing node (ASK).
	if err := st.Set(ctx, during, e); err != nil {
		t.Fatalf("Set during the migration: %v", err)
	}
	if n := to.MustDo("CLUSTER", "COUNTKEYSINSLOT", s); n != int64(1) {
		t.Errorf("keys of slot %s on the importing node = %v, want 1 (the ASK followed)", s, n)
	}
	got, err := st.Get(ctx, during)
	if err != nil {
		t.Fatalf("Get during the migration (ASK): %v", err)
	}
	sameEntry(t, got, e)

	from.MustDo("MIGRATE", "127.0.0.1", strconv.Itoa(to.Port), "", "0", "5000", "KEYS", DefaultKeyPrefix+before)
	// The new owner first, whose configuration epoch this bumps, then the old one, then the
	// rest, in the order redis-cli --cluster reshard uses: told in the primaries' order, the
	// nodes once sent a read after it MOVED three times in a row.
	to.MustDo("CLUSTER", "SETSLOT", s, "NODE", toID)
	from.MustDo("CLUSTER", "SETSLOT", s, "NODE", toID)
	for _, n := range c.Primaries {
		if n != to && n != from {
			n.MustDo("CLUSTER", "SETSLOT", s, "NODE", toID)
		}
	}
	// The store still maps the slot to the old owner, which answers MOVED.
	got, err = st.Get(ctx, before)
	if err != nil {
		t.Fatalf("Get after the migration (MOVED): %v", err)
	}
	sameEntry(t, got, e)
	if err := st.Delete(ctx, before); err != nil {
		t.Fatalf("Delete after the migration: %v", err)
	}
	if n := to.MustDo("CLUSTER", "COUNTKEYSINSLOT", s); n != int64(1) {
		t.Errorf("keys of slot %s on its new owner after a Delete = %v, want 1", s, n)
	}
}

// nodeIDOf is the cluster node ID of s.
func nodeIDOf(t *testing.T, s *redistest.Server) string {
	t.Helper()
	id, ok := s.MustDo("CLUSTER", "MYID").(string)
	if !ok {
		t.Fatalf("CLUSTER MYID on %s: not a string", s.Addr)
	}
	return id
}

// TestClusterPurgeSuite: the store in a cluster passes the suite every Purger passes, its
// index kept with per-key commands; a purge of everything leaves no key under the prefix on
// any primary.
func TestClusterPurgeSuite(t *testing.T) {
	c := redistest.StartCluster(t, 3, 0)
	cases := 0
	open := func(t *testing.T) storetest.PurgeStore {
		cases++
		st := newStore(t, Settings{URL: c.URL(), KeyPrefix: "case" + strconv.Itoa(cases) + ":", NearMaxSize: nearSize})
		return store.NewGuard(st, store.GuardSettings{Timeout: callWait})
	}
	empty := func(t *testing.T, _ storetest.PurgeStore) {
		t.Helper()
		for _, n := range c.Primaries {
			if keys := serverKeys(t, n, "case"+strconv.Itoa(cases)+":*"); len(keys) != 0 {
				t.Errorf("keys left under the prefix on %s: %q", n.Addr, keys)
			}
		}
	}
	storetest.Purges(t, open, empty)
}

// TestClusterNear: two stores on one cluster, each with its near cache, tracking every
// primary: a copy read through B is dropped when A writes the key, whichever primary holds
// it, and when the key is written on its node directly.
func TestClusterNear(t *testing.T) {
	c := redistest.StartCluster(t, 3, 0)
	a := newStore(t, Settings{URL: c.URL(), NearMaxSize: nearSize})
	b := newStore(t, Settings{URL: c.URL(), NearMaxSize: nearSize})
	waitFor(t, "tracking on A", a.NearLive)
	waitFor(t, "tracking on B", b.NearLive)
	ctx := testCtx(t)
	now := time.Now()
	owners := make(map[string]string)
	for i := 0; len(owners) < 3 && i < clusterKeys; i++ {
		key := "http://h/near" + strconv.Itoa(i)
		owner := c.Owner(c.Slot(t, DefaultKeyPrefix+key))
		if _, seen := owners[owner.Addr]; seen {
			continue
		}
		owners[owner.Addr] = key
		if err := a.Set(ctx, key, sampleEntry(now)); err != nil {
			t.Fatalf("Set(%q): %v", key, err)
		}
		nearGet(t, b, key)
		changed := sampleEntry(now)
		changed.Status = 203
		if err := a.Set(ctx, key, changed); err != nil {
			t.Fatalf("Set(%q) again: %v", key, err)
		}
		waitFor(t, "B's copy of "+key+" on "+owner.Addr+" dropped", func() bool { return near(b, key) == nil })
		if got := nearGet(t, b, key); got.Status != 203 {
			t.Errorf("B reads %q with status %d after A's write, want 203", key, got.Status)
		}
		owner.MustDo("DEL", DefaultKeyPrefix+key)
		waitFor(t, "B's copy of "+key+" dropped on a DEL on its node", func() bool { return near(b, key) == nil })
	}
	if len(owners) != 3 {
		t.Errorf("keys tried on %d primaries, want 3", len(owners))
	}
}

// TestClusterNearLostWithAPrimary: stopping one primary stops the near cache, whose copies
// of any node's keys could no longer be trusted; with the primary back, it is live again.
func TestClusterNearLostWithAPrimary(t *testing.T) {
	c := redistest.StartCluster(t, 3, 0)
	st := newStore(t, Settings{URL: c.URLAll(), NearMaxSize: nearSize, Timeout: 200 * time.Millisecond})
	waitFor(t, "tracking", st.NearLive)
	ctx := testCtx(t)
	if err := st.Set(ctx, "http://h/x", sampleEntry(time.Now())); err != nil {
		t.Fatalf("Set: %v", err)
	}
	nearGet(t, st, "http://h/x")
	c.Primaries[2].Stop()
	waitFor(t, "tracking lost", func() bool { return !st.NearLive() })
	if near(st, "http://h/x") != nil {
		t.Errorf("a near copy survived the loss of tracking")
	}
	c.Primaries[2].Restart()
	waitFor(t, "tracking back", st.NearLive)
}

// TestClusterStoreDown: a cluster none of whose nodes answers fails calls promptly.
func TestClusterStoreDown(t *testing.T) {
	st := newStore(t, Settings{URL: "redis-cluster://127.0.0.1:1,127.0.0.1:2/", Timeout: 200 * time.Millisecond})
	start := time.Now()
	if _, err := st.Get(context.Background(), "k"); err == nil {
		t.Errorf("Get from a cluster that is down succeeded")
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Get from a cluster that is down took %v", took)
	}
}
