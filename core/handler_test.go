package core

import (
	"net/http"
	"testing"
	"time"
)

func TestMissThenHit(t *testing.T) {
	clock := newFakeClock()
	o := staticOrigin(t, 200, []string{"Cache-Control", "max-age=60", "Content-Type", "text/plain"}, "hello")
	h := newTestHandler(t, Settings{Now: clock.Now}, o)

	w := do(t, h, http.MethodGet, "http://example.com/a")
	if got, want := w.Header().Get("Cache-Status"), "Weir; fwd=uri-miss; stored"; got != want {
		t.Errorf("first Cache-Status = %q, want %q", got, want)
	}
	clock.Add(10 * time.Second)
	w = do(t, h, http.MethodGet, "http://example.com/a")
	if got, want := w.Header().Get("Cache-Status"), "Weir; hit; ttl=50"; got != want {
		t.Errorf("second Cache-Status = %q, want %q", got, want)
	}
	if got, want := w.Header().Get("Age"), "10"; got != want {
		t.Errorf("Age = %q, want %q", got, want)
	}
	if got, want := w.Body.String(), "hello"; got != want {
		t.Errorf("body = %q, want %q", got, want)
	}
	if got := o.callCount(); got != 1 {
		t.Errorf("origin calls = %d, want 1", got)
	}
}
