package core

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/weirproxy/weir/core/breaker"
	"github.com/weirproxy/weir/core/events"
	"github.com/weirproxy/weir/core/httpcache"
)

// The circuit breaker (breaker.*, FR-CB-1..5): one per upstream (breaker.scope), with
// breaker.paths giving paths breakers of their own. The gate asks it before an origin
// request (askBreaker) and tells it how the request went (recordOutcome); the mechanism is
// core/breaker.

// reasonCircuitOpen refuses a request while its upstream's breaker is open, or half open
// with its probe out (FR-CB-5). A stale entry within either window answers instead.
var reasonCircuitOpen = &reason{name: "circuit-open", status: http.StatusServiceUnavailable, text: textUnavailable, stale: staleAny}

func init() { registerReasons(reasonCircuitOpen) }

// askBreaker is enter's question to host's breaker, in a function of its own so that a
// request meeting closed breakers pays none of its frame slots (docs/yaegi.md). The breaker
// is found as breakerOf finds it, written out, and with host taken as the key under the
// host scope: enter's host is canonical already, and hostkey.Canonical of a canonical host
// is the host (breaker.ScopeKey). What a refused request or a probe needs is in functions
// of their own, for the same reason.
func askBreaker(h *Handler, t *ticket, host, path string) *refusal {
	now := h.s.Now()
	e := h.e
	b := e.breaker
	if b == nil {
		key := host
		switch e.breakerScope {
		case "host", "":
		default:
			key = breaker.ScopeKey(e.breakerScope, host)
		}
		if e.breakerPaths != nil {
			key = breaker.PathKey(key, e.breakerPaths, path)
		}
		b = breaker.Of(e.breakers, key, now)
	}
	if h.mem == nil {
		h.observeShared(b.Key(), now)
	}
	t.b = b
	t.permit = breaker.AllowAt(b, now)
	if !t.permit.Allowed {
		return circuitOpen(t)
	}
	if t.permit.Probe {
		probeOut(h, t)
	}
	return nil
}

// circuitOpen is the refusal of a request whose breaker, t's, did not let it through.
func circuitOpen(t *ticket) *refusal {
	// The 503 names the breaker, so that an operator sees which scope or path refused.
	return &refusal{why: reasonCircuitOpen, retryAfter: t.permit.RetryAfter, param: "; key=" + sfKey(scopeLabel(t.b.Key())), scope: t.b.Key()}
}

// probeOut records the outcome of t, which carries its half-open breaker's probe, and tells
// of the probe.
func probeOut(h *Handler, t *ticket) {
	t.record = true
	h.e.events.current().Emit(events.BreakerHalfOpen, events.Str("scope", scopeLabel(t.b.Key())))
}

// recordOutcome tells t's breaker how its trip ended; leave calls it once. Written for the
// common answer, a success in time: what only a status that may be a failure, or a slow call
// under breaker.slowCall, goes on to is recordSuspect's, whose values would otherwise take
// frame slots in every call (docs/yaegi.md); and the fleet's wake-up is one atomic load
// while its loop is awake.
func recordOutcome(h *Handler, t *ticket, status int, took time.Duration, header http.Header) {
	now := h.s.Now()
	if status == 0 || t.ctx.Err() == context.Canceled {
		// A client that hung up is neither a success nor a failure of the origin.
		t.b.Release(t.permit, now)
		return
	}
	// Every status originFailed counts is 429 or above.
	if status >= 429 || h.s.Breaker.SlowCall > 0 {
		recordSuspect(h, t, status, took, header, now)
	} else if change := breaker.RecordAt(t.b, t.permit, status, false, took, 0, now); change != breaker.Unchanged {
		breakerChanged(h.e, t.b, change, now)
	}
	// The fleet's counts hold it from now: a loop asleep shares them (fleet_control.go).
	// wakeFleet written out: it runs on every result.
	if bs := h.e.breakerSync; bs != nil && bs.fleet != nil && atomic.LoadInt32(&bs.fleet.asleep) == 1 {
		bs.fleet.wake()
	}
}

// recordSuspect is recordOutcome for a status of 429 or above, or with breaker.slowCall:
// whether the origin failed, what the pass-through sampler learns of it, and the origin's
// Retry-After, with the result.
func recordSuspect(h *Handler, t *ticket, status int, took time.Duration, header http.Header, now time.Time) {
	failed := originFailed(h, status)
	suspectAfter(h, failed, took, now)
	var wait time.Duration
	if failed && (status == 429 || status == 503) && len(header["Retry-After"]) > 0 {
		// The origin says when to come back: the breaker obeys (RFC 9110 section 10.2.3).
		wait = httpcache.RetryAfter(header["Retry-After"], now)
	}
	if change := breaker.RecordAt(t.b, t.permit, status, failed, took, wait, now); change != breaker.Unchanged {
		breakerChanged(h.e, t.b, change, now)
	}
}

// originFailed tells whether an origin answer of status counts as a failure for the breaker: a
// 502, 503 or 504 (Traefik's answers for connection errors and timeouts), a 429 (the origin
// refusing us) unless breaker.countStatus429 is off, a 500 only with breaker.countStatus500;
// anything else is the origin answering (FR-CB-1, FR-CB-2).
func originFailed(h *Handler, status int) bool {
	return status == 502 || status == 503 || status == 504 || (status == 500 && h.s.BreakerCountStatus500) ||
		(status == 429 && !h.s.BreakerIgnoreStatus429)
}

// Pass-through and hit-for-pass requests feed the breaker too, sampled: seeing a
// pass-through's status takes a writer of Weir's between the proxy and the client, whose every
// call (Header, WriteHeader, Write) costs interpreted calls (docs/yaegi.md), so the most
// frequent answer of all records only some of its requests. While no recorded origin request
// failed, one pass-through request in passSampleEvery is recorded, per middleware; once one
// fails (or, with breaker.slowCall, is slow), every pass-through request is recorded for
// breaker.window
// (suspect), so that a failing origin's breaker opens after breaker.minRequests results,
// as for the cache's own fetches. Detection bound: a host whose pass-through answers all fail
// opens its breaker within passSampleEvery of its first failing request plus the time its
// next breaker.minRequests - 1 requests take (at 20 requests a second with the defaults,
// about one second); a host among busier healthy ones waits for a sample of its own first,
// which its share of the sampled requests gives (passSampleEvery over that share).
const passSampleEvery = 50 * time.Millisecond

// passSampler is a middleware's sampling of pass-through requests for its breakers.
type passSampler struct {
	// next is the UnixNano from which the next pass-through request is recorded; 0 while
	// every request is (suspect). Loaded by every pass-through request.
	next int64
	// suspectUntil is the UnixNano until which every pass-through request is recorded.
	suspectUntil int64
	// window is how long a failure makes every request recorded: breaker.window.
	window time.Duration
}

// sampledPass tells whether the pass-through request arriving at now (UnixNano) is to be
// recorded, claiming the sample when it is.
func sampledPass(s *passSampler, now int64) bool {
	next := atomic.LoadInt64(&s.next)
	if now < next {
		return false
	}
	if now < atomic.LoadInt64(&s.suspectUntil) {
		return true
	}
	return atomic.CompareAndSwapInt64(&s.next, next, now+int64(passSampleEvery))
}

// suspectAfter tells the sampler how a recorded origin request went (a fetch, an unsafe
// method, a sampled pass-through): a failure, or a slow call with breaker.slowCall, makes
// every pass-through request recorded for the window.
func suspectAfter(h *Handler, failed bool, took time.Duration, now time.Time) {
	if !failed && (h.s.Breaker.SlowCall <= 0 || took < h.s.Breaker.SlowCall) {
		return
	}
	s := h.sampler
	atomic.StoreInt64(&s.suspectUntil, now.Add(s.window).UnixNano())
	atomic.StoreInt64(&s.next, 0)
}

// newPassSampler is the sampler of an engine whose breakers have settings bs.
func newPassSampler(bs breaker.Settings) *passSampler {
	w := bs.Window
	if w <= 0 {
		w = breaker.DefaultWindow
	}
	return &passSampler{window: w}
}

// breakerChanged writes the event of a breaker that a result opened or closed: once per
// change, since Record reports a change to one caller only.
func breakerChanged(e *engine, b *breaker.Breaker, change int, now time.Time) {
	st := b.Status(now)
	key := scopeLabel(b.Key())
	switch {
	case change == breaker.Recovered:
		e.events.current().Emit(events.BreakerClosed, events.Str("scope", key))
		e.warm.recovered(b.Key())
	case st.TripReason == breaker.ReasonRetryAfter:
		e.events.current().Emit(events.BreakerOpened, events.Str("scope", key), events.Str("reason", st.TripReason),
			events.Int("status", st.LastFailure), events.Dur("retry_after", st.TripRetryAfter), events.Dur("open_for", st.OpenLeft))
	case change == breaker.Tripped && st.TripReason == breaker.ReasonSlowCalls:
		n := st.TripOK + st.TripFailures
		e.events.current().Emit(events.BreakerOpened, events.Str("scope", key), events.Str("reason", st.TripReason),
			events.Float("ratio", float64(st.TripSlow)/float64(n)), events.Int("slow", st.TripSlow), events.Int("requests", n),
			events.Dur("slow_call", st.Params.SlowCall), events.Dur("open_for", st.OpenLeft))
	case change == breaker.Tripped && st.TripReason == breaker.ReasonMaxFailures:
		// A count, not a share: the window's length says what the count was measured over.
		e.events.current().Emit(events.BreakerOpened, events.Str("scope", key), events.Str("reason", st.TripReason),
			events.Int("failures", st.TripFailures), events.Int("requests", st.TripOK+st.TripFailures),
			events.Dur("window", st.Params.Window), events.Dur("open_for", st.OpenLeft))
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
	return breaker.Of(e.breakers, key, now)
}

// breakerOpen tells whether host's upstream's breaker holds fetches back now: open, or half
// open with its probe out.
func breakerOpen(h *Handler, host, path string, now time.Time) bool {
	// Every breaker closed, the common case: no lookup of host's, which with breakers per
	// host (the default) takes the group's lock and interpreted calls on every leader's miss.
	if breaker.AllClosed(h.e.breakers) {
		return false
	}
	return breakerOf(h.e, host, path, now).State(now) != breaker.StateClosed
}

// applyOverrides gives e's breakers the overrides of breaker.overrides, and removes those an
// earlier configuration of the same group gave and this one does not.
func applyOverrides(e, old *engine, list []breaker.KeyOverride) error {
	keep := make(map[string]bool, len(list))
	for _, ko := range list {
		if err := e.breakers.SetOverride(ko.Key, ko.Override); err != nil {
			return fmt.Errorf("%w: breaker.overrides: %v", ErrSettings, err)
		}
		keep[ko.Key] = true
		e.overridden = append(e.overridden, ko.Key)
	}
	if old.breakers == e.breakers {
		for _, key := range old.overridden {
			if !keep[key] {
				e.breakers.RemoveOverride(key)
			}
		}
	}
	return nil
}
