package core

import (
	"net/http"
	"sync/atomic"
	"time"

	"github.com/weirproxy/weir/core/store"
)

// Refusals. A protection that keeps a request from the origin says why with a reason,
// registered once in its own file (protect_<name>.go); metrics (weir_shed_total), the shed
// event line, the admin page and the refusal writer (refused) read the one list, and
// docs/operations.md's "Refusals" has a row for each (a test holds them to it).

// reason is why a protection kept a request from the origin.
type reason struct {
	// name is the Cache-Status detail, weir_shed_total's reason label, and the name the
	// shed event line and the admin page count it under.
	name string
	// status is the answer when no stored answer may stand in: 503, or 429 for a client
	// over its budget.
	status int
	// text is that answer's body, a line of plain text.
	text string
	// stale says which stale entry may answer in its place (staleNever, staleIfError,
	// staleAny).
	stale int
	// index is the reason's place in reasons: its counter in engineMetrics.shed.
	index int
}

// Which stale entry may answer a refused request in its place (RFC 5861).
const (
	// staleNever: none; the refusal is made before any lookup.
	staleNever = 0
	// staleIfError: an entry within its stale-if-error window (the origin is not known to
	// be down, only busy).
	staleIfError = 1
	// staleAny: an entry within its stale-if-error or stale-while-revalidate window (the
	// origin is held back for a while: serving stale is what the window is for).
	staleAny = 2
)

// The answers' texts.
const (
	textUnavailable = "origin unavailable, retry later"
	textOverloaded  = "overloaded, retry later"
	textTooMany     = "too many requests, retry later"
)

// reasons lists every registered reason, in the order of registration.
var reasons []*reason

// registerReasons adds rs to reasons. Called from the init function of each protection's
// file, not from a package variable's initialiser: under Yaegi v0.16.1 a package variable
// declared in a later file is zeroed after earlier files' initialisers have appended to it
// (docs/yaegi.md).
func registerReasons(rs ...*reason) {
	for _, r := range rs {
		r.index = len(reasons)
		reasons = append(reasons, r)
	}
}

// reasonClientLeft is the refusal of a request whose client left while it waited for its
// turn: nobody is answered and nothing is counted. It is no protection's, and not
// registered.
var reasonClientLeft = &reason{name: "client-gone", index: -1}

// refusal is why a protection kept a request from the origin; the zero value is none.
type refusal struct {
	// why is the protection's reason; nil: not refused.
	why *reason
	// retryAfter is when the protection will let a request through: the breaker's time
	// left, the detector's hold, a paced host's next turn, the queue wait, a bucket's
	// refill. Sent as Retry-After.
	retryAfter time.Duration
	// param follows the reason in Cache-Status's detail: the breaker names its key.
	param string
}

// refused answers a request that a protection kept from the origin: nothing for a client
// that left; a stale entry where the reason allows it; else the reason's status with its
// name in Cache-Status (after cacheStatus) and when to come back in Retry-After. Every
// refusal is counted here, once, by reason.
func (h *Handler) refused(w http.ResponseWriter, r *http.Request, stale *store.Entry, cacheStatus string, f refusal) {
	why := f.why
	if why == reasonClientLeft {
		return
	}
	countShed(h.e, why)
	if why == reasonCircuitOpen {
		atomic.AddInt64(&h.e.metrics.shortCircuited.N, 1)
	}
	if staleAnswers(why, stale, h.s.Now()) {
		h.write(w, r, &answer{ent: stale, hit: true, detail: why.name})
		return
	}
	h.write(w, r, &answer{status: why.status, text: why.text, cache: cacheStatus, detail: why.name + f.param,
		retryAfter: f.retryAfter, refused: true})
}

// staleAnswers tells whether stale may answer a request refused for why at now.
func staleAnswers(why *reason, stale *store.Entry, now time.Time) bool {
	switch {
	case stale == nil:
		return false
	case why.stale == staleAny:
		return servableStale(stale, now)
	case why.stale == staleIfError:
		return now.Before(stale.StaleIfErrorUntil)
	}
	return false
}

// servableStale tells whether a stale entry may still be served in place of the origin's
// answer (RFC 5861 sections 3 and 4).
func servableStale(stale *store.Entry, now time.Time) bool {
	return stale != nil && (now.Before(stale.StaleIfErrorUntil) || now.Before(stale.StaleWhileRevalidateUntil))
}
