package core

import (
	"github.com/weirproxy/weir/core/store"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
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
			done := make(chan struct{})
			go func() {
				defer close(done)
				h.ServeHTTP(client, newRequest(http.MethodGet, "http://example.com/stream"))
			}()
			select {
			case <-done:
			case <-time.After(testWait):
				t.Fatal("request hangs")
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
	h := newTestHandler(t, Settings{Now: newFakeClock().Now}, o)
	client = newWatchWriter()
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(client, newRequest(http.MethodGet, "http://example.com/events"))
	}()
	select {
	case <-done:
	case <-time.After(testWait):
		t.Fatal("request hangs")
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
				panic(http.ErrAbortHandler)
			}
		}
	})
	var mu sync.Mutex
	var logged []string
	logf := func(msg string) {
		mu.Lock()
		logged = append(logged, msg)
		mu.Unlock()
	}
	h := newTestHandler(t, Settings{Now: clock.Now, MaxEntrySize: 1024, Log: logf}, o)
	const url = "http://example.com/refresh-large"
	do(t, h, http.MethodGet, url)
	clock.Add(2 * time.Second)
	wantAnswer(t, do(t, h, http.MethodGet, url), 200, "Weir; hit; ttl=-1", "small")
	waitIdle(t, h)
	mu.Lock()
	if len(logged) > 0 {
		t.Errorf("logged %q, want nothing", logged)
	}
	mu.Unlock()
	w := do(t, h, http.MethodGet, url)
	if got := w.Header().Get("Cache-Status"); got != "Weir; fwd=uri-miss; detail=uncacheable" {
		t.Errorf("after the refresh: Cache-Status = %q, want the key passed through", got)
	}
	if got := o.callCount(); got != 3 {
		t.Errorf("origin calls = %d, want 3", got)
	}
}
