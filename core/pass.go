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

	"github.com/weirproxy/weir/core/breaker"
	"github.com/weirproxy/weir/core/hostkey"
	"github.com/weirproxy/weir/core/httpcache"
	"github.com/weirproxy/weir/core/limit"
	"github.com/weirproxy/weir/core/store"
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
	t, refused := enter(h, r.Context(), httpcache.Partition(r), hostkey.Canonical(r.Host), r.URL.Path, hasBody(r), wayRecord)
	if t == nil {
		refuse(h, w, r, nil, statusMethod, *refused)
		return
	}
	// Deferred: a panic in the next handler must not keep the slot (FR-LIM-1).
	defer leave(h, t, 0, 0, nil)
	// Sampled for the hosts table one in consoleSample (61), out of line (sampleAnswer).
	switch atomic.AddInt64(h.passes, 1) % 61 {
	case 0:
		sampleAnswer(h, r, outcomePass)
	}
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
	observeOrigin(h.e, t, took)
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

// invalidate drops the entries of r's URI and of the same-origin URIs its answer named.
// It returns the error of dropping r's own entry; a store that cannot drop it leaves it to
// be served until it expires, which the log says once per failure.
func (h *Handler) invalidate(r *http.Request, targets ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), h.s.StoreTimeout)
	defer cancel()
	key := httpcache.Key(&h.keyer, r)
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
		k := httpcache.Key(&h.keyer, other)
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
		if hdr[httpcache.FieldWeirPurgeUser] != nil {
			// A logout's answer: the user's private entries go before it reaches the
			// client (private.go).
			delete(hdr, httpcache.FieldWeirPurgeUser)
			purgeUserOf(s.h, s.r)
		}
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

// passMarked answers a request whose key is marked hit-for-pass (the mark ent): through the
// general path once the mark has expired, else to the origin with the client's own writer.
// A function, not a method: in Yaegi a method call costs four times as much
// (docs/yaegi.md). It reads the clock and the mark's end itself, so that the hit path pays
// no slot for them, and it is pass written out once more, without pass's call: the
// pass-through that a hit-for-pass mark sends is the most frequent of all.
func passMarked(h *Handler, w http.ResponseWriter, r *http.Request, key string, ent *store.Entry) {
	now := h.now().UnixNano()
	if now >= ent.Hot.KeepNano {
		serve(h, w, r)
		return
	}
	// The partition is the key up to its query (httpcache.PartitionOf written out, since an
	// interpreted call costs more than the scan) when the host is canonical, as it mostly
	// is: the key holds the host as sent, the partition its canonical key.
	host := hostkey.Canonical(r.Host)
	part := key
	if i := strings.IndexByte(key, '?'); i >= 0 {
		part = key[:i]
	}
	if host != r.Host {
		part = httpcache.PartitionOf(key)
	}
	switch atomic.LoadInt32(h.notClosed) + atomic.LoadInt32(h.paced) {
	case 0:
	default:
		if passOff(h, w, r, part, h.passStatusValue) {
			return
		}
	}
	// The breaker's sample (passSampler): one atomic load while it is not due.
	if now >= atomic.LoadInt64(h.sampleNext) && passSample(h, w, r, part, h.passStatusValue, now) {
		return
	}
	slot := limit.Take(h.e.limiter, part, host, r.ContentLength != 0)
	if slot == nil {
		passGated(h, w, r, part, h.passStatusValue, 0)
		return
	}
	// Deferred: a panic in the next handler (an aborted proxy copy) must not keep the slot.
	defer limit.Return(slot)
	// Sampled for the hosts table one in consoleSample (61), out of line (sampleAnswer).
	switch atomic.AddInt64(h.passes, 1) % 61 {
	case 0:
		sampleAnswer(h, r, outcomePass)
	}
	w.Header()["Cache-Status"] = h.passStatusValue
	h.next.ServeHTTP(w, r)
}

// pass sends r to the origin as it is, with its own writer, so streaming, flushing and
// upgrades work as without Weir, through the origin gate: an open breaker stops it (FR-CB-5)
// and it holds an origin slot while it goes (FR-LIM-1). part is r's partition
// (httpcache.Partition: its host in canonical form); cacheStatus[0] is its Cache-Status, a
// slice shared by every answer that carries it (header values are never changed in place).
//
// Its outcome is recorded with the breaker for a sample of requests (passSampler) and for
// the half-open breaker's probe: seeing the status takes a writer of Weir's between the
// proxy and the client (passWatched), whose every call costs interpreted calls.
//
// The common case, every breaker closed and a foreground slot free at once, is enter and
// leave written out: what enter does for a caller that records nothing, without its ticket,
// its context or two interpreted calls' frames (docs/yaegi.md). Anything else takes
// passGated, the gate in full.
func pass(h *Handler, w http.ResponseWriter, r *http.Request, part string, cacheStatus []string) {
	// breaker.AllClosed written out, and pacing's on beside it (both are zero or more), with
	// a tagged switch, whose literal case takes no slot. Pacing is loaded on every request,
	// not only where it was configured: an operator may turn it on at any time (operator.go).
	switch atomic.LoadInt32(h.notClosed) + atomic.LoadInt32(h.paced) {
	case 0:
	default:
		// A call with passGated's arguments, so that pass's frame is as without pacing.
		if passOff(h, w, r, part, cacheStatus) {
			return
		}
	}
	// The breaker's sample (passSampler).
	if now := h.now().UnixNano(); now >= atomic.LoadInt64(h.sampleNext) && passSample(h, w, r, part, cacheStatus, now) {
		return
	}
	// The host cap's key, as part holds it.
	host := hostkey.Canonical(r.Host)
	slot := limit.Take(h.e.limiter, part, host, r.ContentLength != 0)
	if slot == nil {
		passGated(h, w, r, part, cacheStatus, 0)
		return
	}
	// Deferred: a panic in the next handler (an aborted proxy copy) must not keep the slot.
	defer limit.Return(slot)
	// Sampled for the hosts table one in consoleSample (61), out of line (sampleAnswer).
	switch atomic.AddInt64(h.passes, 1) % 61 {
	case 0:
		sampleAnswer(h, r, outcomePass)
	}
	w.Header()["Cache-Status"] = cacheStatus
	h.next.ServeHTTP(w, r)
}

// passOff is pass when its fast path is off: a breaker that is not closed, or pacing on. It
// sends r through passGated, the gate in full, and reports true, unless r's host has no
// pace and every breaker is closed: then r takes pass's fast path all the same.
func passOff(h *Handler, w http.ResponseWriter, r *http.Request, part string, cacheStatus []string) bool {
	// Not pacing's on: pass found it or a breaker not closed, and with every breaker closed
	// a host finds no pace while pacing is off.
	if !breaker.AllClosed(h.e.breakers) || paceOf(h.pacing, r.Host) != nil {
		way := 0
		if sampledPass(h.sampler, h.now().UnixNano()) {
			way = wayRecord
		}
		passGated(h, w, r, part, cacheStatus, way)
		return true
	}
	return false
}

// passSample sends r through the gate recorded, and reports true, when it is the breaker's
// sample of pass-through requests (sampledPass): false, and r takes pass's fast path, when
// another request took the sample first.
func passSample(h *Handler, w http.ResponseWriter, r *http.Request, part string, cacheStatus []string, now int64) bool {
	if !sampledPass(h.sampler, now) {
		return false
	}
	passGated(h, w, r, part, cacheStatus, wayRecord)
	return true
}

// passGated is pass through the whole gate: a breaker that is not closed, a slot that is not
// free at once, or (way wayRecord) the breaker's sample.
func passGated(h *Handler, w http.ResponseWriter, r *http.Request, part string, cacheStatus []string, way int) {
	ctx := r.Context()
	t, refused := enter(h, ctx, part, hostkey.Canonical(r.Host), r.URL.Path, r.ContentLength != 0, way)
	if t == nil {
		refuse(h, w, r, nil, cacheStatus[0], *refused)
		return
	}
	// Deferred: a panic in the next handler (an aborted proxy copy) must not keep the slot.
	defer leave(h, t, 0, 0, nil)
	// Sampled for the hosts table one in consoleSample (61), out of line (sampleAnswer).
	switch atomic.AddInt64(h.passes, 1) % 61 {
	case 0:
		sampleAnswer(h, r, outcomePass)
	}
	w.Header()["Cache-Status"] = cacheStatus
	if t.record {
		passWatched(h, t, w, r)
		return
	}
	h.next.ServeHTTP(w, r)
}

// passWatched sends a pass-through request whose status the breaker records: the breaker's
// sample (passSampler), or the half-open breaker's probe, without which a breaker that sees
// only pass-through traffic would never close. A function of its own, so that its frame
// slots are paid only by the requests recorded.
func passWatched(h *Handler, t *ticket, w http.ResponseWriter, r *http.Request) {
	sw := &statusWriter{w: w, h: h, r: r}
	began := h.s.Now()
	h.next.ServeHTTP(sw, r)
	took := h.s.Now().Sub(began)
	status := sw.status
	if status == 0 {
		// A handler that returns without writing has answered 200 (net/http's rule).
		status = http.StatusOK
	}
	observeOrigin(h.e, t, took)
	leave(h, t, status, took, w.Header())
}

// hasBody tells a request with a body by its length: -1 is a chunked one, and a server
// gives a request without one a length of zero. Such a request draws from the upload pool
// (FR-LIM-7).
func hasBody(r *http.Request) bool {
	return r.ContentLength != 0
}
