package core

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/limit"
)

// bodyTimers is an injected AfterFunc whose timers fire when the test says.
type bodyTimers struct {
	// armed receives the number of each timer as it is armed.
	armed chan int

	// mu guards fs, stopped and durations.
	mu        sync.Mutex
	fs        []func()
	stopped   []bool
	durations []time.Duration
}

func newBodyTimers() *bodyTimers {
	return &bodyTimers{armed: make(chan int, 100)}
}

func (bt *bodyTimers) afterFunc(d time.Duration, f func()) (stop func() bool) {
	bt.mu.Lock()
	n := len(bt.fs)
	bt.fs = append(bt.fs, f)
	bt.stopped = append(bt.stopped, false)
	bt.durations = append(bt.durations, d)
	bt.mu.Unlock()
	bt.armed <- n
	return func() bool {
		bt.mu.Lock()
		bt.stopped[n] = true
		bt.mu.Unlock()
		return true
	}
}

// next waits for the next timer to be armed and returns its number.
func (bt *bodyTimers) next(t *testing.T) int {
	t.Helper()
	select {
	case n := <-bt.armed:
		return n
	case <-time.After(testWait):
		t.Fatalf("hangs: no read of the body armed its timer")
	}
	return -1
}

// fire fires timer n.
func (bt *bodyTimers) fire(n int) {
	bt.mu.Lock()
	f := bt.fs[n]
	bt.mu.Unlock()
	f()
}

// duration is what timer n was armed for.
func (bt *bodyTimers) duration(n int) time.Duration {
	bt.mu.Lock()
	defer bt.mu.Unlock()
	return bt.durations[n]
}

// isStopped tells whether timer n was stopped.
func (bt *bodyTimers) isStopped(n int) bool {
	bt.mu.Lock()
	defer bt.mu.Unlock()
	return bt.stopped[n]
}

// bodyOrigin reads the whole body and answers how much it got, or 502 when the read failed,
// as Traefik's proxy does; readErr receives the read's error.
func bodyOrigin(t *testing.T, readErr chan error) *scriptOrigin {
	return newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		readErr <- err
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		w.Write([]byte("got " + itoa(int64(len(b)))))
	})
}

// servePanicking serves r and reports what ServeHTTP panicked with, nil for none.
func servePanicking(h http.Handler, w http.ResponseWriter, r *http.Request) (p interface{}) {
	defer func() { p = recover() }()
	h.ServeHTTP(w, r)
	return nil
}

// TestBodyIdleCutsAPausedUpload: a client that pauses its body longer than
// clients.bodyIdle loses its connection: the origin's read fails, the proxy's answer is
// dropped, the answer is aborted (a recorder cannot be hijacked), the upload slot is free,
// the breaker records nothing and the cut is counted.
func TestBodyIdleCutsAPausedUpload(t *testing.T) {
	bt := newBodyTimers()
	readErr := make(chan error, 1)
	o := bodyOrigin(t, readErr)
	s := Settings{Now: newFakeClock().Now, Log: discardLog, Clients: ClientSettings{BodyIdle: 7 * time.Second},
		Limiter: limit.Settings{AfterFunc: bt.afterFunc}}
	s.Breaker.MinRequests = 1
	h := newTestHandler(t, s, o)
	pr, pw := io.Pipe()
	defer pw.Close()
	r := httptest.NewRequest("POST", "http://example.com/upload", pr)
	r.ContentLength = 20
	w := httptest.NewRecorder()
	panicked := make(chan interface{}, 1)
	go func() { panicked <- servePanicking(h, w, r) }()

	first := bt.next(t)
	if _, err := pw.Write([]byte("0123456789")); err != nil {
		t.Fatal(err)
	}
	second := bt.next(t)
	if !bt.isStopped(first) {
		t.Errorf("the first read's timer was not stopped once its bytes came")
	}
	if bt.duration(first) != 7*time.Second {
		t.Errorf("timer armed for %s, want clients.bodyIdle (7s)", bt.duration(first))
	}
	bt.fire(second)
	select {
	case err := <-readErr:
		if err == nil || !strings.Contains(err.Error(), "clients.bodyIdle") {
			t.Errorf("origin's read: %v, want the body-idle error", err)
		}
	case <-time.After(testWait):
		t.Fatal("hangs: the origin's read was not cut")
	}
	var p interface{}
	select {
	case got := <-panicked:
		// Received with := and assigned here: Yaegi cannot assign a receive in a case.
		p = got
	case <-time.After(testWait):
		t.Fatal("hangs: the request did not end")
	}
	if p != http.ErrAbortHandler {
		t.Errorf("ServeHTTP panicked with %v, want http.ErrAbortHandler (the answer aborted)", p)
	}
	if w.Code != 200 || w.Body.Len() != 0 || w.Flushed {
		t.Errorf("client got %d %q: want nothing written, the proxy's 502 dropped", w.Code, w.Body.String())
	}
	if st := h.e.limiter.Stats(); st.Upload.InFlight != 0 {
		t.Errorf("upload slots held = %d, want 0", st.Upload.InFlight)
	}
	if n := h.e.metrics.bodyIdle.N; n != 1 {
		t.Errorf("weir_client_body_idle_total = %d, want 1", n)
	}
	if c := breakerOf(h.e, "example.com", "/upload", h.s.Now()).Status(h.s.Now()); c.TripFailures+c.TripOK != 0 || c.LastFailure != 0 {
		t.Errorf("breaker status %+v: want the cut client unrecorded", c)
	}
}

// TestBodyIdleLetsAMovingUploadThrough: an upload whose every pause is shorter than
// clients.bodyIdle is never cut, however many pauses it takes.
func TestBodyIdleLetsAMovingUploadThrough(t *testing.T) {
	bt := newBodyTimers()
	readErr := make(chan error, 1)
	o := bodyOrigin(t, readErr)
	s := Settings{Now: newFakeClock().Now, Log: discardLog, Limiter: limit.Settings{AfterFunc: bt.afterFunc}}
	h := newTestHandler(t, s, o)
	pr, pw := io.Pipe()
	r := httptest.NewRequest("PUT", "http://example.com/upload", pr)
	r.ContentLength = 20
	p := serveAsync(h, r)
	for i := 0; i < 10; i++ {
		n := bt.next(t)
		if bt.duration(n) != DefaultBodyIdle {
			t.Errorf("timer armed for %s, want the default %s", bt.duration(n), DefaultBodyIdle)
		}
		if _, err := pw.Write([]byte("ab")); err != nil {
			t.Fatal(err)
		}
	}
	bt.next(t)
	pw.Close()
	wantAnswer(t, awaitAnswer(t, p), 200, statusMethod, "got 20")
	if err := <-readErr; err != nil {
		t.Errorf("origin's read: %v, want the whole body", err)
	}
	bt.mu.Lock()
	defer bt.mu.Unlock()
	for n, stopped := range bt.stopped {
		if !stopped {
			t.Errorf("timer %d of %d was not stopped", n, len(bt.stopped))
		}
	}
}
