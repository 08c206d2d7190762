package core

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

var errTestNoFlight = errors.New("no flight under way")

// testWait bounds every wait in the tests: past it a test fails with "hangs".
const testWait = 5 * time.Second

// newRequest builds a request with header given as name, value pairs.
func newRequest(method, url string, header ...string) *http.Request {
	r := httptest.NewRequest(method, url, nil)
	// As a server receives it: origin form, which the hit path keys on.
	r.RequestURI = r.URL.RequestURI()
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Add(header[i], header[i+1])
	}
	return r
}

// do serves one request of any method and checks the shape of its Cache-Status. h is a
// *Handler, not an http.Handler: Yaegi v0.16.1 panics on a call with a spread variadic
// argument (header...) whose other arguments need converting to an interface.
func do(t *testing.T, h *Handler, method, url string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, newRequest(method, url, header...))
	checkCacheStatusShape(t, w.Header().Get("Cache-Status"))
	return w
}

// checkCacheStatusShape enforces what every Cache-Status of Weir must look like: Weir's
// name first, hit and fwd never together, a stale hit with a negative ttl.
func checkCacheStatusShape(t *testing.T, v string) {
	t.Helper()
	if v == "" {
		return
	}
	if !strings.HasPrefix(v, "Weir; ") {
		t.Errorf("Cache-Status %q does not start with Weir", v)
	}
	params := strings.Split(v, "; ")
	hit, fwd := false, false
	for _, p := range params[1:] {
		switch {
		case p == "hit":
			hit = true
		case strings.HasPrefix(p, "fwd="):
			fwd = true
		}
	}
	if hit == fwd {
		t.Errorf("Cache-Status %q: want exactly one of hit and fwd", v)
	}
}

// wantAnswer checks an answer's status, Cache-Status and body.
func wantAnswer(t *testing.T, w *httptest.ResponseRecorder, status int, cacheStatus, body string) {
	t.Helper()
	if w.Code != status {
		t.Errorf("status = %d, want %d", w.Code, status)
	}
	if got := w.Header().Get("Cache-Status"); got != cacheStatus {
		t.Errorf("Cache-Status = %q, want %q", got, cacheStatus)
	}
	if got := w.Body.String(); got != body {
		t.Errorf("body = %q, want %q", got, body)
	}
}

// scriptOrigin is an origin whose answers a test scripts by call number (from 1). Calls
// listed with hold wait until the test releases them.
type scriptOrigin struct {
	answer func(n int, w http.ResponseWriter, r *http.Request)
	// entered receives each call's number as it reaches the origin.
	entered chan int

	// mu guards everything below.
	mu       sync.Mutex
	calls    int
	requests []*http.Request
	// gates holds the held calls. A slice, not a map of channels: Yaegi v0.16.1 crashes
	// ranging over a map whose values are channels.
	gates []*originGate
}

// originGate holds back one origin call.
type originGate struct {
	call     int
	open     chan struct{}
	released bool
}

func newScriptOrigin(t *testing.T, answer func(n int, w http.ResponseWriter, r *http.Request)) *scriptOrigin {
	o := &scriptOrigin{answer: answer, entered: make(chan int, 1000)}
	// A failed test must not leave origin calls blocked behind it. A closure, not the method
	// value o.releaseAll, to keep to what Yaegi surely handles.
	t.Cleanup(func() { o.releaseAll() })
	return o
}

// hold makes call n wait for release(n).
func (o *scriptOrigin) hold(n int) {
	o.mu.Lock()
	o.gates = append(o.gates, &originGate{call: n, open: make(chan struct{})})
	o.mu.Unlock()
}

// gate returns call n's gate; o.mu must be held.
func (o *scriptOrigin) gate(n int) *originGate {
	for _, g := range o.gates {
		if g.call == n {
			return g
		}
	}
	return nil
}

func (o *scriptOrigin) release(n int) {
	o.mu.Lock()
	if g := o.gate(n); g != nil && !g.released {
		g.released = true
		close(g.open)
	}
	o.mu.Unlock()
}

func (o *scriptOrigin) releaseAll() {
	o.mu.Lock()
	for _, g := range o.gates {
		if !g.released {
			g.released = true
			close(g.open)
		}
	}
	o.mu.Unlock()
}

func (o *scriptOrigin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	o.calls++
	n := o.calls
	o.requests = append(o.requests, r)
	g := o.gate(n)
	o.mu.Unlock()
	o.entered <- n
	if g != nil {
		<-g.open
	}
	o.answer(n, w, r)
}

func (o *scriptOrigin) callCount() int {
	o.mu.Lock()
	n := o.calls
	o.mu.Unlock()
	return n
}

// request returns the request of call n (from 1).
func (o *scriptOrigin) request(t *testing.T, n int) *http.Request {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	if n < 1 || n > len(o.requests) {
		t.Fatalf("origin call %d never happened (%d calls)", n, len(o.requests))
	}
	return o.requests[n-1]
}

// waitEntered waits until origin call n has started.
func (o *scriptOrigin) waitEntered(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(testWait)
	for {
		if o.callCount() >= n {
			return
		}
		select {
		case <-o.entered:
		case <-deadline:
			t.Fatalf("origin call %d never came: hangs", n)
		}
	}
}

// pendingAnswer is a request served on a goroutine of its own. A struct around the channel:
// Yaegi v0.16.1 crashes ranging over a slice (or a map) whose elements are channels.
type pendingAnswer struct {
	done chan *httptest.ResponseRecorder
}

// serveAsync serves r on a goroutine of its own.
func serveAsync(h http.Handler, r *http.Request) *pendingAnswer {
	p := &pendingAnswer{done: make(chan *httptest.ResponseRecorder, 1)}
	go func() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		p.done <- w
	}()
	return p
}

// awaitAnswer waits for an answer that serveAsync started.
func awaitAnswer(t *testing.T, p *pendingAnswer) *httptest.ResponseRecorder {
	t.Helper()
	select {
	case w := <-p.done:
		checkCacheStatusShape(t, w.Header().Get("Cache-Status"))
		return w
	case <-time.After(testWait):
		t.Fatal("request hangs")
	}
	return nil
}

// waitFollowers waits until the flight under way for key has n followers. It joins the
// flight itself to find it, which counts one more follower that never waits.
func waitFollowers(t *testing.T, h *Handler, key string, n int) {
	t.Helper()
	c, leader := h.e.flights.Join(key)
	if leader {
		// Release the flight just registered, so that nothing waits on it.
		h.e.flights.RunHere(key, c, func() (interface{}, error) { return nil, errTestNoFlight })
		t.Fatalf("no flight under way for %s", key)
	}
	deadline := time.Now().Add(testWait)
	for h.e.flights.Followers(c) < n+1 {
		if time.Now().After(deadline) {
			t.Fatalf("flight for %s has %d followers, want %d: hangs", key, h.e.flights.Followers(c)-1, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitIdle waits until no flight is under way, such as a background refresh.
func waitIdle(t *testing.T, h *Handler) {
	t.Helper()
	deadline := time.Now().Add(testWait)
	for h.e.flights.InFlight() > 0 {
		if time.Now().After(deadline) {
			t.Fatal("flights never ended: hangs")
		}
		time.Sleep(time.Millisecond)
	}
}

// cancellableRequest returns r with a context the test cancels.
func cancellableRequest(r *http.Request) (*http.Request, context.CancelFunc) {
	ctx, cancel := context.WithCancel(r.Context())
	return r.WithContext(ctx), cancel
}
