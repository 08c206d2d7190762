package redisstore

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/store"
	"github.com/weirproxy/weir/internal/redistest"
)

// The store against a real primary, replica and sentinels that the tests start: the primary
// asked of the sentinels, and followed when the sentinels promote the replica.

// failoverWait bounds how long a store may take to follow a failover: the sentinels take
// the primary for down after 500ms, then elect a leader and promote the replica.
const failoverWait = 30 * time.Second

func TestParseSentinelURL(t *testing.T) {
	tests := []struct {
		desc     string
		url      string
		nodes    []string
		master   string
		db       int
		password string
		sentinel string
		tls      bool
	}{
		{desc: "one sentinel", url: "redis-sentinel://10.0.0.1:26380/mymaster", nodes: []string{"10.0.0.1:26380"}, master: "mymaster"},
		{desc: "default port", url: "redis-sentinel://a,b:26380,c/mymaster/", nodes: []string{"a:26379", "b:26380", "c:26379"}, master: "mymaster"},
		{desc: "database", url: "redis-sentinel://a/mymaster/3", nodes: []string{"a:26379"}, master: "mymaster", db: 3},
		{desc: "passwords", url: "redis-sentinel://:p%40ss@a,b/m?sentinelPassword=s3", nodes: []string{"a:26379", "b:26379"}, master: "m", password: "p@ss", sentinel: "s3"},
		{desc: "TLS", url: "rediss-sentinel://[::1]:26379/m?insecureSkipVerify=true", nodes: []string{"[::1]:26379"}, master: "m", tls: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			srv, err := parseURL(tc.url)
			if err != nil {
				t.Fatalf("parseURL(%q): %v", tc.url, err)
			}
			got := strings.Join(srv.nodes, ",") + " " + srv.master + " " + strconv.Itoa(srv.db) + " " + srv.password + " " + srv.sentinelPassword
			want := strings.Join(tc.nodes, ",") + " " + tc.master + " " + strconv.Itoa(tc.db) + " " + tc.password + " " + tc.sentinel
			if !srv.sentinel || srv.cluster || got != want || (srv.tls != nil) != tc.tls || srv.addr != "" {
				t.Errorf("parseURL(%q) = sentinel %v, %q TLS %v addr %q; want a sentinel setup %q TLS %v", tc.url, srv.sentinel, got, srv.tls != nil, srv.addr, want, tc.tls)
			}
		})
	}
}

func TestParseSentinelURLErrors(t *testing.T) {
	tests := []struct {
		desc string
		url  string
		want string
	}{
		{desc: "no sentinel", url: "redis-sentinel:///m", want: `store.url: "redis-sentinel:///m": needs a host, as in redis-sentinel://host:26379`},
		{desc: "no master", url: "redis-sentinel://a:26379/", want: `store.url: "redis-sentinel://a:26379/": needs the name the sentinels monitor the primary by, as in redis-sentinel://host:26379/mymaster`},
		{desc: "bad database", url: "redis-sentinel://a/m/x", want: `database "/x" must be a number, as in /m/2`},
		{desc: "password redacted", url: "redis-sentinel://:secret@a,b/m/x", want: `store.url: "redis-sentinel://:xxxxx@a,b/m/x"`},
		{desc: "sentinel user without password", url: "redis-sentinel://a/m?sentinelUser=u", want: `sentinelUser "u" needs a sentinelPassword`},
		{desc: "sentinel option elsewhere", url: "redis://a/?sentinelPassword=x", want: `option sentinelPassword needs the redis-sentinel or rediss-sentinel scheme`},
		{desc: "TLS option without TLS", url: "redis-sentinel://a/m?caFile=x", want: `option caFile needs the rediss, rediss-cluster or rediss-sentinel scheme`},
		{desc: "bad port", url: "redis-sentinel://a:0/m", want: `port "0" out of range`},
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

func TestSwitchedMessage(t *testing.T) {
	st := &Store{srv: server{sentinel: true, master: "m"}}
	tests := []struct {
		desc  string
		reply interface{}
		want  string
	}{
		{desc: "its master", reply: []interface{}{[]byte("message"), []byte("+switch-master"), []byte("m 10.0.0.1 6379 10.0.0.2 6380")}, want: "10.0.0.2:6380"},
		{desc: "another master", reply: []interface{}{[]byte("message"), []byte("+switch-master"), []byte("other 10.0.0.1 6379 10.0.0.2 6380")}},
		{desc: "a pong", reply: []interface{}{[]byte("pong"), []byte("")}},
		{desc: "short", reply: []interface{}{[]byte("message"), []byte("+switch-master"), []byte("m 10.0.0.1")}},
	}
	for _, tc := range tests {
		if got := st.switched(tc.reply); got != tc.want {
			t.Errorf("%s: switched = %q, want %q", tc.desc, got, tc.want)
		}
	}
}

// waitLong is waitFor with failoverWait.
func waitLong(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(failoverWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("hangs: %s did not happen within %v", what, failoverWait)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSentinelRoundTrip: a store naming the sentinels, the first of them unreachable, finds
// the primary and keeps its entries there.
func TestSentinelRoundTrip(t *testing.T) {
	setup := redistest.StartSentinel(t, 1, 1)
	url := strings.Replace(setup.URL(), "://", "://127.0.0.1:1,", 1)
	st := newStore(t, Settings{URL: url, Timeout: time.Second})
	ctx := testCtx(t)
	e := sampleEntry(time.Now())
	if err := st.Set(ctx, "http://h/a", e); err != nil {
		t.Fatalf("Set: %v", err)
	}
	got, err := st.Get(ctx, "http://h/a")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	sameEntry(t, got, e)
	if st.Primary() != setup.Primary.Addr {
		t.Errorf("Primary() = %q, want %s", st.Primary(), setup.Primary.Addr)
	}
	if v, err := setup.Primary.Do("EXISTS", DefaultKeyPrefix+"http://h/a"); err != nil || v != int64(1) {
		t.Errorf("EXISTS on the primary = %v, %v; want 1", v, err)
	}
}

// TestSentinelUnknownMaster: a master no sentinel knows is an error naming each sentinel.
func TestSentinelUnknownMaster(t *testing.T) {
	setup := redistest.StartSentinel(t, 0, 1)
	st := newStore(t, Settings{URL: "redis-sentinel://" + setup.Sentinels[0].Addr + "/nosuch", Timeout: time.Second})
	err := st.Ping(testCtx(t))
	if err == nil || !strings.Contains(err.Error(), setup.Sentinels[0].Addr) || !strings.Contains(err.Error(), `master unknown to the sentinel: "nosuch"`) {
		t.Errorf("Ping = %v, want the sentinel's address and the master unknown", err)
	}
}

// TestSentinelPrimaryKilled kills the primary: the sentinels promote the replica, the store
// follows, writes go on there, and the near cache tracks the new primary.
func TestSentinelPrimaryKilled(t *testing.T) {
	setup := redistest.StartSentinel(t, 1, 2)
	st := newStore(t, Settings{URL: setup.URL(), Timeout: 300 * time.Millisecond, NearMaxSize: nearSize})
	waitLong(t, "tracking", st.NearLive)
	e := sampleEntry(time.Now())
	if err := st.Set(testCtx(t), "http://h/before", e); err != nil {
		t.Fatalf("Set: %v", err)
	}
	nearGet(t, st, "http://h/before")
	replica := setup.Replicas[0]
	waitLong(t, "the write replicated", func() bool {
		v, err := replica.Do("EXISTS", DefaultKeyPrefix+"http://h/before")
		return err == nil && v == int64(1)
	})

	setup.Primary.Stop()
	waitLong(t, "the near cache lost", func() bool { return !st.NearLive() })
	if near(st, "http://h/before") != nil {
		t.Errorf("near copy kept after tracking was lost")
	}
	failures := 0
	waitLong(t, "a write on the new primary", func() bool {
		err := st.Set(testCtx(t), "http://h/after", e)
		if err != nil {
			failures++
		}
		return err == nil
	})
	t.Logf("writes failed while the primary was down: %d", failures)
	if st.Primary() != replica.Addr {
		t.Errorf("Primary() = %q, want the replica %s", st.Primary(), replica.Addr)
	}
	if v, err := replica.Do("EXISTS", DefaultKeyPrefix+"http://h/after"); err != nil || v != int64(1) {
		t.Errorf("EXISTS on the new primary = %v, %v; want 1", v, err)
	}
	got, err := st.Get(testCtx(t), "http://h/before")
	if err != nil || got == nil {
		t.Fatalf("Get of an entry written before the failover = %v, %v; want it", got, err)
	}
	checkTracking(t, st, replica, "http://h/after")
}

// checkTracking checks that the near cache is live again and that a write on srv drops a
// near copy.
func checkTracking(t *testing.T, st *Store, srv *redistest.Server, key string) {
	t.Helper()
	waitLong(t, "tracking back", st.NearLive)
	nearGet(t, st, key)
	serverDo(t, srv, "DEL", DefaultKeyPrefix+key, "")
	waitFor(t, "the invalidation from the new primary", func() bool { return near(st, key) == nil })
}

// TestSentinelFailover asks the sentinels for a failover while writes go on: the old
// primary, demoted, is left, the store follows the +switch-master message, and only the
// calls in flight at the switch fail.
func TestSentinelFailover(t *testing.T) {
	setup := redistest.StartSentinel(t, 1, 1)
	st := newStore(t, Settings{URL: setup.URL(), Timeout: time.Second, NearMaxSize: nearSize})
	waitLong(t, "tracking", st.NearLive)
	e := sampleEntry(time.Now())
	ctx := testCtx(t)
	if err := st.Set(ctx, "http://h/k", e); err != nil {
		t.Fatalf("Set: %v", err)
	}
	old := setup.Primary.Addr
	setup.Sentinels[0].MustDo("SENTINEL", "FAILOVER", redistest.SentinelMaster)
	failures, writes := 0, 0
	var lastErr error
	waitLong(t, "the store on the new primary", func() bool {
		writes++
		if err := st.Set(testCtx(t), "http://h/k"+strconv.Itoa(writes), e); err != nil {
			failures++
			lastErr = err
		}
		return st.Primary() != old
	})
	replica := setup.Replicas[0]
	if st.Primary() != replica.Addr {
		t.Fatalf("Primary() = %q, want the replica %s", st.Primary(), replica.Addr)
	}
	t.Logf("%d writes during the failover, %d failed (last: %v)", writes, failures, lastErr)
	if failures > 2 {
		t.Errorf("%d writes failed during the failover, want at most the ones in flight at the switch (last: %v)", failures, lastErr)
	}
	for i := 0; i < 20; i++ {
		if err := st.Set(ctx, "http://h/after"+strconv.Itoa(i), e); err != nil {
			t.Fatalf("Set after the switch: %v", err)
		}
	}
	if v, err := replica.Do("EXISTS", DefaultKeyPrefix+"http://h/after0"); err != nil || v != int64(1) {
		t.Errorf("EXISTS on the new primary = %v, %v; want 1", v, err)
	}
	checkTracking(t, st, replica, "http://h/k")
	var got *store.Entry
	got, err := st.Get(ctx, "http://h/after19")
	if err != nil || got == nil {
		t.Errorf("Get after the switch = %v, %v; want the entry", got, err)
	}
}

// TestSentinelReadOnlyReply: a store sending its commands to a replica (as to a primary
// demoted without its connections broken) is refused with READONLY, asks the sentinels
// again, and goes back to the primary they name.
func TestSentinelReadOnlyReply(t *testing.T) {
	setup := redistest.StartSentinel(t, 1, 1)
	st := newStore(t, Settings{URL: setup.URL(), Timeout: time.Second})
	e := sampleEntry(time.Now())
	if err := st.Set(testCtx(t), "http://h/a", e); err != nil {
		t.Fatalf("Set: %v", err)
	}
	// The watcher, asking the sentinels as it subscribes, may move the store back first.
	var err error
	for i := 0; i < 5; i++ {
		st.follow(setup.Replicas[0].Addr)
		if err = st.Set(testCtx(t), "http://h/b", e); err != nil {
			break
		}
	}
	if err == nil || !strings.Contains(err.Error(), "READONLY") {
		t.Fatalf("Set on the replica: err = %v, want READONLY", err)
	}
	waitFor(t, "the store back on the primary", func() bool { return st.Primary() == setup.Primary.Addr })
	if err := st.Set(testCtx(t), "http://h/b", e); err != nil {
		t.Fatalf("Set after the store followed the sentinels: %v", err)
	}
}

// TestSentinelClose: Close ends the subscription to the sentinels' announcements.
func TestSentinelClose(t *testing.T) {
	setup := redistest.StartSentinel(t, 0, 1)
	st, err := New(Settings{URL: setup.URL(), Timeout: time.Second})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	sentinel := setup.Sentinels[0]
	subscribers := func() int {
		reply, err := sentinel.Do("CLIENT", "LIST", "TYPE", "pubsub")
		if err != nil {
			t.Fatalf("CLIENT LIST: %v", err)
		}
		text, _ := reply.(string)
		return strings.Count(text, "sub=1")
	}
	waitFor(t, "the store subscribed", func() bool { return subscribers() == 1 })
	st.Close()
	waitFor(t, "the subscription ended", func() bool { return subscribers() == 0 })
	if err := st.Ping(testCtx(t)); !errors.Is(err, ErrClosed) {
		t.Errorf("Ping after Close = %v, want ErrClosed", err)
	}
}

// TestSentinelsAway asserts what ExampleStore_Primary shows (yaegi test runs no Examples):
// New succeeds with no sentinel answering, and no primary is known.
func TestSentinelsAway(t *testing.T) {
	st := newStore(t, Settings{URL: "redis-sentinel://127.0.0.1:1,127.0.0.1:2/mymaster/0", Timeout: 100 * time.Millisecond})
	if got := st.Primary(); got != "" {
		t.Errorf("Primary() = %q with no sentinel answering, want none", got)
	}
	err := st.Ping(testCtx(t))
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1: ") || !strings.Contains(err.Error(), "127.0.0.1:2: ") {
		t.Errorf("Ping = %v, want an error naming both sentinels", err)
	}
}
