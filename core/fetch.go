package core

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/weirproxy/weir/core/hostkey"
	"github.com/weirproxy/weir/core/httpcache"
	"github.com/weirproxy/weir/core/neg"
	"github.com/weirproxy/weir/core/setting"
	"github.com/weirproxy/weir/core/store"
)

// Errors of the fetch path.
var (
	// errDetached stops an origin answer's copy once nobody can receive it.
	errDetached = errors.New("weir: client gone or answer over the size limit")
	// errLostResult marks a flight that ended without a result.
	errLostResult = errors.New("weir: flight ended without a result")
)

// fetchResult is what one origin fetch made on behalf of the cache produced.
type fetchResult struct {
	status int
	header http.Header
	body   []byte

	// entry is the answer as it may be shared and served from storage; nil when it may not
	// be shared (then followers look up once more and fetch on their own).
	entry *store.Entry
	// varKey is the variant key the entry answers, when it varies.
	varKey string
	stored bool
	// reason says why the answer was not stored.
	reason string
	// originError marks a 500, 502, 503 or 504 from the origin or its proxy (which answers
	// 502 or 504 for network errors): every waiter gets it, or stale if allowed (FR-COA-5).
	originError bool
	// streamed marks an answer written to the leader as it arrived: nobody else can have it.
	streamed bool
	// declined marks an answer the fetch gave up on, unheld and unsent: its leader asked for
	// a range, and gets it from the origin itself (sink.ranged).
	declined bool
	// revalidated marks a 304 that refreshed a stale entry.
	revalidated bool
	// truncated marks an answer whose body ended before its Content-Length: an incomplete
	// message (RFC 9112 section 8), never stored nor served as whole.
	truncated bool
	// refused is why the gate, or the miss-rate detector, kept the fetch from the origin
	// (FR-CB-5, FR-LIM-5).
	refused refusal
	// unstoredPath marks an entry outside cache.paths: shared with the flight's followers,
	// never stored.
	unstoredPath bool
}

// Fields of a client's request that the cache's own fetch leaves out: the cache wants the
// whole answer, and sets its own validators from what it holds.
var fetchDrop = []string{"If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since", "If-Range", "Range"}

// fetchRequest prepares the request Weir sends on behalf of the cache: detached from the
// client's cancellation (FR-COA-2) but bounded by timeouts.origin, conditional when a stale
// entry has validators (RFC 9111 section 4.3.1).
func fetchRequest(h *Handler, r *http.Request, stale *store.Entry) (*http.Request, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), h.s.OriginTimeout)
	req := r.Clone(ctx)
	// Weir stores GET answers and serves HEAD from them: a HEAD that leads a fetch or a
	// refresh must not store an answer without its body.
	req.Method = http.MethodGet
	for _, k := range fetchDrop {
		delete(req.Header, k)
	}
	req.Body = http.NoBody
	req.ContentLength = 0
	// Weir announces itself as a surrogate, so that the origin can target Surrogate-Control
	// directives at it (Edge Architecture section 2.1).
	req.Header["Surrogate-Capability"] = httpcache.WithSurrogateCapability(req.Header["Surrogate-Capability"])
	if stale != nil {
		if etag := stale.Header.Get("Etag"); etag != "" {
			req.Header["If-None-Match"] = []string{etag}
		}
		if lm := stale.Header.Get("Last-Modified"); lm != "" {
			req.Header["If-Modified-Since"] = []string{lm}
		}
	}
	return req, cancel
}

// fetch sends req to the origin and stores what may be stored under key, in partition part
// (httpcache.PartitionOf(key), which its caller has mostly found already). sk is the
// leader's writer for answers that cannot be held; nil for background refreshes.
//
// The common answer, whole, held and storable, is built and stored by fetchAnswered; every
// other goes to fetchOther. Under Yaegi a call allocates a slot for every value of its
// function's whole body, taken branch or not (docs/yaegi.md): the cases a miss rarely meets
// would otherwise cost every miss, and what follows the origin's answer every refusal.
func fetch(h *Handler, req *http.Request, cancel context.CancelFunc, key, part string, stale *store.Entry, sk *sink) *fetchResult {
	defer cancel()
	// Every fetch holds an origin slot until its answer is buffered or streamed (FR-LIM-1);
	// a background refresh never queues and never takes the foreground's reserve (FR-LIM-4).
	// The cache's fetches carry no body.
	way := wayRecord
	if sk == nil {
		way |= wayBackground
	}
	// cache.ttls chooses the policy (its default freshness), cache.paths whether to store;
	// without either, bucketOf's own first test, without its call.
	pol, keep := &h.policy, true
	if h.buckets != nil {
		pol, keep = bucketOf(h, key)
	}
	oa, refused := gatedFetch(h, req, part, way, pol, sk, stale != nil)
	if oa == nil {
		return &fetchResult{refused: *refused}
	}
	return fetchAnswered(h, req, key, stale, pol, keep, oa)
}

// fetchAnswered is fetch once the origin has answered, oa: out of fetch's body, which a
// fetch the gate refuses (two in five of a flood's) pays for under Yaegi (docs/yaegi.md).
func fetchAnswered(h *Handler, req *http.Request, key string, stale *store.Entry, pol *httpcache.Policy, keep bool, oa *originAnswer) *fetchResult {
	rec := oa.rec
	// The common answer: a whole 2xx, held, storable.
	if oa.truncated || rec.mode != modeBuffer || !rec.storable || rec.status >= 300 {
		return fetchOther(h, req, key, stale, pol, keep, oa)
	}
	res := &fetchResult{status: rec.status, header: rec.header, body: rec.body, reason: rec.reason}
	res.entry = httpcache.NewEntry(pol, rec.status, rec.header, rec.body, rec.cc, oa.reqTime, oa.respTime)
	return fetched(h, req, key, keep, res)
}

// fetchOther is fetch's answer for all but the common one: an answer cut short, streamed,
// declined, discarded, an origin error, a 304, or one that may not be stored.
func fetchOther(h *Handler, req *http.Request, key string, stale *store.Entry, pol *httpcache.Policy, keep bool, oa *originAnswer) *fetchResult {
	rec := oa.rec
	reqTime := oa.reqTime
	respTime := oa.respTime
	if oa.truncated {
		return &fetchResult{status: rec.status, truncated: true}
	}
	res := &fetchResult{status: rec.status, header: rec.header, body: rec.body, reason: rec.reason}
	switch {
	case rec.mode == modeStream:
		res.streamed = true
		h.markUnshared(key, rec.reason, respTime)
		return res
	case rec.mode == modeDecline:
		res.declined = true
		h.markUnshared(key, rec.reason, respTime)
		return res
	case rec.mode == modeDiscard:
		res.reason = httpcache.ReasonTooLarge
		h.markUnshared(key, res.reason, respTime)
		return res
	case httpcache.IsOriginError(rec.status):
		res.originError = true
		if stale == nil && !httpcache.RequestNoStore(req) {
			// A negative entry stores part of the answer: not for a request that forbids it.
			h.rememberFailure(key, req, rec.status, rec.header, respTime)
		}
		return res
	case rec.status == http.StatusNotModified && stale != nil:
		merged := httpcache.MergeNotModified(stale.Header, rec.header)
		cc := httpcache.ResponseControl(merged)
		ent := httpcache.NewEntry(pol, stale.Status, merged, stale.Body, cc, reqTime, respTime)
		res.status, res.header, res.body = ent.Status, ent.Header, ent.Body
		if ok, reason := httpcache.Storable(pol, req, stale.Status, merged, cc); !ok {
			// A 304 that sets a cookie or makes the answer private or no-store updates it for
			// the leader only: neither stored nor shared with followers.
			res.reason = reason
			h.markUnshared(key, reason, respTime)
			return res
		}
		res.entry, res.revalidated = ent, true
	case !rec.storable:
		h.markUnshared(key, rec.reason, respTime)
		return res
	default:
		res.entry = httpcache.NewEntry(pol, rec.status, rec.header, rec.body, rec.cc, reqTime, respTime)
	}
	return fetched(h, req, key, keep, res)
}

// fetched stores res's entry, answering req, under key (or, outside cache.paths, keeps it
// for the flight's followers only) and returns res.
func fetched(h *Handler, req *http.Request, key string, keep bool, res *fetchResult) *fetchResult {
	if len(res.entry.Vary) > 0 {
		res.varKey = httpcache.VariantKey(key, res.entry.Vary, req)
	}
	if !neg.Empty(h.e.neg) {
		h.e.neg.Forget(key)
	}
	if !keep {
		// Outside cache.paths: the flight's followers share the answer as they would a
		// stored one, and the next request for the path fetches again.
		res.unstoredPath = true
		return res
	}
	res.stored = put(h, key, req, res.entry)
	if !res.stored {
		res.reason = httpcache.ReasonTooLarge
	}
	return res
}

// originAnswer is an origin's answer to a fetch of the cache's (gatedFetch).
type originAnswer struct {
	rec *recorder
	// reqTime and respTime are when the request was sent and its answer came.
	reqTime  time.Time
	respTime time.Time
	// truncated marks a body that ended short of its Content-Length.
	truncated bool
	// purged marks an answer that carried Weir-Purge-User: the requesting user's private
	// entries were dropped.
	purged bool
}

// gatedFetch is what every fetch of the cache's (fetch, privateFetch) does with the origin:
// req through the gate (part its partition, way enter's) into a recorder of pol (sk the
// leader's writer, nil for a background refresh; stale: a conditional request for a stale
// entry), its answer recorded with the gate. It returns nil and the gate's refusal when the
// gate kept req from the origin. A function, not a method: one frame per fetch. The trip
// itself is originTrip's: in a flood two fetches in five are refused here, and under Yaegi
// a call allocates a slot for every value of its callee's whole body (docs/yaegi.md).
func gatedFetch(h *Handler, req *http.Request, part string, way int, pol *httpcache.Policy, sk *sink, stale bool) (*originAnswer, *refusal) {
	host := hostkey.Canonical(req.Host)
	t, refused := enter(h, req.Context(), part, host, req.URL.Path, false, way)
	if t == nil {
		return nil, refused
	}
	// The result in a variable of its own before the return: Yaegi v0.16.1 returns some
	// calls' results in both places of a two-value return (docs/yaegi.md).
	oa := originTrip(h, t, req, part, host, pol, sk, stale)
	return oa, nil
}

// originTrip is gatedFetch's trip to the origin through t, the gate's ticket, which it
// leaves: req's answer recorded under pol, for partition part of host.
func originTrip(h *Handler, t *ticket, req *http.Request, part, host string, pol *httpcache.Policy, sk *sink, stale bool) *originAnswer {
	// Deferred: a panic in the next handler must not keep the slot.
	defer leave(h, t, 0, 0, nil)
	rec := &recorder{h: h, policy: pol, req: req, header: make(http.Header), sink: sk, stale: stale}
	oa := &originAnswer{rec: rec, reqTime: h.s.Now()}
	serveOrigin(h.next, rec, req)
	oa.respTime = h.s.Now()
	took := oa.respTime.Sub(oa.reqTime)
	observeOrigin(h.e, t, took)
	noteFetch(h.e, part, host, oa.respTime, took)
	if !rec.wroteHeader {
		rec.WriteHeader(http.StatusOK)
	}
	leave(h, t, rec.status, took, rec.header)
	if h.private != nil && len(rec.header[httpcache.FieldWeirPurgeUser]) > 0 {
		// A logout's answer: the user's private entries go (private.go, FR-PRV-5). The field
		// itself never leaves Weir (httpcache.WeirOnlyField).
		delete(rec.header, httpcache.FieldWeirPurgeUser)
		purgeUserOf(h, req)
		oa.purged = true
	}
	// Traefik's proxy aborts (panics) when the origin's body breaks off; a handler that
	// returns with a short body instead must not have it stored, nor the hit-for-pass mark
	// of an answer that never came whole. A body the fetch gave up on itself (declined,
	// discarded) is short on purpose.
	oa.truncated = rec.written < rec.declared && rec.mode != modeDecline && rec.mode != modeDiscard
	return oa
}

// markUnshared marks key hit-for-pass after an answer that could not be shared for reason,
// unless the reason speaks of the request alone (its credentials, its no-store): that says
// nothing of the answer others get, and the key stays cacheable (FR-COA-8).
//
// Nor under private.paths: there the answer an anonymous request got says nothing of what
// a user's request gets, and a mark, which the hit path finds before any private lookup,
// would send every user's request past the private cache.
func (h *Handler) markUnshared(key, reason string, now time.Time) {
	if h.private != nil && setting.MatchPattern(keyPath(key), h.private.paths) >= 0 {
		return
	}
	if !httpcache.RequestScoped(reason) {
		h.markPass(key, now)
	}
}

// markPass remembers that key's answer could not be shared (hit-for-pass): for
// coalesce.hitForMissTTL its requests go straight to the origin, without coalescing. The mark
// lives in the store, so the hit path's one lookup finds it, and instances sharing a store
// share it.
func (h *Handler) markPass(key string, now time.Time) {
	mark := &store.Entry{Pass: true, Born: now, FreshUntil: now, KeepUntil: now.Add(h.s.HitForMissTTL)}
	// Prepared: the hit path reads the mark's end as Hot.KeepNano.
	mark.Prepare()
	ctx, cancel := context.WithTimeout(context.Background(), h.s.StoreTimeout)
	h.e.store.Set(ctx, key, mark)
	cancel()
}

// What a recorder does with the answer's body.
const (
	modeBuffer  = iota // hold it, to store and share
	modeStream         // write it to the leader as it arrives
	modeDiscard        // drop it: over the limit with nobody to stream to
	modeDecline        // drop it: not to be held, and its leader asked for a range
)

// recorder is the ResponseWriter of a fetch made on behalf of the cache. It holds answers
// that may be shared, up to the size limit, and streams the others to the leader.
type recorder struct {
	h *Handler
	// policy is the fetch's: the Handler's, or the one cache.ttls gives the path.
	policy *httpcache.Policy
	req    *http.Request
	header http.Header
	sink   *sink
	stale  bool

	wroteHeader bool
	status      int
	cc          httpcache.Directives
	storable    bool
	reason      string
	mode        int
	body        []byte
	// declared is the answer's Content-Length, -1 when it states none; written counts the
	// body bytes the origin handed over, so that a body ending short is seen.
	declared int64
	written  int64
}

func (rec *recorder) Header() http.Header { return rec.header }

// WriteHeader decides, from the status and header fields alone, whether to hold the answer
// or stream it: a client must not wait for a body that will never be stored.
func (rec *recorder) WriteHeader(status int) {
	if rec.wroteHeader || (status >= 100 && status < 200) {
		// Interim answers (1xx) are not relayed through the cache.
		return
	}
	// Every answer fetched passes here, called from Traefik's compiled proxy: each selector
	// and each package constant takes a frame slot under Yaegi (docs/yaegi.md), so the
	// header is read through a local and the statuses are literals (204, 304).
	h := rec.header
	rec.wroteHeader = true
	rec.status = status
	cc := httpcache.ResponseControl(h)
	rec.cc = cc
	storable, reason := httpcache.Storable(rec.policy, rec.req, status, h, cc)
	rec.storable = storable
	rec.reason = reason
	rec.mode = modeBuffer
	rec.declared = -1
	// A 304's Content-Length is the stored answer's, and a 204 has no body (RFC 9110
	// section 8.6). Header fields are read from the map, as Header.Get would read them
	// (its key is canonical already), without its reflective call under Yaegi.
	switch status {
	case 204, 304:
	default:
		if cl := h["Content-Length"]; len(cl) > 0 {
			if n, err := strconv.ParseInt(cl[0], 10, 64); err == nil && n >= 0 {
				rec.declared = n
			}
		}
	}
	// An origin error is held: every waiter gets the error, or stale (FR-COA-5).
	if rec.sink == nil || (status == 304 && rec.stale) || httpcache.IsOriginError(status) {
		return
	}
	switch {
	case !storable:
		rec.stream()
	case isEventStream(h):
		rec.reason = httpcache.ReasonStreaming
		rec.stream()
	case rec.declared > rec.policy.MaxEntrySize:
		rec.reason = httpcache.ReasonTooLarge
		rec.stream()
	}
}

// isEventStream tells whether h's Content-Type (its first line, as Header.Get reads it) is
// text/event-stream: an answer that never ends, streamed rather than held.
func isEventStream(h http.Header) bool {
	ct := h["Content-Type"]
	return len(ct) > 0 && strings.HasPrefix(ct[0], "text/event-stream")
}

func (rec *recorder) Write(p []byte) (int, error) {
	if !rec.wroteHeader {
		rec.WriteHeader(http.StatusOK)
	}
	rec.written += int64(len(p))
	switch rec.mode {
	case modeStream:
		return rec.sink.write(p)
	case modeDiscard, modeDecline:
		return 0, errDetached
	}
	if int64(len(rec.body)+len(p)) > rec.policy.MaxEntrySize {
		return rec.overflow(p)
	}
	rec.body = append(rec.body, p...)
	return len(p), nil
}

// overflow is Write for the write that takes a held answer over the size limit, out of
// Write's body: every write of every answer fetched pays for Write's values under Yaegi
// (docs/yaegi.md), and few answers are too large.
func (rec *recorder) overflow(p []byte) (int, error) {
	// Never held whole. The leader gets what was held and the rest as it arrives; a
	// background refresh gives up.
	if rec.sink == nil {
		rec.mode = modeDiscard
		rec.body = nil
		return 0, errDetached
	}
	rec.reason = httpcache.ReasonTooLarge
	held := rec.body
	rec.body = nil
	rec.stream()
	if rec.mode == modeDecline {
		return 0, errDetached
	}
	if len(held) > 0 {
		if _, err := rec.sink.write(held); err != nil {
			return 0, err
		}
	}
	return rec.sink.write(p)
}

// Flush is a no-op: a held answer is sent whole, a streamed one is flushed on every write.
func (rec *recorder) Flush() {}

// stream sends the answer to the leader as it arrives, or, when the leader asked for a range,
// gives up on it: a client that asked for part of a large answer must not wait for the whole
// of it (a video player seeking into a film), and the origin answers its Range itself.
func (rec *recorder) stream() {
	if rec.sink.ranged {
		rec.mode = modeDecline
		return
	}
	rec.mode = modeStream
	detail := ""
	if rec.reason != "" {
		detail = paramDetail + rec.reason
	}
	rec.sink.writeHeader(rec.status, rec.header, detail)
}

// sink is the leader's ResponseWriter, written by the fetch goroutine while the leader
// waits.
type sink struct {
	cacheStatus string
	// ranged marks a leader that asked for a range: an answer the fetch cannot hold is not
	// streamed to it (recorder.stream).
	ranged bool

	// mu guards w: the leader detaches the sink before its ServeHTTP returns, and nothing
	// writes to an answer that has been finished.
	mu       sync.Mutex
	w        http.ResponseWriter
	detached bool
	started  bool
}

func (s *sink) writeHeader(status int, h http.Header, detail string) {
	s.mu.Lock()
	if !s.detached {
		dst := s.w.Header()
		for k, v := range h {
			if httpcache.WeirOnlyField(k) {
				continue
			}
			dst[k] = v
		}
		dst["Cache-Status"] = []string{s.cacheStatus + detail}
		s.w.WriteHeader(status)
		s.started = true
	}
	s.mu.Unlock()
}

// write relays p and flushes it: Yaegi hands compiled code a plain ResponseWriter for a
// writer defined here, so the origin's own flushes never reach the client (docs/yaegi.md).
func (s *sink) write(p []byte) (int, error) {
	s.mu.Lock()
	if s.detached {
		s.mu.Unlock()
		return 0, errDetached
	}
	n, err := s.w.Write(p)
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
	s.mu.Unlock()
	return n, err
}

// detach stops all writes to s, the leader's writer, and reports whether an answer was
// started. A function, not a method: every leader calls it (docs/yaegi.md).
func detach(s *sink) bool {
	s.mu.Lock()
	s.detached = true
	started := s.started
	s.mu.Unlock()
	return started
}
