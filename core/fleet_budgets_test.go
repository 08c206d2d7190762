package core

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/redisstore"
	"github.com/weirproxy/weir/core/store"
	"github.com/weirproxy/weir/internal/redistest"
)

// TestBudgetShared: with budgets.shared, what other instances allowed a client reaches this
// instance's bucket through the store, in one call for the batch, and the client is refused
// here too; with the store gone, the local buckets decide alone and nothing is refused for
// the store's sake.
func TestBudgetShared(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	clock := newFakeClock()
	s := budgetSettings(clock)
	s.Budgets.Shared = true
	s.StoreURL = "redis://" + srv.Addr
	o := countingOrigin(t, []string{"Cache-Control", "max-age=600"})
	name := uniqueEngineName(t)
	h := mustNew(t, name, s, o)
	sh := h.budgets.share
	// Shares run when the test says: none is due while the clock stands still.
	atomic.StoreInt64(&sh.last, clock.Now().UnixNano())

	wantCode(t, "A's first request", doFront(t, h, "GET", "http://example.com/a", "X-Real-IP", "192.0.2.7"), 200)
	// Another instance allowed A two requests of 5s each: A's burst of 10s.
	other, err := redisstore.New(redisstore.Settings{URL: s.StoreURL})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	key := budgetKeyPrefix + name + "\x00client\x00192.0.2.7"
	if _, err := other.Book(context.Background(), []string{key}, []int64{2}, 5*time.Second); err != nil {
		t.Fatalf("the other instance's Book: %v", err)
	}
	flushBudgets(h.budgets)
	w := doFront(t, h, "GET", "http://example.com/a", "X-Real-IP", "192.0.2.7")
	wantCode(t, "A once the others' requests are shared", w, 429)
	if ra := w.Header().Get("Retry-After"); ra != "10" {
		t.Errorf("Retry-After %q, want 10 (A booked 15s ahead fleet-wide, one more request of 5s within 10s of burst)", ra)
	}
	wantCode(t, "B, whom no instance counted", doFront(t, h, "GET", "http://example.com/a", "X-Real-IP", "192.0.2.8"), 200)

	srv.Stop()
	clock.Add(time.Minute)
	atomic.StoreInt64(&sh.last, clock.Now().UnixNano())
	for i := 0; i < 2; i++ {
		wantCode(t, "A with the store gone, within its local budget", doFront(t, h, "GET", "http://example.com/a", "X-Real-IP", "192.0.2.7"), 200)
	}
	began := time.Now()
	flushBudgets(h.budgets)
	if took := time.Since(began); took > time.Second {
		t.Errorf("a share with the store gone took %v, want it bounded by timeouts.store", took)
	}
	wantCode(t, "A over its local budget", doFront(t, h, "GET", "http://example.com/a", "X-Real-IP", "192.0.2.7"), 429)
}

// TestBudgetSharedNeedsStore: budgets.shared without a shared store fails New.
func TestBudgetSharedNeedsStore(t *testing.T) {
	s := budgetSettings(newFakeClock())
	s.Budgets.Shared = true
	o := countingOrigin(t, nil)
	if _, err := New(uniqueEngineName(t), s, o); err == nil {
		t.Fatal("New accepted budgets.shared without a store")
	}
}

// TestSharedStoreRead: with a shared store, the request path reads through the store's
// Fallback as functions (sharedGet, store.ReadShared), under the guard's one timeout: a
// fresh answer stored once is a hit read from Redis (near cache off), and the store kept
// nothing in local memory for it. Under Yaegi, fallbackOf must find the Fallback.
func TestSharedStoreRead(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	o := countingOrigin(t, []string{"Cache-Control", "max-age=600"})
	h := newTestHandler(t, Settings{StoreURL: "redis://" + srv.Addr, StoreNoNearCache: true}, o)
	if h.shared == nil {
		t.Fatal("Handler.shared is nil with a shared store")
	}
	wantCode(t, "the first request", do(t, h, "GET", "http://example.com/shared"), 200)
	w := do(t, h, "GET", "http://example.com/shared")
	wantCode(t, "the second request", w, 200)
	if cs := w.Header().Get("Cache-Status"); !strings.Contains(cs, "hit") {
		t.Errorf("second request: Cache-Status %q, want a hit", cs)
	}
	wantCalls(t, o, 1)
	if store.Lookup(h.hot, "http://example.com/shared") != nil {
		t.Error("local memory holds the entry the store took")
	}
}
