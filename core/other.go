package core

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// itoa formats an int64 for header values.
func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// serveOther passes requests of other methods to the origin. A non-error answer to an
// unsafe method invalidates the URI and the same-origin Location and Content-Location
// (RFC 9111 section 4.4).
func (h *Handler) serveOther(w http.ResponseWriter, r *http.Request) {
	if r.Method == methodPurge && h.s.AllowPurge {
		h.purge(w, r)
		return
	}
	b, permit := h.admit(r, h.s.Now())
	if !permit.Allowed {
		h.refuse(w, r, nil, statusMethod, permit.RetryAfter)
		return
	}
	release, err := h.e.limiter.Acquire(r.Context(), limitRequest(r))
	if err != nil {
		b.Release(permit, h.s.Now())
		h.shed(w, r, statusMethod, err)
		return
	}
	// A deferred release: a panic in the next handler must not keep the slot (FR-LIM-1).
	defer release()
	w.Header()["Cache-Status"] = []string{statusMethod}
	sw := &statusWriter{w: w}
	h.next.ServeHTTP(sw, r)
	if sw.status == 0 {
		// A handler that returns without writing has answered 200 (net/http's rule).
		sw.status = http.StatusOK
	}
	h.outcome(b, permit, r.Context(), sw.status)
	unsafe := r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch || r.Method == http.MethodDelete
	if unsafe && sw.status >= 200 && sw.status < 400 {
		h.invalidate(r, sw.location, sw.contentLocation)
	}
}

// methodPurge drops a URI's entry from the cache (and the shared store, for every instance
// using it) without contacting the origin, when cache.allowPurge is set.
const methodPurge = "PURGE"

func (h *Handler) purge(w http.ResponseWriter, r *http.Request) {
	h.invalidate(r)
	h.e.neg.Forget(h.keyer.key(r))
	w.Header()["Cache-Status"] = []string{statusFwd + "bypass" + paramDetail + "purged"}
	w.Header()["Content-Type"] = []string{"text/plain; charset=utf-8"}
	w.WriteHeader(http.StatusOK)
	w.Write([]byte("purged\n"))
}

// invalidate drops the entries of r's URI and of the same-origin URIs its answer named.
func (h *Handler) invalidate(r *http.Request, targets ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), h.s.StoreTimeout)
	defer cancel()
	key := h.keyer.key(r)
	h.e.store.Delete(ctx, key)
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
		k := h.keyer.key(other)
		h.e.store.Delete(ctx, k)
	}
}

// statusWriter notes the status and the Location fields of an unsafe method's answer on
// its way to the client, flushing every write (Yaegi hides the writer's Flusher from the
// compiled proxy).
type statusWriter struct {
	w                         http.ResponseWriter
	status                    int
	location, contentLocation string
}

func (s *statusWriter) Header() http.Header { return s.w.Header() }

func (s *statusWriter) WriteHeader(status int) {
	if s.status == 0 && status >= 200 {
		s.status = status
		h := s.w.Header()
		s.location, s.contentLocation = h.Get("Location"), h.Get("Content-Location")
	}
	s.w.WriteHeader(status)
}

func (s *statusWriter) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.WriteHeader(http.StatusOK)
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
