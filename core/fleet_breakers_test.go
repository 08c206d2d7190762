package core

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/breaker"
	"github.com/weirproxy/weir/core/store"
)

// Two instances sharing a store: a breaker that trips on one opens on the other at its next
// origin fetch, without waiting for failures of its own. Another middleware sharing the
// store keeps its own breaker. For each scope: the deadline is written under the breaker's
// key, which names the host (host, the default), or is empty (engine).
func TestBreakerDeadlineSharedThroughTheStore(t *testing.T) {
	tests := []struct {
		desc  string
		scope string
	}{
		{desc: "host, the default", scope: ""},
		{desc: "engine", scope: breaker.ScopeEngine},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			checkDeadlineShared(t, tc.scope)
		})
	}
}

// checkDeadlineShared is TestBreakerDeadlineSharedThroughTheStore under one scope.
func checkDeadlineShared(t *testing.T, scope string) {
	t.Helper()
	clock := newFakeClock()
	shared := store.NewMemory(store.MemorySettings{})
	failing := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	healthy := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Write([]byte("ok"))
	})
	settings := func() Settings {
		return Settings{Now: clock.Now, Store: shared, StoreID: "shared", Breaker: breaker.Settings{Scope: scope}}
	}
	a := newTestHandler(t, settings(), failing)
	b := newTestHandler(t, settings(), healthy)
	// Two instances of one middleware: one process holds one engine per name, so the test
	// gives B's engine A's name in the shared keys.
	b.e.breakerSync.prefix = a.e.breakerSync.prefix
	key := breaker.ScopeKey(a.s.Breaker.Scope, "example.com")

	for i := 0; i < breaker.DefaultMinRequests; i++ {
		do(t, a, http.MethodGet, "http://example.com/fail/"+itoa(int64(i)))
	}
	if got := a.e.breakers.Get(key, clock.Now()).State(clock.Now()); got != breaker.StateOpen {
		t.Fatalf("instance A's breaker is %s after %d failures, want open", breaker.StateName(got), breaker.DefaultMinRequests)
	}
	waitStored(t, shared, a.e.breakerSync.prefix+key)

	// B's next origin fetch reads the shared deadline in the background.
	do(t, b, http.MethodGet, "http://example.com/ok/1")
	waitFor(t, "instance B to adopt A's open deadline", func() bool {
		return b.e.breakers.Get(key, clock.Now()).State(clock.Now()) == breaker.StateOpen
	})
	w := do(t, b, http.MethodGet, "http://example.com/ok/2")
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Errorf("B with the shared breaker open: %d, Retry-After %q; want 503 with Retry-After", w.Code, w.Header().Get("Retry-After"))
	}

	other := newTestHandler(t, settings(), healthy)
	for i := 0; i < 3; i++ {
		if w := do(t, other, http.MethodGet, "http://example.com/other/"+itoa(int64(i))); w.Code != http.StatusOK {
			t.Fatalf("another middleware on the same store: %d %q, want 200 (its breaker is its own)", w.Code, w.Header().Get("Cache-Status"))
		}
		clock.Add(time.Second)
	}
}

// A shared deadline a year ahead (a clock ahead on the instance that wrote it, a corrupt
// value) opens the breaker for breaker.maxOpenFor from now at most, with one log line naming
// the middleware, the breaker, the deadline read and the one adopted; read again while the
// breaker is open, it does not push the deadline on, nor log again.
func TestBreakerSharedDeadlineCappedAtMaxOpenFor(t *testing.T) {
	const maxOpenFor = 30 * time.Second
	clock := newFakeClock()
	shared := store.NewMemory(store.MemorySettings{})
	logs := &testLog{}
	healthy := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Write([]byte("ok"))
	})
	h := newTestHandler(t, Settings{Now: clock.Now, Store: shared, StoreID: "shared", Log: func(msg string) { logs.add(msg) },
		Breaker: breaker.Settings{MaxOpenFor: maxOpenFor, Scope: breaker.ScopeEngine}}, healthy)
	bs := h.e.breakerSync
	yearAhead := clock.Now().Add(365 * 24 * time.Hour)
	if err := shared.Set(context.Background(), bs.prefix+h.e.breaker.Key(), &store.Entry{Pass: true, Born: yearAhead, FreshUntil: yearAhead, KeepUntil: yearAhead}); err != nil {
		t.Fatalf("storing the deadline: %v", err)
	}

	t0 := clock.Now()
	// The fetch reads the shared deadline in the background.
	do(t, h, http.MethodGet, "http://example.com/ok/1")
	waitReadDone(t, bs)
	want := fmt.Sprintf("middleware %s: breaker %q: shared open deadline %s is beyond breaker.maxOpenFor; open until %s",
		bs.name, h.e.breaker.Key(), yearAhead.UTC().Format(time.RFC3339), t0.Add(maxOpenFor).UTC().Format(time.RFC3339))
	if got := logs.all(); len(got) != 1 || got[0] != want {
		t.Errorf("log lines = %q, want [%q]", got, want)
	}
	if until := h.e.breaker.Status(t0).OpenUntil; until.After(t0.Add(maxOpenFor)) || until.Before(t0) {
		t.Errorf("breaker open until now+%v, want at most now+%v", until.Sub(t0), maxOpenFor)
	}

	// Read again while open: the breaker's deadline stays where it was.
	clock.Add(10 * time.Second)
	if w := do(t, h, http.MethodGet, "http://example.com/ok/2"); w.Code != http.StatusServiceUnavailable {
		t.Errorf("with the breaker open: %d, want 503", w.Code)
	}
	waitReadDone(t, bs)
	if until := h.e.breaker.Status(clock.Now()).OpenUntil; !until.Equal(t0.Add(maxOpenFor)) {
		t.Errorf("after another read: open until now+%v, want the first cap, now+%v", until.Sub(t0), maxOpenFor)
	}
	if got := logs.all(); len(got) != 1 {
		t.Errorf("log lines after a read of the same deadline = %q, want the first one only", got)
	}
	if got := h.e.breaker.State(t0.Add(maxOpenFor)); got != breaker.StateHalfOpen {
		t.Errorf("breaker at now+maxOpenFor is %s, want half-open", breaker.StateName(got))
	}
}

// waitReadDone waits for a background read of a shared deadline to end.
func waitReadDone(t *testing.T, bs *breakerSync) {
	t.Helper()
	waitFor(t, "the read of the shared deadline to end", func() bool { return atomic.LoadInt32(&bs.reading) == 0 })
}
