package core

import (
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/weirproxy/weir/core/limit"
	"github.com/weirproxy/weir/core/store"
)

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
