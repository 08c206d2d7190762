package core

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/weirproxy/weir/core/httpcache"
	"github.com/weirproxy/weir/core/metrics"
)

// serveOther passes requests of other methods to the origin. A non-error answer to an
// unsafe method invalidates the URI and the same-origin Location and Content-Location
// (RFC 9111 section 4.4).
func serveOther(h *Handler, w http.ResponseWriter, r *http.Request) {
	if adminRequest(h, w, r) {
		return
	}
	if r.Method == methodPurge && h.s.AllowPurge {
		h.purge(w, r)
		return
	}
	t, refused := enter(h, r.Context(), httpcache.Partition(r), r.Host, r.URL.Path, hasBody(r), wayRecord)
	if t == nil {
		h.refused(w, r, nil, statusMethod, *refused)
		return
	}
	// Deferred: a panic in the next handler must not keep the slot (FR-LIM-1).
	defer leave(h, t, 0, 0, nil)
	atomic.AddInt64(h.passes, 1)
	w.Header()["Cache-Status"] = []string{statusMethod}
	// The client's pauses in its body are bounded while it holds the slot
	// (clients.bodyIdle).
	var body *idleBody
	if hasBody(r) {
		body = watchBody(h, r)
	}
	sw := &statusWriter{w: w, h: h, r: r, unsafe: unsafeMethod(r.Method), body: body}
	began := h.s.Now()
	h.next.ServeHTTP(sw, r)
	took := h.s.Now().Sub(began)
	metrics.ObserveDuration(h.e.metrics.origin, took)
	if bodyCut(body) {
		// The proxy's answer to the failed body says nothing of the origin: the deferred
		// leave frees the slot unrecorded, and the client loses its connection.
		cutClient(w)
		return
	}
	if sw.status == 0 {
		// A handler that returns without writing has answered 200 (net/http's rule).
		sw.WriteHeader(http.StatusOK)
	}
	leave(h, t, sw.status, took, w.Header())
}

// unsafeMethod tells whether a method may change what the URI names: every method but the
// safe ones, including those Weir does not know (RFC 9111 section 4.4, RFC 9110 section 9.2.1).
func unsafeMethod(m string) bool {
	return m != http.MethodGet && m != http.MethodHead && m != http.MethodOptions && m != http.MethodTrace
}

// methodPurge drops a URI's entry from the cache (and the shared store, for every instance
// using it) without contacting the origin, when cache.allowPurge is set.
const methodPurge = "PURGE"

func (h *Handler) purge(w http.ResponseWriter, r *http.Request) {
	if !h.s.AdminAccess.Allowed(r) {
		// An unauthenticated client must never empty the cache.
		h.write(w, r, &answer{status: http.StatusForbidden, text: "forbidden: PURGE needs admin.token or an address in admin.allow",
			cache: statusBypass, detail: "forbidden"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), sitePurgeTimeout)
	defer cancel()
	key := h.keyer.Key(r)
	if _, err := purgeKey(h.e, ctx, key); err != nil {
		h.s.Log(fmt.Sprintf("middleware %s: could not purge %s: %v", h.e.name, key, err))
		// The entry may still be served by every instance sharing the store: say so, so the
		// operator retries.
		h.write(w, r, &answer{status: http.StatusServiceUnavailable, text: "purge failed: " + err.Error(),
			cache: statusBypass, detail: "purge-failed", retryAfter: time.Second})
		return
	}
	h.write(w, r, &answer{status: http.StatusOK, text: "purged", cache: statusBypass, detail: "purged"})
}

// invalidate drops the entries of r's URI and of the same-origin URIs its answer named.
// It returns the error of dropping r's own entry; a store that cannot drop it leaves it to
// be served until it expires, which the log says once per failure.
func (h *Handler) invalidate(r *http.Request, targets ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), h.s.StoreTimeout)
	defer cancel()
	key := h.keyer.Key(r)
	err := h.e.store.Delete(ctx, key)
	if err != nil {
		h.s.Log(fmt.Sprintf("middleware %s: could not invalidate %s: %v", h.e.name, key, err))
	}
	for _, t := range targets {
		if t == "" {
			continue
		}
		u, err := r.URL.Parse(t)
		if err != nil || (u.Host != "" && !strings.EqualFold(u.Host, r.Host)) {
			continue
		}
		other := r.Clone(ctx)
		other.URL = &url.URL{Path: u.Path, RawPath: u.RawPath, RawQuery: u.RawQuery}
		other.RequestURI = other.URL.RequestURI()
		k := h.keyer.Key(other)
		h.e.store.Delete(ctx, k)
	}
	return err
}

// statusWriter notes the status and the Location fields of an unsafe method's answer on
// its way to the client and drops the fields meant for Weir alone, flushing every write
// (Yaegi hides the writer's Flusher from the compiled proxy).
//
// For an unsafe method it invalidates as the status passes, before the answer reaches the
// client: a client that sends a GET as soon as its POST is answered must not find the old
// entry.
type statusWriter struct {
	w      http.ResponseWriter
	status int

	h      *Handler
	r      *http.Request
	unsafe bool
	// body is the watch on the request's body (clients.bodyIdle); nil for none. Once it
	// cut the client, the proxy's answer is dropped.
	body *idleBody
}

func (s *statusWriter) Header() http.Header { return s.w.Header() }

func (s *statusWriter) WriteHeader(status int) {
	// bodyCut written out: an interpreted call on every answer costs more than the test.
	if s.body != nil && atomic.LoadInt32(&s.body.timedOut) != 0 {
		return
	}
	if s.status == 0 && status >= 200 {
		s.status = status
		hdr := s.w.Header()
		if s.unsafe && status < 400 {
			s.h.invalidate(s.r, hdr.Get("Location"), hdr.Get("Content-Location"))
		}
		// The answer passes a writer of Weir's: the fields meant for Weir alone stop here,
		// as on every answer Weir writes (httpcache.WeirOnlyField).
		delete(hdr, httpcache.FieldWeirCacheControl)
		delete(hdr, httpcache.FieldSurrogateControl)
	}
	s.w.WriteHeader(status)
}

func (s *statusWriter) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.WriteHeader(http.StatusOK)
	}
	if s.body != nil && atomic.LoadInt32(&s.body.timedOut) != 0 {
		return len(p), nil
	}
	n, err := s.w.Write(p)
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
	return n, err
}

// Hijack hands the connection over for protocol upgrades (WebSocket): Yaegi keeps this
// method visible to the compiled proxy.
func (s *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(s.w).Hijack()
}

func (s *statusWriter) Flush() {
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}
