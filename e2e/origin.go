package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Origin is the upstream server Traefik forwards to. Each path has its own handler, set by
// the test, and the origin counts the requests that reach it so a test can assert what
// Weir let through: per path, per method and path, and the most in flight at once.
type Origin struct {
	// URL is the origin's base URL (http://127.0.0.1:port), the address services point at.
	URL string

	srv *httptest.Server

	inFlight    int64
	maxInFlight int64

	// mu guards the handler and counter tables; counters themselves are atomic so a
	// handler that blocks never holds mu.
	mu       sync.Mutex
	handlers map[string]http.HandlerFunc
	counts   map[string]*int64
}

// NewOrigin starts an origin on a free 127.0.0.1 port. Paths without a handler answer 404
// with the header X-Origin-Unknown-Path, so a test can tell the origin's 404 from Traefik's.
func NewOrigin() *Origin {
	o := &Origin{
		handlers: make(map[string]http.HandlerFunc),
		counts:   make(map[string]*int64),
	}
	o.srv = httptest.NewServer(http.HandlerFunc(o.serve))
	o.URL = o.srv.URL
	return o
}

// Handle sets the handler for requests whose URL path is exactly path, replacing any
// earlier one. It is safe to call while requests are being served.
func (o *Origin) Handle(path string, h http.HandlerFunc) {
	o.mu.Lock()
	o.handlers[path] = h
	o.mu.Unlock()
}

// Count is how many requests for path reached the origin, whatever their method.
func (o *Origin) Count(path string) int64 {
	return atomic.LoadInt64(o.counter(path))
}

// CountMethod is how many requests with method for path reached the origin.
func (o *Origin) CountMethod(method, path string) int64 {
	return atomic.LoadInt64(o.counter(method + " " + path))
}

// MaxInFlight is the most requests the origin served at once since it started or since
// the last ResetMaxInFlight.
func (o *Origin) MaxInFlight() int64 {
	return atomic.LoadInt64(&o.maxInFlight)
}

// ResetMaxInFlight starts a new in-flight peak measurement.
func (o *Origin) ResetMaxInFlight() {
	atomic.StoreInt64(&o.maxInFlight, atomic.LoadInt64(&o.inFlight))
}

// Close stops the origin, waiting for the requests it is serving.
func (o *Origin) Close() {
	o.srv.CloseClientConnections()
	o.srv.Close()
}

func (o *Origin) counter(name string) *int64 {
	o.mu.Lock()
	c, ok := o.counts[name]
	if !ok {
		c = new(int64)
		o.counts[name] = c
	}
	o.mu.Unlock()
	return c
}

func (o *Origin) serve(w http.ResponseWriter, r *http.Request) {
	raiseMax(&o.maxInFlight, atomic.AddInt64(&o.inFlight, 1))
	defer atomic.AddInt64(&o.inFlight, -1)

	atomic.AddInt64(o.counter(r.URL.Path), 1)
	atomic.AddInt64(o.counter(r.Method+" "+r.URL.Path), 1)

	o.mu.Lock()
	h := o.handlers[r.URL.Path]
	o.mu.Unlock()
	if h == nil {
		w.Header().Set("X-Origin-Unknown-Path", "1")
		http.NotFound(w, r)
		return
	}
	h(w, r)
}

// raiseMax raises *p to v if v is larger, as other goroutines raise it too.
func raiseMax(p *int64, v int64) {
	for {
		old := atomic.LoadInt64(p)
		if v <= old || atomic.CompareAndSwapInt64(p, old, v) {
			return
		}
	}
}

// versioned answers GETs with max-age=60 and a body that counts them (v1, v2, ...), and
// other methods with 200 "done".
func versioned() http.HandlerFunc {
	var gets int64
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			io.WriteString(w, "done")
			return
		}
		w.Header().Set("Cache-Control", "max-age=60")
		fmt.Fprintf(w, "v%d", atomic.AddInt64(&gets, 1))
	}
}

// answer is an origin handler that sets the headers and writes body.
func answer(cacheControl, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if cacheControl != "" {
			w.Header().Set("Cache-Control", cacheControl)
		}
		io.WriteString(w, body)
	}
}

// inFlight counts the requests an origin handler is serving, and the most at once.
type inFlight struct{ n, peak int64 }

// count wraps h, counting its requests in c.
func (c *inFlight) count(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		raiseMax(&c.peak, atomic.AddInt64(&c.n, 1))
		h(w, r)
		atomic.AddInt64(&c.n, -1)
	}
}

// now is how many requests the handler is serving.
func (c *inFlight) now() int64 { return atomic.LoadInt64(&c.n) }

// most is the most requests the handler served at once.
func (c *inFlight) most() int64 { return atomic.LoadInt64(&c.peak) }

// restart makes most count from now: the requests the handler serves now, then any more.
func (c *inFlight) restart() { atomic.StoreInt64(&c.peak, atomic.LoadInt64(&c.n)) }

// delayed answers as h after d.
func delayed(d time.Duration, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(d)
		h(w, r)
	}
}

// searchResults answers a search with max-age=60 and the results for its query q.
func searchResults(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "max-age=60")
	io.WriteString(w, "results for "+r.URL.Query().Get("q"))
}

// arrivalLog notes when requests reach the origin, for the tests of their spacing.
type arrivalLog struct {
	// mu guards at.
	mu sync.Mutex
	at []time.Time
}

// handler answers "feed", not to be stored, noting when each request arrived.
func (l *arrivalLog) handler() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.at = append(l.at, time.Now())
		l.mu.Unlock()
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, "feed")
	}
}

// take returns the arrivals noted since the last take, earliest first, and forgets them.
func (l *arrivalLog) take() []time.Time {
	l.mu.Lock()
	at := l.at
	l.at = nil
	l.mu.Unlock()
	sort.Slice(at, func(i, j int) bool { return at[i].Before(at[j]) })
	return at
}

// gapsBetween is how long after the one before each arrival of at (in order) came.
func gapsBetween(at []time.Time) []time.Duration {
	var gaps []time.Duration
	for i := 1; i < len(at); i++ {
		gaps = append(gaps, at[i].Sub(at[i-1]))
	}
	return gaps
}
