package core

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/breaker"
	"github.com/weirproxy/weir/core/flight"
	"github.com/weirproxy/weir/core/store"
	"github.com/weirproxy/weir/internal/clocktest"
)

// The package's one test harness: the clock, the engine, requests, the scripted origin, and
// every wait, which fails with "hangs" past testWait. Tests build on it rather than keep
// their own copies.

var errTestNoFlight = errors.New("no flight under way")

// testWait bounds every wait in the tests: past it a test fails with "hangs".
const testWait = 5 * time.Second

// newFakeClock is a clock the test moves by hand.
func newFakeClock() *clocktest.Clock {
	return clocktest.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
}

var testNames int64

// newTestFleet is one instance's fleet over a breaker group of s and the pacing p (nil:
// none), reading and writing st on clock's time. The store is set by hand, not by setStore:
// no loop runs, the test polls.
func newTestFleet(t *testing.T, clock *clocktest.Clock, s breaker.Settings, p *pacing, st store.Store) (*fleet, *breaker.Group) {
	t.Helper()
	g, err := breaker.NewGroup(s)
	if err != nil {
		t.Fatal(err)
	}
	f := newFleet("mw", g, p, clock.Now)
	f.st = st
	return f, g
}

// uniqueEngineName returns a middleware name no other test or benchmark run uses: engines
// live in a process-wide registry, and a benchmark function runs several times.
func uniqueEngineName(t testing.TB) string {
	t.Helper()
	return fmt.Sprintf("%s-%d", t.Name(), atomic.AddInt64(&testNames, 1))
}

func mustNew(t testing.TB, name string, s Settings, origin http.Handler) *Handler {
	t.Helper()
	if s.Events == nil {
		// Event lines are what the tests that set Events read; the others keep quiet.
		s.Events = discardLog
	}
	h, err := New(name, s, origin)
	if err != nil {
		t.Fatalf("New(%q): %v", name, err)
	}
	return h
}

// newTestHandler builds a handler under a name no other test uses.
func newTestHandler(t *testing.T, s Settings, origin http.Handler) *Handler {
	t.Helper()
	return mustNew(t, uniqueEngineName(t), s, origin)
}

// newFrozenHandler is newTestHandler with default settings and a fake clock that never
// moves: every answer is as old as when it was stored.
func newFrozenHandler(t *testing.T, origin http.Handler) *Handler {
	t.Helper()
	return newTestHandler(t, Settings{Now: newFakeClock().Now}, origin)
}

// discardLog drops the engine's log lines.
var discardLog = func(msg string) {}

// testLog collects what the engine logs: Settings{Log: func(msg string) { logs.add(msg) }}.
type testLog struct {
	// mu guards lines.
	mu    sync.Mutex
	lines []string
}

func (l *testLog) add(msg string) {
	l.mu.Lock()
	l.lines = append(l.lines, msg)
	l.mu.Unlock()
}

// all returns every line logged so far.
func (l *testLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// with returns the lines that contain s.
func (l *testLog) with(s string) []string {
	var out []string
	for _, line := range l.all() {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

// newRequest builds a request with header given as name, value pairs.
func newRequest(method, url string, header ...string) *http.Request {
	return newBodyRequest(method, url, "", header...)
}

// newBodyRequest is newRequest with a body, sent with its length; "" sends none.
func newBodyRequest(method, url, body string, header ...string) *http.Request {
	var r *http.Request
	if body == "" {
		r = httptest.NewRequest(method, url, nil)
	} else {
		r = httptest.NewRequest(method, url, strings.NewReader(body))
	}
	// As a server receives it: origin form, which the hit path keys on.
	r.RequestURI = r.URL.RequestURI()
	addFields(r.Header, header)
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

// refusedAtHead tells the detail of an answer Weir gives before any lookup, neither hit nor
// forwarded: a refusal's reason (a refusal after the lookup names fwd before it).
func refusedAtHead(detail string) bool {
	for _, r := range reasons {
		if r.name == detail {
			return true
		}
	}
	return false
}

// checkCacheStatusShape enforces what every Cache-Status of Weir must look like: Weir's
// name first, hit and fwd never together, a stale hit with a negative ttl. A request refused
// before any lookup (over its budget) is neither a hit nor forwarded: it carries the detail
// alone (RFC 9211 section 2).
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
	if hit == fwd && !refusedAtHead(strings.TrimPrefix(v, "Weir; detail=")) {
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

// wantCode checks an answer's status, saying what was asked.
func wantCode(t *testing.T, what string, w *httptest.ResponseRecorder, code int) {
	t.Helper()
	if w.Code != code {
		t.Errorf("%s: status %d, want %d (Cache-Status %q, body %q)", what, w.Code, code, w.Header().Get("Cache-Status"), w.Body.String())
	}
}

// statusOrOK is status, or 200 for 0: tables leave an ordinary answer's status out.
func statusOrOK(status int) int {
	if status == 0 {
		return http.StatusOK
	}
	return status
}

// wantCalls checks how many calls reached the origin.
func wantCalls(t *testing.T, o *scriptOrigin, want int) {
	t.Helper()
	if got := o.callCount(); got != want {
		t.Errorf("origin calls = %d, want %d", got, want)
	}
}

// addFields adds header fields given as name, value pairs to h.
func addFields(h http.Header, fields []string) {
	for i := 0; i+1 < len(fields); i += 2 {
		h.Add(fields[i], fields[i+1])
	}
}

// staticOrigin answers every request with the same status, header fields and body.
func staticOrigin(t *testing.T, status int, header []string, body string) *scriptOrigin {
	return newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		addFields(w.Header(), header)
		w.WriteHeader(status)
		w.Write([]byte(body))
	})
}

// countingOrigin answers every request with 200, the header fields and the body "v" and the
// call's number ("v1", "v2", ...), so that a test tells the answers apart. HEAD gets the
// fields alone, as from an origin behind a proxy.
func countingOrigin(t *testing.T, header []string) *scriptOrigin {
	return newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		addFields(w.Header(), header)
		if r.Method != http.MethodHead {
			w.Write([]byte("v" + strconv.Itoa(n)))
		}
	})
}

// storedThenAged builds a handler over o on clock, has it answer a GET of url, storing what
// o answers, and moves clock on by age: the start of the tests of what a stale entry does.
func storedThenAged(t *testing.T, clock *clocktest.Clock, o *scriptOrigin, url string, age time.Duration) *Handler {
	t.Helper()
	h := newTestHandler(t, Settings{Now: clock.Now}, o)
	do(t, h, http.MethodGet, url)
	clock.Add(age)
	return h
}

// staleWhileRevalidating is storedThenAged for a countingOrigin whose answers say max-age=10,
// stale-while-revalidate=60: the start of the tests of stale-while-revalidate.
func staleWhileRevalidating(t *testing.T, url string, age time.Duration) (*Handler, *scriptOrigin, *clocktest.Clock) {
	t.Helper()
	clock := newFakeClock()
	o := countingOrigin(t, []string{"Cache-Control", "max-age=10, stale-while-revalidate=60"})
	return storedThenAged(t, clock, o, url, age), o, clock
}

// failingOrigin answers its first good calls with 200, the header fields and body, and every
// later call with status and the body "down": an origin that fails once it has served.
func failingOrigin(t *testing.T, good int, header []string, body string, status int) *scriptOrigin {
	return newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n > good {
			w.WriteHeader(status)
			w.Write([]byte("down"))
			return
		}
		addFields(w.Header(), header)
		w.Write([]byte(body))
	})
}

// validatingOrigin answers with the header fields, among them the entity tag etag, and the
// body; to a request whose If-None-Match names etag, with 304 Not Modified and the fields.
func validatingOrigin(t *testing.T, etag string, header []string, body string) *scriptOrigin {
	return newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		addFields(w.Header(), header)
		w.Header().Set("Etag", etag)
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Write([]byte(body))
	})
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

// count is how many calls were for target: a path alone counts the calls for it whatever
// their query, a path with a query only the calls with that query.
func (o *scriptOrigin) count(target string) int {
	withQuery := strings.IndexByte(target, '?') >= 0
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, r := range o.requests {
		got := r.URL.Path
		if withQuery {
			got = r.URL.RequestURI()
		}
		if got == target {
			n++
		}
	}
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

// serveRequest serves r as do does, failing with "hangs" if it is not answered within
// testWait.
func serveRequest(t *testing.T, h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	return awaitAnswer(t, serveAsync(h, r))
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

// waitFor polls cond every millisecond until it holds, failing with "hangs" and what it
// waited for after testWait. It is the one polling loop of the tests: it waits for what no
// channel tells of, such as work a request leaves running in the background.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("hangs: waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitFollowers waits until the flight under way for key has n followers. It joins the
// flight itself to find it, which counts one more follower that never waits.
func waitFollowers(t *testing.T, h *Handler, key string, n int) {
	t.Helper()
	c, leader := flight.Join(h.e.flights, key)
	if leader {
		// Release the flight just registered, so that nothing waits on it.
		flight.RunHere(h.e.flights, key, c, func() (interface{}, error) { return nil, errTestNoFlight })
		t.Fatalf("no flight under way for %s", key)
	}
	waitFor(t, fmt.Sprintf("%d followers of the flight for %s", n, key), func() bool {
		return h.e.flights.Followers(c) >= n+1
	})
}

// waitIdle waits until no flight is under way, such as a background refresh.
func waitIdle(t *testing.T, h *Handler) {
	t.Helper()
	waitFor(t, "the flights to end", func() bool { return h.e.flights.InFlight() == 0 })
}

// waitStored waits until m holds an entry for key, such as a shared breaker deadline
// written in the background.
func waitStored(t *testing.T, m *store.Memory, key string) {
	t.Helper()
	waitFor(t, key+" to be stored", func() bool { return store.Lookup(m, key) != nil })
}

// cancellableRequest returns r with a context the test cancels.
func cancellableRequest(r *http.Request) (*http.Request, context.CancelFunc) {
	ctx, cancel := context.WithCancel(r.Context())
	return r.WithContext(ctx), cancel
}

// itoa formats an int64, for URLs and header values in tests.
func itoa(v int64) string { return strconv.FormatInt(v, 10) }
