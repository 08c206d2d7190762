package core

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/httpcache"
	"github.com/weirproxy/weir/core/store"
)

// watchWriter is a client's ResponseWriter that the test can watch while the answer is
// still being written.
type watchWriter struct {
	// mu guards everything below; written is closed at the first body byte.
	mu      sync.Mutex
	header  http.Header
	status  int
	body    strings.Builder
	written chan struct{}
}

func newWatchWriter() *watchWriter {
	return &watchWriter{header: make(http.Header), written: make(chan struct{})}
}

func (w *watchWriter) Header() http.Header { return w.header }

func (w *watchWriter) WriteHeader(status int) {
	w.mu.Lock()
	if w.status == 0 {
		w.status = status
	}
	w.mu.Unlock()
}

func (w *watchWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.body.Len() == 0 && len(p) > 0 {
		close(w.written)
	}
	w.body.WriteString(string(p))
	w.mu.Unlock()
	return len(p), nil
}

func (w *watchWriter) result() (int, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.status, w.body.String()
}

// An answer over MaxEntrySize reaches the client while the origin is still sending it: it
// is never held whole, and not stored.
func TestLargeAnswerStreams(t *testing.T) {
	tests := []struct {
		desc          string
		contentLength bool
	}{
		{desc: "known from Content-Length", contentLength: true},
		{desc: "found while reading", contentLength: false},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			chunk := strings.Repeat("y", 700)
			var client *watchWriter
			o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Cache-Control", "max-age=60")
				if tc.contentLength {
					w.Header().Set("Content-Length", strconv.Itoa(3*len(chunk)))
				}
				w.Write([]byte(chunk))
				w.Write([]byte(chunk))
				if n == 1 {
					// The last chunk waits until the client has the first ones.
					select {
					case <-client.written:
					case <-time.After(testWait):
						panic("the client got nothing before the answer ended: held whole")
					}
				}
				w.Write([]byte(chunk))
			})
			h := newTestHandler(t, Settings{Now: newFakeClock().Now, MaxEntrySize: 1024}, o)
			client = newWatchWriter()
			if p := serveCatching(t, h, client, newRequest(http.MethodGet, "http://example.com/stream")); p != nil {
				t.Fatalf("ServeHTTP panicked with %v", p)
			}
			status, body := client.result()
			if status != 200 || body != strings.Repeat(chunk, 3) {
				t.Errorf("answer = %d, %d bytes; want 200, %d bytes", status, len(body), 3*len(chunk))
			}
			if got := client.header.Get("Cache-Status"); got != "Weir; fwd=uri-miss; detail=too-large" {
				t.Errorf("Cache-Status = %q, want Weir; fwd=uri-miss; detail=too-large", got)
			}
			if got := store.Lookup(h.mem, "http://example.com/stream"); got != nil && len(got.Body) > 0 {
				t.Errorf("the answer was stored: %d bytes", len(got.Body))
			}
		})
	}
}

// A streamed answer is flushed to the client as it comes. (httptest's compiled recorder:
// under Yaegi v0.16.1 a writer defined in interpreted code never passes as an http.Flusher.)
func TestStreamedAnswerFlushes(t *testing.T) {
	o := staticOrigin(t, 200, []string{"Cache-Control", "max-age=60"}, strings.Repeat("f", 4096))
	h := newTestHandler(t, Settings{Now: newFakeClock().Now, MaxEntrySize: 1024}, o)
	w := do(t, h, http.MethodGet, "http://example.com/flush")
	if !w.Flushed {
		t.Error("streamed answer never flushed")
	}
	if w.Body.Len() != 4096 {
		t.Errorf("body = %d bytes, want 4096", w.Body.Len())
	}
}

// A server-sent event stream is relayed as it comes, never held.
func TestEventStreamIsNotHeld(t *testing.T) {
	var client *watchWriter
	o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("data: 1\n\n"))
		select {
		case <-client.written:
		case <-time.After(testWait):
			panic("first event not relayed")
		}
		w.Write([]byte("data: 2\n\n"))
	})
	h := newFrozenHandler(t, o)
	client = newWatchWriter()
	if p := serveCatching(t, h, client, newRequest(http.MethodGet, "http://example.com/events")); p != nil {
		t.Fatalf("ServeHTTP panicked with %v", p)
	}
	if _, body := client.result(); body != "data: 1\n\ndata: 2\n\n" {
		t.Errorf("body = %q", body)
	}
	if got := client.header.Get("Cache-Status"); got != "Weir; fwd=uri-miss; detail=stream" {
		t.Errorf("Cache-Status = %q, want Weir; fwd=uri-miss; detail=stream", got)
	}
}

// The memory store keeps to its byte budget, dropping the least recently used answers.
func TestMemoryBudgetThroughHandler(t *testing.T) {
	body := strings.Repeat("z", 3000)
	o := staticOrigin(t, 200, []string{"Cache-Control", "max-age=600"}, body)
	h := newTestHandler(t, Settings{Now: newFakeClock().Now, MaxSize: 11000, MaxEntrySize: 5000}, o)
	url := func(i int) string { return "http://example.com/lru/" + strconv.Itoa(i) }
	for i := 0; i < 3; i++ {
		do(t, h, http.MethodGet, url(i))
	}
	// /lru/0 is used again, so /lru/1 is the least recently used when /lru/3 comes.
	do(t, h, http.MethodGet, url(0))
	do(t, h, http.MethodGet, url(3))
	if _, bytes := h.mem.Len(); bytes > 11000 {
		t.Errorf("store holds %d bytes, over its budget of 11000", bytes)
	}
	want := map[int]string{0: "Weir; hit; ttl=600", 3: "Weir; hit; ttl=600", 1: "Weir; fwd=uri-miss; stored"}
	for _, i := range []int{0, 3, 1} {
		if got := do(t, h, http.MethodGet, url(i)).Header().Get("Cache-Status"); got != want[i] {
			t.Errorf("GET %s: Cache-Status = %q, want %q", url(i), got, want[i])
		}
	}
}

// caught is how a ServeHTTP run by serveCatching ended: panicked holds what it panicked
// with, nil when it returned.
type caught struct {
	panicked interface{}
}

// serveCatching serves r on a goroutine of its own and returns what its ServeHTTP panicked
// with, nil when it returned. A panic with http.ErrAbortHandler is how a handler aborts its
// answer: net/http closes the connection without ending the message.
func serveCatching(t *testing.T, h *Handler, w http.ResponseWriter, r *http.Request) interface{} {
	t.Helper()
	done := make(chan caught, 1)
	go func() {
		defer func() {
			p := recover()
			done <- caught{panicked: p}
		}()
		h.ServeHTTP(w, r)
	}()
	select {
	case c := <-done:
		return c.panicked
	case <-time.After(testWait):
		t.Fatal("request hangs")
	}
	return nil
}

// RFC 9112 section 8: an answer whose origin broke off in the middle of its body reaches the
// client as broken, as Traefik alone makes it: a streamed one is aborted
// (http.ErrAbortHandler), a held one becomes a 502. Nothing of it is stored, and the next
// request goes to the origin.
func TestTruncatedAnswer(t *testing.T) {
	const (
		stream = iota // the answer streams to the client: it must be aborted
		held          // the answer is held to be stored: the client gets a 502
	)
	tests := []struct {
		desc string
		// header is the origin's header fields, name and value pairs; reqHeader the client's.
		header    []string
		reqHeader []string
		// size is the whole body's length, declared in Content-Length when length is set;
		// the first answer breaks off after cut bytes.
		size   int
		length bool
		cut    int
		// returns makes the origin's handler return after the cut, short of its
		// Content-Length, rather than abort as Traefik's proxy does.
		returns bool
		want    int
		wantCS  string
	}{
		{desc: "no-store, chunked", header: []string{"Cache-Control", "no-store"}, size: 3000, cut: 100,
			want: stream, wantCS: "Weir; fwd=uri-miss; detail=no-store"},
		{desc: "no-store, Content-Length", header: []string{"Cache-Control", "no-store"}, size: 3000, length: true, cut: 100,
			want: stream, wantCS: "Weir; fwd=uri-miss; detail=no-store"},
		{desc: "no-store, Content-Length, origin returns short", header: []string{"Cache-Control", "no-store"}, size: 3000, length: true, cut: 100, returns: true,
			want: stream, wantCS: "Weir; fwd=uri-miss; detail=no-store"},
		{desc: "over maxEntrySize by Content-Length", header: []string{"Cache-Control", "max-age=60"}, size: 3000, length: true, cut: 100,
			want: stream, wantCS: "Weir; fwd=uri-miss; detail=too-large"},
		{desc: "over maxEntrySize found while reading", header: []string{"Cache-Control", "max-age=60"}, size: 3000, cut: 1500,
			want: stream, wantCS: "Weir; fwd=uri-miss; detail=too-large"},
		{desc: "server-sent events", header: []string{"Cache-Control", "max-age=60", "Content-Type", "text/event-stream"}, size: 3000, cut: 100,
			want: stream, wantCS: "Weir; fwd=uri-miss; detail=stream"},
		{desc: "with credentials (FR-COA-8)", header: []string{"Cache-Control", "max-age=60"}, reqHeader: []string{"Authorization", "Bearer a"}, size: 3000, cut: 100,
			want: stream, wantCS: "Weir; fwd=uri-miss; detail=authorization"},
		{desc: "with credentials, origin returns short", header: []string{"Cache-Control", "max-age=60"}, reqHeader: []string{"Authorization", "Bearer a"}, size: 3000, length: true, cut: 100, returns: true,
			want: stream, wantCS: "Weir; fwd=uri-miss; detail=authorization"},
		{desc: "storable, chunked", header: []string{"Cache-Control", "max-age=60"}, size: 800, cut: 100,
			want: held, wantCS: "Weir; fwd=uri-miss; detail=origin-panic"},
		{desc: "storable, Content-Length, origin returns short", header: []string{"Cache-Control", "max-age=60"}, size: 800, length: true, cut: 100, returns: true,
			want: held, wantCS: "Weir; fwd=uri-miss; detail=origin-truncated"},
		{desc: "storable with credentials", header: []string{"Cache-Control", "public, max-age=60"}, reqHeader: []string{"Authorization", "Bearer a"}, size: 800, cut: 100,
			want: held, wantCS: "Weir; fwd=uri-miss; detail=origin-panic"},
		{desc: "storable with credentials, origin returns short", header: []string{"Cache-Control", "public, max-age=60"}, reqHeader: []string{"Authorization", "Bearer a"}, size: 800, length: true, cut: 100, returns: true,
			want: held, wantCS: "Weir; fwd=uri-miss; detail=origin-truncated"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			whole := strings.Repeat("w", tc.size)
			o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
				for i := 0; i+1 < len(tc.header); i += 2 {
					w.Header().Set(tc.header[i], tc.header[i+1])
				}
				if tc.length {
					w.Header().Set("Content-Length", strconv.Itoa(tc.size))
				}
				if n > 1 {
					w.Write([]byte(whole))
					return
				}
				w.Write([]byte(whole[:tc.cut]))
				if !tc.returns {
					// What Traefik's proxy does when the origin's body breaks off.
					abortAnswer()
				}
			})
			h := newTestHandler(t, Settings{Now: newFakeClock().Now, MaxEntrySize: 1024}, o)
			const url = "http://example.com/cut"
			w := httptest.NewRecorder()
			got := serveCatching(t, h, w, newRequest(http.MethodGet, url, tc.reqHeader...))
			switch tc.want {
			case stream:
				if got != http.ErrAbortHandler {
					t.Errorf("ServeHTTP ended with %v, want a panic with http.ErrAbortHandler: the client takes the answer for whole", got)
				}
				if w.Code != 200 || w.Body.String() != whole[:tc.cut] {
					t.Errorf("answer before the abort = %d, %d bytes; want 200, the %d bytes that came", w.Code, w.Body.Len(), tc.cut)
				}
			case held:
				if got != nil {
					t.Errorf("ServeHTTP panicked with %v, want a 502", got)
				}
				if w.Code != http.StatusBadGateway {
					t.Errorf("status = %d, %d bytes; want 502", w.Code, w.Body.Len())
				}
			}
			if cs := w.Header().Get("Cache-Status"); cs != tc.wantCS {
				t.Errorf("Cache-Status = %q, want %q", cs, tc.wantCS)
			}
			if ent := store.Lookup(h.mem, url); ent != nil {
				t.Errorf("after the cut answer the store holds an entry (pass mark %v, %d bytes), want none", ent.Pass, len(ent.Body))
			}
			again := do(t, h, http.MethodGet, url, tc.reqHeader...)
			if again.Code != 200 || again.Body.String() != whole {
				t.Errorf("next answer = %d, %d bytes; want 200, %d bytes", again.Code, again.Body.Len(), tc.size)
			}
			if n := o.callCount(); n != 2 {
				t.Errorf("origin calls = %d, want 2: the next request must reach the origin", n)
			}
		})
	}
}

// A pass-through answer is the origin's, on the client's own writer: the proxy's abort goes
// up to net/http untouched, and no recover in Weir turns it into a clean end.
func TestTruncatedPassThroughAborts(t *testing.T) {
	tests := []struct {
		desc   string
		method string
		url    string
		header []string
		// mark makes the key hit-for-pass first.
		mark bool
	}{
		{desc: "hit-for-pass, no query (passMarked)", method: http.MethodGet, url: "http://example.com/p", mark: true},
		{desc: "hit-for-pass with a query (pass)", method: http.MethodGet, url: "http://example.com/p?q=1", mark: true},
		{desc: "HEAD miss (pass)", method: http.MethodHead, url: "http://example.com/p"},
		{desc: "Range with credentials (pass)", method: http.MethodGet, url: "http://example.com/p", header: []string{"Range", "bytes=0-10", "Authorization", "Bearer x"}},
		{desc: "unsafe method (serveOther)", method: http.MethodPost, url: "http://example.com/p"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Cache-Control", "no-store")
				w.Write([]byte("part"))
				abortAnswer()
			})
			clock := newFakeClock()
			h := newTestHandler(t, Settings{Now: clock.Now}, o)
			r := newRequest(tc.method, tc.url, tc.header...)
			if tc.mark {
				h.markPass(httpcache.Key(&h.keyer, r), clock.Now())
			}
			w := httptest.NewRecorder()
			if got := serveCatching(t, h, w, r); got != http.ErrAbortHandler {
				t.Errorf("ServeHTTP ended with %v, want a panic with http.ErrAbortHandler", got)
			}
			if w.Body.String() != "part" {
				t.Errorf("body before the abort = %q, want \"part\"", w.Body.String())
			}
			if n := o.callCount(); n != 1 {
				t.Errorf("origin calls = %d, want 1", n)
			}
		})
	}
}

// A background refresh whose answer turns out over MaxEntrySize gives it up and marks the
// key hit-for-pass, also behind Traefik's proxy, which ends a copy whose write failed with a
// panic of http.ErrAbortHandler (net/http/httputil's ReverseProxy): that panic is the
// expected end of the fetch, not a failure to log.
func TestRefreshOverTheLimitMarksPass(t *testing.T) {
	clock := newFakeClock()
	chunk := strings.Repeat("z", 700)
	o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=1, stale-while-revalidate=60")
		if n == 1 {
			w.Write([]byte("small"))
			return
		}
		for i := 0; i < 3; i++ {
			if _, err := w.Write([]byte(chunk)); err != nil {
				abortAnswer()
			}
		}
	})
	logs := &testLog{}
	h := newTestHandler(t, Settings{Now: clock.Now, MaxEntrySize: 1024, Log: func(msg string) { logs.add(msg) }}, o)
	const url = "http://example.com/refresh-large"
	do(t, h, http.MethodGet, url)
	clock.Add(2 * time.Second)
	wantAnswer(t, do(t, h, http.MethodGet, url), 200, "Weir; hit; ttl=-1; detail=stale-while-revalidate", "small")
	waitIdle(t, h)
	if logged := logs.all(); len(logged) > 0 {
		t.Errorf("logged %q, want nothing", logged)
	}
	w := do(t, h, http.MethodGet, url)
	if got := w.Header().Get("Cache-Status"); got != "Weir; fwd=uri-miss; detail=uncacheable" {
		t.Errorf("after the refresh: Cache-Status = %q, want the key passed through", got)
	}
	wantCalls(t, o, 3)
}
