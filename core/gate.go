package core

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/weirproxy/weir/core/breaker"
	"github.com/weirproxy/weir/core/limit"
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
	// record says that leave records the status with the breaker; left that leave ran.
	record bool
	left   bool
	// paced is how long the trip waited for its host's pace: its wait for a slot is bounded
	// by what is left of limiter.maxQueueWait.
	paced time.Duration
}

// enter asks the gate to let a request for host and path, in partition part, through to the
// origin (host and part in canonical form, hostkey.Canonical and httpcache.Partition, so
// that every spelling of a host takes the same breaker, pace and slots):
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
	if way&wayBackground == 0 {
		// The common case, written out: a foreground slot free at once. Take's one call, where
		// takeSlot's way to the same free slot is four (docs/yaegi.md); what it refuses, such
		// as a slot free while others queue, WaitAfter still decides.
		if t.slot = limit.Take(h.e.limiter, part, host, upload); t.slot != nil {
			return t, nil
		}
	}
	if f := takeSlot(h, t, ctx, part, host, upload, way); f != nil {
		return nil, f
	}
	return t, nil
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
	f := limiterRefusal(h, err)
	return &f
}

// leave ends t's passage: the slot goes back, and when t records, the answer goes to the
// breaker: its status, how long the trip took and its header (for Retry-After); a status of
// 0 (the trip panicked, or ended without an answer) gives the permit back unrecorded. Only
// the first leave counts, so a caller defers leave(..., 0) against a panic in the next
// handler and leaves with the status once it has it: the deferred one then returns at once,
// without the slot's second Return, its calls and its lock. Its body is small, and the
// breaker's part a function of its own: a pass-through request leaves on every answer, and
// in Yaegi a call pays for every value of its callee's whole body (docs/yaegi.md).
func leave(h *Handler, t *ticket, status int, took time.Duration, header http.Header) {
	if t.left {
		return
	}
	t.left = true
	limit.Return(t.slot)
	if t.record {
		recordOutcome(h, t, status, took, header)
	}
}

// serveOrigin runs the origin's answer into rec. A fetch that gives up on an answer
// (modeDecline, modeDiscard) fails the writes, and Traefik's proxy, net/http/httputil's
// ReverseProxy, then ends its copy with a panic of http.ErrAbortHandler: the expected end of
// such a fetch, recovered here so that the fetch goes on to mark the key and answer its
// leader. Whatever the panic, once the fetch has failed the writes on purpose: under Yaegi
// v0.16.1 a panic raised in interpreted code is recovered as a reflect.Value, which never
// equals http.ErrAbortHandler (docs/yaegi.md). Any panic before that goes on to the flight's
// recover (FR-COA-6).
func serveOrigin(next http.Handler, rec *recorder, req *http.Request) {
	defer func() {
		if rec.mode == modeDecline || rec.mode == modeDiscard {
			_ = recover()
		}
	}()
	next.ServeHTTP(rec, req)
}
