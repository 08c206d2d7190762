package core

import (
	"net/http"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/breaker"
	"github.com/weirproxy/weir/core/store"
)

func TestOperatorOpensAndClosesTheBreaker(t *testing.T) {
	clock := newFakeClock()
	shared := store.NewMemory(store.MemorySettings{})
	failing := true
	o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if failing {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Cache-Control", "max-age=60")
		w.Write([]byte("ok"))
	})
	h := newTestHandler(t, Settings{Now: clock.Now, Store: shared, StoreID: "ops", Breaker: breaker.Settings{Scope: breaker.ScopeEngine}}, o)
	op := operator{e: h.e, s: *h.s}

	if err := op.OpenBreaker("example.com", 30*time.Second); err != nil {
		t.Fatalf("OpenBreaker: %v", err)
	}
	w := do(t, h, http.MethodGet, "http://example.com/a")
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "30" {
		t.Fatalf("opened by hand: %d, Retry-After %q; want 503, 30", w.Code, w.Header().Get("Retry-After"))
	}
	if got := o.callCount(); got != 0 {
		t.Errorf("origin calls while open = %d, want 0", got)
	}
	waitStored(t, shared, h.e.breakerSync.prefix+h.e.breaker.Key())

	// Failures that would trip it at once if counted again: closing clears the counts.
	failing = false
	if err := op.CloseBreaker("example.com"); err != nil {
		t.Fatalf("CloseBreaker: %v", err)
	}
	if got := h.e.breaker.State(clock.Now()); got != breaker.StateClosed {
		t.Fatalf("after CloseBreaker the breaker is %s, want closed", breaker.StateName(got))
	}
	if store.Lookup(shared, h.e.breakerSync.prefix+h.e.breaker.Key()) != nil {
		t.Error("the shared deadline outlived CloseBreaker: other instances would adopt it again")
	}
	if w := do(t, h, http.MethodGet, "http://example.com/b"); w.Code != http.StatusOK {
		t.Errorf("after CloseBreaker: %d %q, want 200", w.Code, w.Header().Get("Cache-Status"))
	}
}

// The gate tells the breaker each failure's status; the operator's open starts the clock
// again over an automatic trip and is reported as manual; the operator's close clears the
// opener and the counts.
func TestOperatorOpenOverAnAutomaticTrip(t *testing.T) {
	clock := newFakeClock()
	o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
	})
	h := newTestHandler(t, Settings{Now: clock.Now, Breaker: breaker.Settings{MinRequests: 2, OpenFor: time.Minute}}, o)
	op := operator{e: h.e, s: *h.s}
	do(t, h, http.MethodGet, "http://example.com/a")
	do(t, h, http.MethodGet, "http://example.com/b")
	b, ok := h.e.breakers.Lookup("example.com")
	if !ok {
		t.Fatalf("no breaker for example.com after two fetches")
	}
	if st := b.Status(clock.Now()); st.State != breaker.StateOpen || st.OpenedBy != breaker.OpenedAuto ||
		st.LastFailure != http.StatusBadGateway || st.Trips != 1 {
		t.Fatalf("after two 502s: %+v, want open by auto, last failure 502, 1 trip", st)
	}

	if err := op.OpenBreaker("Example.com:443", 2*time.Second); err != nil {
		t.Fatalf("OpenBreaker: %v", err)
	}
	if st := b.Status(clock.Now()); st.OpenLeft != 2*time.Second || st.OpenedBy != breaker.OpenedManual || st.Trips != 1 {
		t.Errorf("after OpenBreaker for 2s: %+v, want 2s left, by manual, still 1 trip", st)
	}
	if w := do(t, h, http.MethodGet, "http://example.com/c"); w.Header().Get("Retry-After") != "2" {
		t.Errorf("opened by hand for 2s: Retry-After %q, want 2", w.Header().Get("Retry-After"))
	}

	if err := op.CloseBreaker("example.com"); err != nil {
		t.Fatalf("CloseBreaker: %v", err)
	}
	if st := b.Status(clock.Now()); st.State != breaker.StateClosed || st.OpenedBy != "" || st.Failures != 0 {
		t.Errorf("after CloseBreaker: %+v, want closed, no opener, no failures counted", st)
	}
}
