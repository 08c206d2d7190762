package redisstore

import (
	"context"
	"fmt"
	"net"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/store"
	"github.com/weirproxy/weir/internal/redistest"
)

// nearSize is the near tier's budget in these tests.
const nearSize = 1 << 20

// waitFor polls cond until it holds, and fails the test with "hangs" after callWait. The
// changes it waits for come from the server, pushed on another connection.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(callWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("hangs: %s did not happen within %v", what, callWait)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// serverDo sends a command of up to three words (empty ones left out) straight to srv.
func serverDo(t *testing.T, srv *redistest.Server, cmd, arg1, arg2 string) {
	t.Helper()
	var err error
	switch {
	case arg1 == "":
		_, err = srv.Do(cmd)
	default:
		_, err = srv.Do(cmd, arg1, arg2)
	}
	if err != nil {
		t.Fatalf("redis %s %s %s: %v", cmd, arg1, arg2, err)
	}
}

func nearStore(t *testing.T, srv *redistest.Server) *Store {
	t.Helper()
	st := newStore(t, Settings{URL: "redis://" + srv.Addr, NearMaxSize: nearSize})
	waitFor(t, "tracking", st.NearLive)
	return st
}

func near(st *Store, key string) *store.Entry {
	return store.Lookup(st.Near(), key)
}

// nearGet reads key through st until the copy is kept. A write's own invalidation comes
// back from the server a moment after the write, and a copy read before it is not kept.
func nearGet(t *testing.T, st *Store, key string) *store.Entry {
	t.Helper()
	var got *store.Entry
	waitFor(t, "a near copy of "+key, func() bool {
		e, err := st.Get(testCtx(t), key)
		if err != nil {
			t.Fatalf("Get(%q): %v", key, err)
		}
		got = e
		return e != nil && near(st, key) == e
	})
	return got
}

func TestNearOff(t *testing.T) {
	st := newStore(t, Settings{URL: "redis://127.0.0.1:1"})
	if st.Near() != nil || st.NearLive() {
		t.Errorf("Near() = %v, NearLive() = %v without NearMaxSize; want nil, false", st.Near(), st.NearLive())
	}
}

// A copy read through one Store is served without the server until another Store (or
// anyone) writes the key; then it is dropped, and the next Get reads the new entry.
func TestNearInvalidation(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	a, b := nearStore(t, srv), nearStore(t, srv)
	ctx := testCtx(t)
	now := time.Now()
	e1 := sampleEntry(now)
	e2 := sampleEntry(now)
	e2.Status = 203

	tests := []struct {
		desc   string
		change func(key string)
	}{
		{"set through another store", func(key string) {
			if err := a.Set(ctx, key, e2); err != nil {
				t.Fatalf("Set: %v", err)
			}
		}},
		{"delete through another store", func(key string) {
			if err := a.Delete(ctx, key); err != nil {
				t.Fatalf("Delete: %v", err)
			}
		}},
		// Through a function of the package: Yaegi panics calling the variadic MustDo
		// from a function literal held in a table.
		{"expiry", func(key string) { serverDo(t, srv, "PEXPIRE", DefaultKeyPrefix+key, "1") }},
		{"flush", func(string) { serverDo(t, srv, "FLUSHDB", "", "") }},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			key := "k-" + tc.desc
			gen := atomic.LoadInt64(&b.nearGen)
			if err := a.Set(ctx, key, e1); err != nil {
				t.Fatalf("Set: %v", err)
			}
			// The Set's own invalidation reaches b too: waited for, so that it does not drop
			// the copy read below after the fact (an extra miss, not an error, for Weir).
			waitFor(t, "the Set's invalidation at the other store", func() bool { return atomic.LoadInt64(&b.nearGen) != gen })
			got := nearGet(t, b, key)
			sameEntry(t, got, e1)
			if again, _ := b.Get(ctx, key); again != got {
				t.Errorf("second Get returned another entry than the near copy")
			}
			tc.change(key)
			waitFor(t, "invalidation of the near copy", func() bool { return near(b, key) == nil })
		})
	}
}

// A Store's own write drops its copy before the write returns: the request that follows
// must not be served the entry the write replaced.
func TestNearOwnWrite(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	st := nearStore(t, srv)
	ctx := testCtx(t)
	e := sampleEntry(time.Now())
	for _, write := range []func() error{
		func() error { return st.Set(ctx, "k", e) },
		func() error { return st.Delete(ctx, "k") },
	} {
		if err := st.Set(ctx, "k", e); err != nil {
			t.Fatalf("Set: %v", err)
		}
		nearGet(t, st, "k")
		if err := write(); err != nil {
			t.Fatalf("write: %v", err)
		}
		if near(st, "k") != nil {
			t.Errorf("near copy still there right after the store's own write")
		}
	}
}

// A server that goes away takes the near tier with it: copies are dropped at once, none is
// kept while it is down, and tracking comes back with the server.
func TestNearLostWithServer(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	var mu sync.Mutex
	var changes []bool
	st := newStore(t, Settings{URL: "redis://" + srv.Addr, NearMaxSize: nearSize, Timeout: 200 * time.Millisecond,
		OnNearChange: func(live bool, err error) {
			mu.Lock()
			changes = append(changes, live)
			mu.Unlock()
		}})
	waitFor(t, "tracking", st.NearLive)
	ctx := testCtx(t)
	if err := st.Set(ctx, "k", sampleEntry(time.Now())); err != nil {
		t.Fatalf("Set: %v", err)
	}
	nearGet(t, st, "k")

	srv.Stop()
	waitFor(t, "loss of tracking", func() bool { return !st.NearLive() })
	if near(st, "k") != nil {
		t.Errorf("near copy kept after tracking was lost")
	}
	srv.Restart()
	waitFor(t, "tracking again", st.NearLive)

	mu.Lock()
	defer mu.Unlock()
	// Up, down, perhaps one failed attempt logged as down, up: never two ups in a row.
	if len(changes) < 3 || !changes[0] || changes[1] || !changes[len(changes)-1] {
		t.Errorf("OnNearChange calls = %v, want up, down, ..., up", changes)
	}
	for i := 1; i < len(changes); i++ {
		if changes[i] && changes[i-1] {
			t.Errorf("OnNearChange calls = %v: up twice in a row", changes)
		}
	}
}

// An entry read just before its key changes must not be kept past the invalidation, even
// when the invalidation arrives before the copy is stored.
func TestNearFillAfterInvalidation(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	st := nearStore(t, srv)
	e := sampleEntry(time.Now())
	gen := st.nearGen
	st.invalidate([]interface{}{[]byte("message"), []byte(invalidateChannel), []interface{}{[]byte(DefaultKeyPrefix + "k")}})
	st.nearFill("k", e, gen)
	if near(st, "k") != nil {
		t.Errorf("a copy read before an invalidation was kept")
	}
	st.nearFill("k", e, st.nearGen)
	if near(st, "k") == nil {
		t.Errorf("a copy read after the last invalidation was not kept")
	}
}

// Close stops the tracking goroutine's connection: a closed Store keeps no copies.
func TestNearClose(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	st, err := New(Settings{URL: "redis://" + srv.Addr, NearMaxSize: nearSize})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	waitFor(t, "tracking", st.NearLive)
	st.Close()
	waitFor(t, "end of tracking", func() bool { return !st.NearLive() })
	if _, err := st.Get(context.Background(), "k"); err == nil {
		t.Errorf("Get after Close: no error")
	}
}

// TestFallbackWithServerStopped runs the store as the engine does, behind store.Guard and
// store.Fallback, and stops the server: entries the server cannot take are kept in local
// memory (the near tier, or memory of their own with it off) and read from it; a purge
// drops local copies and reports the failure; once the server is back, nothing kept
// while it was lost is read again, and entries go to the server again.
func TestFallbackWithServerStopped(t *testing.T) {
	tests := []struct {
		desc string
		near bool
	}{
		{desc: "near cache on", near: true},
		{desc: "near cache off", near: false},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			checkFallback(t, tc.near)
		})
	}
}

// checkFallback is TestFallbackWithServerStopped with the near tier on or off.
func checkFallback(t *testing.T, nearOn bool) {
	srv := redistest.Start(t, redistest.Config{})
	s := Settings{URL: "redis://" + srv.Addr, Timeout: 200 * time.Millisecond}
	if nearOn {
		s.NearMaxSize = nearSize
	}
	st := newStore(t, s)
	local := st.Near()
	if nearOn {
		waitFor(t, "tracking", st.NearLive)
	} else {
		local = store.NewMemory(store.MemorySettings{MaxSize: nearSize})
	}
	now := time.Now()
	// mu guards now: the tracking goroutine does not read it, but Guard's callers may.
	var mu sync.Mutex
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	guard := store.NewGuard(st, store.GuardSettings{
		Timeout: time.Second,
		Now:     clock,
		OnStateChange: func(open bool, err error) {
			if !open {
				local.Clear()
			}
		},
	})
	fb := store.NewFallback(guard, local, func() bool { return guard.Open() || (nearOn && !st.NearLive()) })
	ctx := context.Background()
	e := sampleEntry(now)

	if err := fb.Set(ctx, "shared", e); err != nil {
		t.Fatalf("Set with the server up: %v", err)
	}
	if store.Lookup(local, "shared") != nil {
		t.Errorf("an entry the server took is in local memory before anyone read it")
	}

	srv.Stop()
	if nearOn {
		waitFor(t, "tracking lost", func() bool { return !st.NearLive() })
		// Tracking lost counts as the store lost: kept at once.
		if err := fb.Set(ctx, "lost", e); err != nil {
			t.Errorf("Set with tracking lost: %v, want it kept locally", err)
		}
		if got, err := fb.Get(ctx, "lost"); got == nil || err != nil {
			t.Errorf("Get with tracking lost = %v, %v; want the local copy", got, err)
		}
	}
	// Misses that fail open the breaker.
	for i := 0; !guard.Open(); i++ {
		if i > store.DefaultGuardFailures {
			t.Fatalf("the store breaker is still closed after %d failed calls", i)
		}
		fb.Get(ctx, "absent")
	}
	for _, k := range []string{"open1", "open2"} {
		if err := fb.Set(ctx, k, e); err != nil {
			t.Errorf("Set(%q) with the breaker open: %v, want it kept locally", k, err)
		}
	}
	if got, err := fb.Get(ctx, "open1"); got == nil || err != nil {
		t.Errorf("Get with the breaker open = %v, %v; want the local copy", got, err)
	}
	if store.Lookup(local, "open1") == nil {
		t.Errorf("the hit path's memory does not hold the entry kept while the server is lost")
	}
	if n, err := fb.PurgeKey(ctx, "open2"); n != 1 || err == nil {
		t.Errorf("PurgeKey with the server lost = %d, %v; want 1 local copy dropped, and the failure", n, err)
	}
	if store.Lookup(local, "open2") != nil {
		t.Errorf("the purged entry is still in local memory")
	}

	srv.Restart()
	mu.Lock()
	now = now.Add(store.DefaultGuardOpenFor)
	mu.Unlock()
	// The trial call closes the breaker, which empties local memory.
	if _, err := fb.Get(ctx, "absent"); err != nil {
		t.Fatalf("Get once the server is back: %v", err)
	}
	if guard.Open() {
		t.Fatalf("the store breaker is still open once the server answered")
	}
	if nearOn {
		waitFor(t, "tracking back", st.NearLive)
	}
	for _, k := range []string{"lost", "open1"} {
		if got, err := fb.Get(ctx, k); got != nil || err != nil {
			t.Errorf("Get(%q), kept while the server was lost, once it is back = %v, %v; want nil, nil", k, got, err)
		}
		if store.Lookup(local, k) != nil {
			t.Errorf("local memory still holds %q, kept while the server was lost", k)
		}
	}
	if err := fb.Set(ctx, "after", e); err != nil {
		t.Fatalf("Set once the server is back: %v", err)
	}
	if v, err := srv.Do("EXISTS", DefaultKeyPrefix+"after"); err != nil || v != int64(1) {
		t.Errorf("EXISTS after = %v, %v; want 1: the server takes entries again", v, err)
	}
}

// TestChangeMark: while tracked, the mark moves, and the change signal taken before closes,
// when anyone writes a key under the prefix that this store never read (how a polled record
// that was absent comes to be); the mark moves on a loss of tracking, during which it reads
// untracked; the near tier off, never tracked.
func TestChangeMark(t *testing.T) {
	off := newStore(t, Settings{URL: "redis://127.0.0.1:1"})
	if _, tracked := off.ChangeMark(); tracked || off.ChangeSignal() != nil {
		t.Errorf("near tier off: tracked %v, signal %v; want untracked, none", tracked, off.ChangeSignal())
	}
	srv := redistest.Start(t, redistest.Config{})
	a, b := nearStore(t, srv), nearStore(t, srv)
	signal := b.ChangeSignal()
	mark, tracked := b.ChangeMark()
	if !tracked {
		t.Fatalf("tracking live: untracked, want tracked")
	}
	if err := a.Set(testCtx(t), "never-read", sampleEntry(time.Now())); err != nil {
		t.Fatalf("Set: %v", err)
	}
	select {
	case <-signal:
	case <-time.After(callWait):
		t.Fatalf("hangs: the change signal not closed by another store's write")
	}
	if m, _ := b.ChangeMark(); m == mark {
		t.Errorf("signalled, mark %d unmoved", m)
	}

	mark, _ = b.ChangeMark()
	srv.Stop()
	waitFor(t, "loss of tracking", func() bool { return !b.NearLive() })
	if m, tracked := b.ChangeMark(); tracked || m == mark {
		t.Errorf("tracking lost: mark %d (before %d), tracked %v; want moved, untracked", m, mark, tracked)
	}
	srv.Restart()
	waitFor(t, "tracking again", b.NearLive)
	if m, tracked := b.ChangeMark(); !tracked || m == mark {
		t.Errorf("tracking back: mark %d (before %d), tracked %v; want moved, tracked", m, mark, tracked)
	}
}

// TestListenerProbes: a connection that listens is probed by the kernel every second, and
// given up after 9 probes unanswered, so that a server gone without a word is noticed within
// about 10s without a PING a second.
func TestListenerProbes(t *testing.T) {
	var d net.Dialer
	listenerProbes(&d)
	c := reflect.ValueOf(d).FieldByName("KeepAliveConfig")
	if !c.IsValid() {
		t.Skip("net.Dialer has no KeepAliveConfig before Go 1.23")
	}
	if got, want := fmt.Sprint(c.Interface()), "{true 1s 1s 9}"; got != want {
		t.Errorf("KeepAliveConfig = %s, want %s", got, want)
	}
}
