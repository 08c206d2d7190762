package core

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/weirproxy/weir/core/breaker"
	"github.com/weirproxy/weir/core/missrate"
	"github.com/weirproxy/weir/core/neg"
	"github.com/weirproxy/weir/core/store"
)

// admit asks the breaker of r's upstream whether a fetch may reach the origin (FR-CB-5).
// The returned breaker and permit go back with the fetch's outcome to record or release.
func (h *Handler) admit(r *http.Request, now time.Time) (*breaker.Breaker, breaker.Permit) {
	b := h.e.breaker
	if b == nil {
		b = h.e.breakers.Get(breaker.ScopeKey(h.s.Breaker.Scope, r.Host), now)
	}
	if h.mem == nil {
		h.observeShared(b.Key(), now)
	}
	return b, b.Allow(now)
}

// breakerOpen tells whether r's upstream's breaker holds fetches back now: open, or half
// open with its probe out.
func (h *Handler) breakerOpen(r *http.Request, now time.Time) bool {
	// Every breaker closed, the common case: no lookup of r's, which with breakers per host
	// (the default) takes the group's lock and interpreted calls on every leader's miss.
	if breaker.AllClosed(h.e.breakers) {
		return false
	}
	b := h.e.breaker
	if b == nil {
		b = h.e.breakers.Get(breaker.ScopeKey(h.s.Breaker.Scope, r.Host), now)
	}
	return b.State(now) != breaker.StateClosed
}

// outcome records a finished fetch with the breaker: a 502, 503 or 504 (Traefik's answers
// for connection errors and timeouts) is a failure, a 500 only with breaker.countStatus500,
// anything else the origin answering; a client that hung up is neither (FR-CB-1, FR-CB-2).
func (h *Handler) outcome(b *breaker.Breaker, p breaker.Permit, ctx context.Context, status int) {
	now := h.s.Now()
	if ctx.Err() == context.Canceled {
		b.Release(p, now)
		return
	}
	failed := status == 502 || status == 503 || status == 504 || (status == 500 && h.s.BreakerCountStatus500)
	b.Record(p, failed, now)
}

// refuse answers a request whose upstream's breaker is open: stale where allowed, otherwise
// a fast 503 with Retry-After set to the time left (FR-CB-5).
func (h *Handler) refuse(w http.ResponseWriter, r *http.Request, stale *store.Entry, cacheStatus string, retryAfter time.Duration) {
	h.heldBack(w, r, stale, cacheStatus, "circuit-open", retryAfter)
}

// throttle answers a miss on a partition the miss-rate detector holds back: stale where
// allowed, otherwise 503 with Retry-After set to the rest of the window.
func (h *Handler) throttle(w http.ResponseWriter, r *http.Request, stale *store.Entry, cacheStatus string, wait time.Duration) {
	h.heldBack(w, r, stale, cacheStatus, "miss-rate", wait)
}

// heldBack answers a request that a protection keeps from the origin for a while: the stale
// answer while stale-if-error or stale-while-revalidate allow it, otherwise 503.
func (h *Handler) heldBack(w http.ResponseWriter, r *http.Request, stale *store.Entry, cacheStatus, detail string, retryAfter time.Duration) {
	now := h.s.Now()
	if servableStale(stale, now) {
		h.serveEntry(w, r, stale, now, staleStatus(stale, now, detail))
		return
	}
	unavailable(w, cacheStatus, detail, []string{strconv.FormatInt(ceilSeconds(retryAfter), 10)})
}

// servableStale tells whether a stale entry may still be served in place of the origin's
// answer (RFC 5861 sections 3 and 4).
func servableStale(stale *store.Entry, now time.Time) bool {
	return stale != nil && (now.Before(stale.StaleIfErrorUntil) || now.Before(stale.StaleWhileRevalidateUntil))
}

// unavailable writes the 503 of a request Weir does not send to the origin, with the reason
// in Cache-Status and when to come back in Retry-After.
func unavailable(w http.ResponseWriter, cacheStatus, detail string, retryAfter []string) {
	hdr := w.Header()
	hdr["Retry-After"] = retryAfter
	hdr["Cache-Status"] = []string{withDetail(cacheStatus, detail)}
	http.Error(w, "origin unavailable, retry later", http.StatusServiceUnavailable)
}

// reportAnomaly logs a miss_rate_anomaly event once per anomaly (FR-MR-2).
func (h *Handler) reportAnomaly(a *missrate.Anomaly) {
	h.s.Log(fmt.Sprintf("warning: miss_rate_anomaly middleware=%s partition=%s requests=%d misses=%d window=%s varying=%s throttled=%t",
		h.e.name, a.Partition, a.Requests, a.Misses, a.Window, strings.Join(a.Varying, ","), a.Throttled))
}

// serveNegative answers from a negative entry: the remembered status, no body, no origin
// contact (FR-NEG-1, FR-NEG-2), and Retry-After, which every 503 (and 502, 504) Weir makes
// carries: the time left until the later of the entry's end and the end of the origin's own
// Retry-After, so a client that obeys it neither comes back to the same negative answer nor
// before the origin asked.
func (h *Handler) serveNegative(w http.ResponseWriter, ne neg.Entry, now time.Time) {
	hdr := w.Header()
	left := ne.Until.Sub(now)
	if origin := ne.At.Add(ne.RetryAfter).Sub(now); origin > left {
		left = origin
	}
	hdr["Retry-After"] = []string{strconv.FormatInt(ceilSeconds(left), 10)}
	hdr["Content-Length"] = []string{"0"}
	hdr["Cache-Status"] = []string{statusHit + strconv.FormatInt(ceilSeconds(ne.Until.Sub(now)), 10) + paramDetail + "negative"}
	w.WriteHeader(ne.Status)
}

// rememberFailure records a negative entry for key after a fetch failed on origin health with
// nothing stored; neg refuses 500s, 4xx and requests with credentials (FR-NEG-4).
func (h *Handler) rememberFailure(key string, req *http.Request, status int, header http.Header, now time.Time) {
	var retryAfter time.Duration
	if v, ok := parseDeltaSeconds(header.Get("Retry-After")); ok {
		retryAfter = time.Duration(v) * time.Second
	}
	h.e.neg.Record(key, neg.Failure{Status: status, RetryAfter: retryAfter, Credentialed: hasCredentials(req)}, now)
}

// hasCredentials tells whether a request carries what identifies a client.
func hasCredentials(r *http.Request) bool {
	return len(r.Header["Authorization"]) > 0 || len(r.Header["Cookie"]) > 0
}

func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 1
	}
	return int64((d + time.Second - 1) / time.Second)
}
