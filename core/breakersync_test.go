package core

import (
	"net/http"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/breaker"
	"github.com/weirproxy/weir/core/store"
)

// Two instances sharing a store: a breaker that trips on one opens on the other at its next
// origin fetch, without waiting for failures of its own. Another middleware sharing the
// store keeps its own breaker.
func TestBreakerDeadlineSharedThroughTheStore(t *testing.T) {
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
		return Settings{Now: clock.Now, Store: shared, StoreID: "shared"}
	}
	a := newTestHandler(t, settings(), failing)
	b := newTestHandler(t, settings(), healthy)
	// Two instances of one middleware: one process holds one engine per name, so the test
	// gives B's engine A's name in the shared keys.
	b.e.breakerSync.prefix = a.e.breakerSync.prefix

	for i := 0; i < breaker.DefaultMinRequests; i++ {
		do(t, a, http.MethodGet, "http://example.com/fail/"+itoa(int64(i)))
	}
	if got := a.e.breaker.State(clock.Now()); got != breaker.StateOpen {
		t.Fatalf("instance A's breaker is %s after %d failures, want open", breaker.StateName(got), breaker.DefaultMinRequests)
	}
	waitStored(t, shared, a.e.breakerSync.prefix+a.e.breaker.Key())

	// B's next origin fetch reads the shared deadline in the background.
	do(t, b, http.MethodGet, "http://example.com/ok/1")
	deadline := time.Now().Add(testWait)
	for b.e.breaker.State(clock.Now()) != breaker.StateOpen {
		if time.Now().After(deadline) {
			t.Fatal("instance B never adopted A's open deadline: hangs")
		}
		time.Sleep(time.Millisecond)
	}
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

func waitStored(t *testing.T, m *store.Memory, key string) {
	t.Helper()
	deadline := time.Now().Add(testWait)
	for store.Lookup(m, key) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("%q never stored: hangs", key)
		}
		time.Sleep(time.Millisecond)
	}
}
