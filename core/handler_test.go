package core

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var testNames int64

// newTestHandler builds a handler under a name no other test uses: engines live in a
// process-wide registry.
func newTestHandler(t *testing.T, s Settings, origin http.Handler) *Handler {
	t.Helper()
	name := fmt.Sprintf("%s-%d", t.Name(), atomic.AddInt64(&testNames, 1))
	h, err := New(name, s, origin)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return h
}

func get(t *testing.T, h http.Handler, url string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, url, nil)
	r.RequestURI = r.URL.RequestURI()
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Add(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestMissThenHit(t *testing.T) {
	clock := newFakeClock()
	var calls int64
	origin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		atomic.AddInt64(&calls, 1)
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("hello"))
	})
	h := newTestHandler(t, Settings{Now: clock.Now}, origin)

	w := get(t, h, "http://example.com/a")
	if got, want := w.Header().Get("Cache-Status"), "Weir; fwd=uri-miss; stored"; got != want {
		t.Errorf("first Cache-Status = %q, want %q", got, want)
	}
	clock.Add(10 * time.Second)
	w = get(t, h, "http://example.com/a")
	if got, want := w.Header().Get("Cache-Status"), "Weir; hit; ttl=50"; got != want {
		t.Errorf("second Cache-Status = %q, want %q", got, want)
	}
	if got, want := w.Header().Get("Age"), "10"; got != want {
		t.Errorf("Age = %q, want %q", got, want)
	}
	if got, want := w.Body.String(), "hello"; got != want {
		t.Errorf("body = %q, want %q", got, want)
	}
	if got := atomic.LoadInt64(&calls); got != 1 {
		t.Errorf("origin calls = %d, want 1", got)
	}
}
