package core

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/weirproxy/weir/core/breaker"
	"github.com/weirproxy/weir/core/events"
	"github.com/weirproxy/weir/core/httpcache"
	"github.com/weirproxy/weir/core/limit"
	"github.com/weirproxy/weir/core/store"
)

// The origin gate is the one way from Weir to the origin (ARCHITECTURE.md, "The origin
// gate"): the breaker of the request's upstream first (FR-CB-5), then an origin slot from
// the right pool (FR-LIM-1, FR-LIM-7), then the caller's trip to the next handler, then
// leave, which gives the slot back and tells the breaker the answer's status. Every caller
// goes through it: the cache's fetches, background refreshes and probes, pass-through and
// hit-for-pass, unsafe methods. A refusal is a value, and refused turns it into the answer:
// stale where allowed, otherwise 503 with Retry-After and the reason in Cache-Status.

// How a caller goes through the gate, as bits of enter's way.
const (
	// wayRecord: the caller reports the answer's status to leave, which records it with the
	// breaker (FR-CB-1, FR-CB-2). A caller that does not is recorded only when it carries
	// the half-open breaker's probe, and then must report its status too: a breaker that
	// sees only pass-through traffic would never close otherwise.
	wayRecord = 1 << iota
	// wayBackground: a refresh behind a client's back. It never waits for a slot and never
	// takes the foreground's reserve (FR-LIM-4).
	wayBackground
)

// ticket is a caller's passage through the gate: the breaker permit and the origin slot it
// holds until leave.
type ticket struct {
	b      *breaker.Breaker
	permit breaker.Permit
	slot   *limit.Slot
	// ctx is the trip's context: a trip whose client hung up is not recorded.
	ctx context.Context
	// record says that leave records the status with the breaker; left that it has.
	record bool
	left   bool
	// paced is how long the trip waited for its host's pace: its wait for a slot is bounded
	// by what is left of limiter.maxQueueWait.
	paced time.Duration
}

// refusal is why the gate, or the miss-rate detector before it, kept a request from the
// origin; the zero value is none.
type refusal struct {
	// open is the time left until the upstream's breaker lets a request through (FR-CB-5);
	// key is that breaker's, which the answer names.
	open time.Duration
	key  string
	// throttled is how long the miss-rate detector holds the partition's fetches back.
	throttled time.Duration
	// shed is the limiter's reason (FR-LIM-5).
	shed error
	// paced is how long until a paced origin has a turn within limiter.maxQueueWait.
	paced time.Duration
}

// refusedAny tells a refusal from none.
func refusedAny(f refusal) bool {
	return f.open > 0 || f.throttled > 0 || f.shed != nil || f.paced > 0
}

// enter asks the gate to let a request for host and path, in partition part, through to the
// origin:
// the breaker, then a slot (the upload pool when the request has a body); nil and why not
// when it does not. For a caller that
// records nothing, breakers that are all closed are one atomic load and no permit: only a
// probe's outcome would be recorded, and a closed breaker hands out none.
func enter(h *Handler, ctx context.Context, part, host, path string, upload bool, way int) (*ticket, *refusal) {
	t := &ticket{ctx: ctx, record: way&wayRecord != 0}
	// While every breaker of the engine is closed, one atomic load whatever breaker.scope is
	// (breaker.AllClosed): finding host's breaker costs interpreted calls and a lock.
	if t.record || !breaker.AllClosed(h.e.breakers) {
		if f := askBreaker(h, t, host, path); f != nil {
			return nil, f
		}
	}
	// Pacing after the breaker: an open breaker wins, and a paced wait is no failure.
	if atomic.LoadInt32(h.paced) != 0 {
		if f := paceTurn(h, t, ctx, host, way); f != nil {
			return nil, f
		}
	}
	if way == 0 {
		// The common case, written out: a foreground slot free at once.
		if t.slot = limit.Take(h.e.limiter, part, host, upload); t.slot != nil {
			return t, nil
		}
	}
	if f := takeSlot(h, t, ctx, part, host, upload, way); f != nil {
		return nil, f
	}
	return t, nil
}

// askBreaker is enter's question to host's breaker, in a function of its own so that a
// request meeting closed breakers pays none of its frame slots (docs/yaegi.md).
func askBreaker(h *Handler, t *ticket, host, path string) *refusal {
	now := h.s.Now()
	b := breakerOf(h.e, host, path, now)
	if h.mem == nil {
		h.observeShared(b.Key(), now)
	}
	t.b = b
	t.permit = b.Allow(now)
	if !t.permit.Allowed {
		return &refusal{open: t.permit.RetryAfter, key: b.Key()}
	}
	if t.permit.Probe {
		t.record = true
		e := h.e
		e.events.current().Emit(events.BreakerHalfOpen, events.Str("scope", scopeLabel(b.Key())))
	}
	return nil
}

// takeSlot is enter's way to a slot that is not free at once, or for background work; it
// gives the breaker's probe back when the request is shed.
func takeSlot(h *Handler, t *ticket, ctx context.Context, part, host string, upload bool, way int) *refusal {
	var err error
	if way&wayBackground != 0 {
		t.slot, err = limit.TryTake(h.e.limiter, part, host, upload)
	} else {
		// Not Take first: Wait takes a slot that is free under its lock, and a caller
		// reaching here has most often just been refused one by Take (enter, pass).
		t.slot, err = limit.WaitAfter(ctx, h.e.limiter, part, host, upload, t.paced)
	}
	if err == nil {
		return nil
	}
	if t.permit.Probe {
		t.b.Release(t.permit, h.s.Now())
	}
	return &refusal{shed: err}
}

// leave ends t's passage: the slot goes back, and when t records, the answer goes to the
// breaker: its status, how long the trip took and its header (for Retry-After); a status of
// 0 (the trip panicked, or ended without an answer) gives the permit back unrecorded. Only the first leave counts, so a caller defers leave(..., 0) against a panic
// in the next handler and leaves with the status once it has it. Its body is small, and the
// breaker's part a function of its own: a pass-through request leaves on every answer, and
// in Yaegi a call pays for every value of its callee's whole body (docs/yaegi.md).
func leave(h *Handler, t *ticket, status int, took time.Duration, header http.Header) {
	limit.Return(t.slot)
	if t.record {
		recordOutcome(h, t, status, took, header)
	}
}

// recordOutcome tells t's breaker how its trip ended, once.
func recordOutcome(h *Handler, t *ticket, status int, took time.Duration, header http.Header) {
	if t.left {
		return
	}
	t.left = true
	now := h.s.Now()
	if status == 0 || t.ctx.Err() == context.Canceled {
		// A client that hung up is neither a success nor a failure of the origin.
		t.b.Release(t.permit, now)
		return
	}
	// A 502, 503 or 504 (Traefik's answers for connection errors and timeouts) is a failure,
	// a 429 (the origin refusing us) unless breaker.countStatus429 is off, a 500 only with
	// breaker.countStatus500, anything else the origin answering (FR-CB-1, FR-CB-2).
	failed := status == 502 || status == 503 || status == 504 || (status == 500 && h.s.BreakerCountStatus500) ||
		(status == 429 && !h.s.BreakerIgnoreStatus429)
	var wait time.Duration
	if failed && (status == 429 || status == 503) && len(header["Retry-After"]) > 0 {
		// The origin says when to come back: the breaker obeys (RFC 9110 section 10.2.3).
		wait = httpcache.RetryAfter(header["Retry-After"], now)
	}
	if change := t.b.RecordCall(t.permit, status, failed, took, wait, now); change != breaker.Unchanged {
		breakerChanged(h.e, t.b, change, now)
	}
}

// breakerChanged writes the event of a breaker that a result opened or closed: once per
// change, since Record reports a change to one caller only.
func breakerChanged(e *engine, b *breaker.Breaker, change int, now time.Time) {
	st := b.Status(now)
	key := scopeLabel(b.Key())
	switch {
	case change == breaker.Recovered:
		e.events.current().Emit(events.BreakerClosed, events.Str("scope", key))
	case st.TripReason == breaker.ReasonRetryAfter:
		e.events.current().Emit(events.BreakerOpened, events.Str("scope", key), events.Str("reason", st.TripReason),
			events.Int("status", st.LastFailure), events.Dur("retry_after", st.TripRetryAfter), events.Dur("open_for", st.OpenLeft))
	case change == breaker.Tripped && st.TripReason == breaker.ReasonSlowCalls:
		n := st.TripOK + st.TripFailures
		e.events.current().Emit(events.BreakerOpened, events.Str("scope", key), events.Str("reason", st.TripReason),
			events.Float("ratio", float64(st.TripSlow)/float64(n)), events.Int("slow", st.TripSlow), events.Int("requests", n),
			events.Dur("slow_call", st.Params.SlowCall), events.Dur("open_for", st.OpenLeft))
	case change == breaker.Tripped:
		ratio := 0.0
		if n := st.TripOK + st.TripFailures; n > 0 {
			ratio = float64(st.TripFailures) / float64(n)
		}
		e.events.current().Emit(events.BreakerOpened, events.Str("scope", key), events.Str("reason", breaker.ReasonFailureRatio),
			events.Float("ratio", ratio), events.Int("failures", st.TripFailures), events.Int("requests", st.TripOK+st.TripFailures),
			events.Dur("open_for", st.OpenLeft))
	case change == breaker.Reopened:
		e.events.current().Emit(events.BreakerOpened, events.Str("scope", key), events.Str("reason", st.TripReason),
			events.Dur("open_for", st.OpenLeft))
	}
}

// breakerOf is the breaker of host's upstream in e for a request to path: its one breaker
// with scope engine, else the group's for the scope key of host, with the breaker.paths
// prefix path falls under appended (breaker.PathKey). The gate, the miss-rate detector's
// check and the operator's controls all find it here.
func breakerOf(e *engine, host, path string, now time.Time) *breaker.Breaker {
	if b := e.breaker; b != nil {
		return b
	}
	key := breaker.ScopeKey(e.breakerScope, host)
	if e.breakerPaths != nil {
		key = breaker.PathKey(key, e.breakerPaths, path)
	}
	return e.breakers.Get(key, now)
}

// breakerOpen tells whether host's upstream's breaker holds fetches back now: open, or half
// open with its probe out.
func (h *Handler) breakerOpen(host, path string, now time.Time) bool {
	// Every breaker closed, the common case: no lookup of host's, which with breakers per
	// host (the default) takes the group's lock and interpreted calls on every leader's miss.
	if breaker.AllClosed(h.e.breakers) {
		return false
	}
	return breakerOf(h.e, host, path, now).State(now) != breaker.StateClosed
}

// refused answers a request that was kept from the origin. A client that left while queued
// gets nothing. Otherwise the stale answer where allowed: for an open breaker or a throttled
// partition while stale-if-error or stale-while-revalidate allow it, for a shed request while
// stale-if-error does (RFC 5861); else 503 with the reason in Cache-Status and when to come
// back in Retry-After: the breaker's time left, the detector's window, or the queue wait.
func (h *Handler) refused(w http.ResponseWriter, r *http.Request, stale *store.Entry, cacheStatus string, f refusal) {
	now := h.s.Now()
	switch {
	case f.open > 0:
		atomic.AddInt64(&h.e.metrics.shortCircuited.N, 1)
		countShed(h.e, "circuit-open")
		if servableStale(stale, now) {
			h.write(w, r, &answer{ent: stale, hit: true, detail: "circuit-open"})
			return
		}
		// The 503 names the breaker, so that an operator sees which scope or path refused.
		h.write(w, r, unavailable(cacheStatus, "circuit-open; key="+sfKey(scopeLabel(f.key)), f.open))
	case f.throttled > 0:
		countShed(h.e, "miss-rate")
		h.heldBack(w, r, stale, cacheStatus, "miss-rate", f.throttled)
	case f.paced > 0:
		countShed(h.e, detailPaced)
		h.heldBack(w, r, stale, cacheStatus, detailPaced, f.paced)
	case errors.Is(f.shed, limit.ErrContextDone):
	case stale != nil && now.Before(stale.StaleIfErrorUntil):
		countShed(h.e, limit.Detail(f.shed))
		h.write(w, r, &answer{ent: stale, hit: true, detail: limit.Detail(f.shed)})
	default:
		countShed(h.e, limit.Detail(f.shed))
		h.write(w, r, unavailable(cacheStatus, limit.Detail(f.shed), h.queueWait))
	}
}

// heldBack answers a request that a protection keeps from the origin for a while: the stale
// answer while stale-if-error or stale-while-revalidate allow it, otherwise 503.
func (h *Handler) heldBack(w http.ResponseWriter, r *http.Request, stale *store.Entry, cacheStatus, detail string, retryAfter time.Duration) {
	if servableStale(stale, h.s.Now()) {
		h.write(w, r, &answer{ent: stale, hit: true, detail: detail})
		return
	}
	h.write(w, r, unavailable(cacheStatus, detail, retryAfter))
}

// servableStale tells whether a stale entry may still be served in place of the origin's
// answer (RFC 5861 sections 3 and 4).
func servableStale(stale *store.Entry, now time.Time) bool {
	return stale != nil && (now.Before(stale.StaleIfErrorUntil) || now.Before(stale.StaleWhileRevalidateUntil))
}

// unavailable is the 503 of a request Weir does not send to the origin, with the reason in
// Cache-Status and when to come back in Retry-After.
func unavailable(cacheStatus, detail string, retryAfter time.Duration) *answer {
	return &answer{status: http.StatusServiceUnavailable, text: "origin unavailable, retry later",
		cache: cacheStatus, detail: detail, retryAfter: retryAfter}
}

// queueWait is limiter.maxQueueWait as shed answers say it in Retry-After: its default when
// unset.
func queueWait(d time.Duration) time.Duration {
	if d <= 0 {
		return limit.DefaultMaxQueueWait
	}
	return d
}

// hasBody tells a request with a body by its length: -1 is a chunked one, and a server
// gives a request without one a length of zero. Such a request draws from the upload pool
// (FR-LIM-7).
func hasBody(r *http.Request) bool {
	return r.ContentLength != 0
}
