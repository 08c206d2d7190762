package core

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"text/template"
	"time"

	"github.com/weirproxy/weir/core/flight"
	"github.com/weirproxy/weir/core/httpcache"
	"github.com/weirproxy/weir/core/missrate"
	"github.com/weirproxy/weir/core/neg"
	"github.com/weirproxy/weir/core/store"
	"github.com/weirproxy/weir/core/wait"
)

// miss handles a request that storage could not answer fresh. stale is what storage holds
// for it (stale, or fresh but refused by the client's no-cache), at is its key.
//
// The common miss, a GET with nothing stored and nothing of its client's to weigh (no body,
// no credentials, no directives), goes straight to its flight; every other takes missOther.
// Under Yaegi a call allocates a slot for every value of its function's whole body, taken
// branch or not (docs/yaegi.md), and a flood of distinct queries is all common misses.
func miss(h *Handler, w http.ResponseWriter, r *http.Request, key, at string, stale *store.Entry, varyMiss bool, now time.Time) {
	// One case each: Yaegi v0.16.1 evaluates only the first expression of a tagless
	// switch's case list.
	switch {
	case stale != nil:
	case r.Method != "GET":
	case r.ContentLength != 0:
	case r.Header["Authorization"] != nil:
	case r.Header["Cache-Control"] != nil:
	case varyMiss:
	default:
		if !neg.Empty(h.e.neg) && negativeHit(h, w, r, key, now) {
			return
		}
		// missrate.Flags loaded here: while no path floods, no call (missRate.bypass).
		if atomic.LoadInt32(h.missFlags) != 0 && bypassed(h, w, r, key, now) {
			return
		}
		joinFlight(h, w, r, key, nil, statusFwd+fwdURIMiss, now)
		return
	}
	missOther(h, w, r, key, stale, varyMiss, now)
}

// missOther is miss for all but the common miss: a stale entry to serve or revalidate, a
// variant not stored, a HEAD, a body, credentials or the client's directives.
func missOther(h *Handler, w http.ResponseWriter, r *http.Request, key string, stale *store.Entry, varyMiss bool, now time.Time) {
	fwd := fwdURIMiss
	switch {
	case stale != nil:
		fwd = fwdStale
	case varyMiss:
		fwd = fwdVaryMiss
	}
	if stale == nil && !neg.Empty(h.e.neg) && negativeHit(h, w, r, key, now) {
		return
	}
	switch {
	case r.Method == http.MethodHead && stale == nil:
		// Weir stores GET answers and serves HEAD from them; a HEAD miss is not worth a
		// whole GET from the origin.
		pass(h, w, r, httpcache.Partition(r), []string{statusFwd + fwd})
		return
	case r.ContentLength != 0:
		// One case each: Yaegi v0.16.1 evaluates only the first expression of a
		// tagless switch's case list.
		pass(h, w, r, httpcache.Partition(r), []string{statusBypass})
		return
	}
	if stale != nil && now.Before(stale.StaleWhileRevalidateUntil) && !requestNoCache(r) {
		// RFC 5861 section 3: answer at once, refresh behind the client's back.
		missrate.Hit(h.missRate, httpcache.PartitionOf(key))
		h.refresh(r, key, stale)
		h.write(w, r, &answer{ent: stale, hit: true, detail: staleRevalidating})
		return
	}
	if (stale == nil && len(r.Header["Authorization"]) > 0) || httpcache.RequestNoStore(r) {
		// FR-COA-8: a request with credentials never waits on, nor leads, a shared fetch;
		// nor does one whose answer may not be stored (RFC 9111 section 5.2.1.5), which
		// nobody else could be given.
		if stale == nil && httpcache.RangeAsked(r) {
			// Such an answer is rarely shared (RFC 9111 section 3.5), and a fetch of the
			// whole would cost the origin a second request for the range: the origin
			// answers the Range itself.
			pass(h, w, r, httpcache.Partition(r), []string{statusFwd + fwd})
			return
		}
		h.fetchSolo(w, r, key, stale, statusFwd+fwd)
		return
	}
	joinFlight(h, w, r, key, stale, statusFwd+fwd, now)
}

// joinFlight joins r to the flight for key, leading it or following it; cacheStatus is the
// Cache-Status of a fetched answer (a follower's adds collapsed).
func joinFlight(h *Handler, w http.ResponseWriter, r *http.Request, key string, stale *store.Entry, cacheStatus string, now time.Time) {
	part := httpcache.PartitionOf(key)
	c, leader := flight.Join(h.e.flights, key)
	// The miss-rate detector counts a miss per fetch the cache would make: a follower is
	// answered by another request's fetch, and a key retried while its upstream's breaker is
	// open is one key, not a flood of distinct ones.
	if !leader {
		missrate.Hit(h.missRate, part)
		h.follow(w, r, c, key, stale, cacheStatus+paramCollapsed)
		return
	}
	if !breakerOpen(h, r.Host, r.URL.Path, now) {
		if a := missrate.Miss(h.missRate, part, r.URL.RawQuery, now); a != nil {
			h.reportAnomaly(a)
		}
	}
	if h.s.MissRate.Throttle && throttled(h, w, r, c, key, part, stale, cacheStatus, now) {
		return
	}
	// A flight that ended between this request's lookup and its Join has stored its
	// answer: look once more before fetching again, or a burst on a cold key could reach
	// the origin twice. With process memory, a key under which nothing is held has nothing
	// to find: one read of it, not lookup's three calls (the common leader's case).
	if h.mem != nil && store.Lookup(h.mem, key) == nil {
		lead(h, w, r, c, key, part, stale, cacheStatus, nil)
		return
	}
	if lookedAgain(h, w, r, c, key, stale, now) {
		return
	}
	lead(h, w, r, c, key, part, stale, cacheStatus, nil)
}

// lookedAgain answers r, the leader of the flight c for key, from storage when a fresh entry
// other than stale is stored under key by now, ending the flight with it, and reports
// whether it did.
func lookedAgain(h *Handler, w http.ResponseWriter, r *http.Request, c *flight.Call, key string, stale *store.Entry, now time.Time) bool {
	ent, _, _ := lookup(h, r, key, now)
	if ent == nil || ent.Pass || !now.Before(ent.FreshUntil) || (stale != nil && ent == stale) {
		return false
	}
	res := &fetchResult{status: ent.Status, header: ent.Header, body: ent.Body, entry: ent}
	flight.RunHere(h.e.flights, key, c, func() (interface{}, error) { return res, nil })
	h.write(w, r, &answer{ent: ent, hit: true})
	return true
}

// throttled refuses the fetch of the flight c that r leads, when the miss-rate detector's
// throttle (missRate.throttle) allows its partition part no fetch at now, and reports whether
// it did.
func throttled(h *Handler, w http.ResponseWriter, r *http.Request, c *flight.Call, key, part string, stale *store.Entry, cacheStatus string, now time.Time) bool {
	ok, wait := missrate.AllowFetch(h.missRate, part, now)
	if ok {
		return false
	}
	// The flight must end: its followers wait on it.
	res := &fetchResult{refused: refusal{why: reasonMissRate, retryAfter: wait}}
	flight.RunHere(h.e.flights, key, c, func() (interface{}, error) { return res, nil })
	deliver(h, w, r, res, stale, cacheStatus, false)
	return true
}

// fetchSolo serves a request with credentials that found nothing stored, or one whose
// answer may not be stored: it neither waits on nor leads a shared fetch (FR-COA-8); stale
// is what storage holds for it, to revalidate and to serve where stale-if-error allows. A
// panic in its fetch is handled as a flight's (FR-COA-6): a 502 before the answer began, an
// abort after; so is a body that ended short.
func (h *Handler) fetchSolo(w http.ResponseWriter, r *http.Request, key string, stale *store.Entry, cacheStatus string) {
	req, cancel := fetchRequest(h, r, stale)
	f := &soloFetch{sk: &sink{w: w, cacheStatus: cacheStatus}}
	f.run(h, req, cancel, key, stale)
	started := detach(f.sk)
	if f.panicked != nil {
		h.e.fetchPanicked(key, f.panicked)
		if started {
			abortAnswer()
		}
		h.failed(w, r, stale, cacheStatus, "origin-panic")
		return
	}
	if !started {
		deliver(h, w, r, f.res, stale, cacheStatus, false)
		return
	}
	if f.res.truncated {
		abortAnswer()
	}
}

// soloFetch is the fetch of a request with credentials, made on the request's own goroutine.
type soloFetch struct {
	sk  *sink
	res *fetchResult
	// panicked is what the fetch panicked with (such as the proxy's abort when the origin's
	// body breaks off); nil when it returned.
	panicked interface{}
}

func (f *soloFetch) run(h *Handler, req *http.Request, cancel context.CancelFunc, key string, stale *store.Entry) {
	defer f.recovered()
	f.res = fetch(h, req, cancel, key, httpcache.PartitionOf(key), stale, f.sk)
}

// recovered keeps a panic of the fetch for fetchSolo to answer, as flight.Group does for a
// flight's: re-raised, it would reach Traefik as a 500 or a crash.
func (f *soloFetch) recovered() {
	if p := recover(); p != nil {
		f.panicked = p
	}
}

// lead starts the flight's fetch on a goroutine of its own and waits for it with the
// client's context: a leader that hangs up does not cancel the fetch (FR-COA-2). part is
// key's partition (httpcache.PartitionOf). With private set, the fetch is the private
// cache's (privateFetch), key a private key, and part unused.
func lead(h *Handler, w http.ResponseWriter, r *http.Request, c *flight.Call, key, part string, stale *store.Entry, cacheStatus string, private *privateStage) {
	req, cancel := fetchRequest(h, r, stale)
	sk := &sink{w: w, cacheStatus: cacheStatus, ranged: httpcache.RangeAsked(r)}
	flight.Run(h.e.flights, key, c, func() (interface{}, error) {
		if private != nil {
			return privateFetch(h, private, req, cancel, key, sk), nil
		}
		res := fetch(h, req, cancel, key, part, stale, sk)
		return res, nil
	})
	if waitFlight(c, r, nil) == clientGone {
		detach(sk)
		return
	}
	if detach(sk) {
		streamedEnd(h, r, c)
		return
	}
	res, err := flightResult(c)
	if err != nil {
		h.flightFailed(w, r, key, stale, cacheStatus, err)
		return
	}
	deliver(h, w, r, res, stale, cacheStatus, false)
}

// streamedEnd ends the answer streamed to the leader of c as it came (sink). A fetch that
// broke off (a panic, such as the proxy's abort when the origin's body is cut) or whose body
// ended short leaves it incomplete: it must reach the client as broken, not end as if whole
// (RFC 9112 section 8). Out of lead's body: few answers are streamed, and under Yaegi every
// value of a function's body takes a slot on each of its calls (docs/yaegi.md).
func streamedEnd(h *Handler, r *http.Request, c *flight.Call) {
	res, err := flightResult(c)
	if err != nil {
		abortAnswer()
	}
	if res.truncated {
		abortAnswer()
	}
	countAnswer(h, r, outcomeMiss)
}

// abortAnswer ends the client's answer as broken: net/http closes the connection without
// ending the message (no last chunk; a body short of its Content-Length), so the client sees
// an incomplete message, as Traefik's own proxy makes it see when the origin's body breaks
// off (http.ErrAbortHandler, which net/http and Traefik's recovery end silently). It never
// returns. The panic is raised by compiled code (template.Must panics with the error it is
// given): Yaegi v0.16.1 hands a panic raised in interpreted code on as a reflect.Value,
// which net/http and Traefik log as a handler crash, with its stack (docs/yaegi.md).
func abortAnswer() {
	template.Must(nil, http.ErrAbortHandler)
}

// flightResult reads a finished flight's result. A flight that ended without one, which
// Weir's fetch never does, is errLostResult: inside Traefik under load, about once in ten
// thousand fetches, a waiter's select statement once received another's flight (Yaegi
// shares a select's cases between goroutines, docs/yaegi.md; waitFlight no longer selects).
func flightResult(c *flight.Call) (*fetchResult, error) {
	v, err := flight.Result(c)
	if err != nil {
		return nil, err
	}
	res, ok := v.(*fetchResult)
	if !ok || res == nil || res.status == 0 && res.refused.why == nil {
		return nil, errLostResult
	}
	return res, nil
}

// flightFailed answers a waiter whose flight gave no usable result: a panic in the fetch
// is a 502 (or stale); a lost result is looked up once more (the fetch has most likely
// stored its answer) and otherwise fetched by the waiter alone.
func (h *Handler) flightFailed(w http.ResponseWriter, r *http.Request, key string, stale *store.Entry, cacheStatus string, err error) {
	if err == errLostResult {
		h.s.Log(fmt.Sprintf("middleware %s: a flight for %s ended without a result; looking up again", h.e.name, key))
		h.retry(w, r, key)
		return
	}
	h.failed(w, r, stale, cacheStatus, "origin-panic")
}

// What waitFlight saw: the index of its channel in wait.Any's arguments.
const (
	flightDone = iota
	clientGone
	waitTimedOut
)

// waitFlight waits for c to finish, r's client to leave, or timeout (nil: no bound). Through
// wait.Any, not a select statement: Yaegi v0.16.1 shares a select's cases between every
// goroutine running it, so a follower could receive another follower's timer, and then wait
// out its leader's whole fetch, its coalesce.followerMaxWait ignored (docs/yaegi.md).
func waitFlight(c *flight.Call, r *http.Request, timeout <-chan time.Time) int {
	return wait.Any(flight.Done(c), r.Context().Done(), timeout)
}

// follow waits for another request's fetch, at most coalesce.followerMaxWait (FR-COA-4).
func (h *Handler) follow(w http.ResponseWriter, r *http.Request, c *flight.Call, key string, stale *store.Entry, cacheStatus string) {
	timer := time.NewTimer(h.s.FollowerMaxWait)
	outcome := waitFlight(c, r, timer.C)
	timer.Stop()
	if outcome == clientGone {
		return
	}
	if outcome == waitTimedOut {
		now := h.s.Now()
		if servableStale(stale, now) {
			count(h.e.metrics.coalesceTimeouts, fallbackStale)
			h.write(w, r, &answer{ent: stale, hit: true, detail: staleCoalesceTimeout})
			return
		}
		count(h.e.metrics.coalesceTimeouts, fallbackPass)
		pass(h, w, r, httpcache.Partition(r), []string{statusFwd + fwdURIMiss + paramDetail + "coalesce-timeout"})
		return
	}
	res, err := flightResult(c)
	if err != nil {
		h.flightFailed(w, r, key, stale, cacheStatus, err)
		return
	}
	atomic.AddInt64(&h.e.metrics.coalesced.N, 1)
	if res.entry != nil && res.varKey != "" && httpcache.VariantKey(key, res.entry.Vary, r) != res.varKey {
		// The leader's answer is another variant: look up once more, then fetch alone.
		h.retry(w, r, key)
		return
	}
	deliver(h, w, r, res, stale, cacheStatus, true)
}

// deliver writes a flight's result to one waiter. The two answers of a flood, a refusal and
// an entry fetched, are written here, every other by deliverOther: under Yaegi a call
// allocates a slot for every value of its function's whole body (docs/yaegi.md). A result
// carries at most one of a refusal, an entry, a truncated body and an origin error.
func deliver(h *Handler, w http.ResponseWriter, r *http.Request, res *fetchResult, stale *store.Entry, cacheStatus string, follower bool) {
	if res.refused.why != nil {
		refuse(h, w, r, stale, cacheStatus, res.refused)
		return
	}
	if res.entry == nil || res.truncated || res.originError {
		deliverOther(h, w, r, res, stale, cacheStatus, follower)
		return
	}
	if res.stored && !follower {
		cacheStatus += paramStored
	}
	// The common answer of a miss: stored (so prepared, Entry.Hot), for a client without
	// validators or a Range. One case each: Yaegi v0.16.1 evaluates only the first
	// expression of a tagless switch's case list.
	rh := r.Header
	switch {
	case !res.stored:
	case res.revalidated:
	case rh["If-None-Match"] != nil:
	case rh["If-Modified-Since"] != nil:
	case rh["Range"] != nil:
	default:
		writeFetched(h, w, r, res.entry, cacheStatus)
		return
	}
	if res.revalidated {
		cacheStatus += "; fwd-status=304"
	}
	a := &answer{ent: res.entry, cache: cacheStatus}
	if res.unstoredPath {
		a.detail = reasonUnstoredPath
	}
	// writeEntry, not write, which would only hand the answer on: under Yaegi the
	// method's call costs a frame and a reflective wrapper on every miss.
	writeEntry(h, w, r, a)
}

// deliverOther is deliver for every result but a refusal and an entry.
func deliverOther(h *Handler, w http.ResponseWriter, r *http.Request, res *fetchResult, stale *store.Entry, cacheStatus string, follower bool) {
	switch {
	case res.truncated:
		// RFC 9112 section 8: a body that ended short is no answer; stale if allowed, else
		// 502, for every waiter.
		h.failed(w, r, stale, cacheStatus, "origin-truncated")
	case res.originError:
		// FR-COA-5: each waiter serves stale from its own lookup if stale-if-error allows it,
		// otherwise the error; nobody retries.
		if stale != nil && h.s.Now().Before(stale.StaleIfErrorUntil) {
			h.write(w, r, &answer{ent: stale, hit: true, detail: staleOriginError})
			return
		}
		h.write(w, r, &answer{status: res.status, header: res.header, body: res.body, shared: follower, cache: cacheStatus, detail: "origin-error"})
	case res.declined && !follower:
		// The leader asked for a range of an answer Weir could not hold: it asks the
		// origin for its range itself rather than wait for the whole answer.
		pass(h, w, r, httpcache.Partition(r), []string{withDetail(cacheStatus, res.reason)})
	case !follower && !res.streamed:
		h.write(w, r, &answer{status: res.status, header: res.header, body: res.body, cache: cacheStatus, detail: res.reason})
	default:
		h.retry(w, r, "")
	}
}

// retry serves a follower whose leader's answer could not be shared: one more lookup, then
// a fetch of its own.
func (h *Handler) retry(w http.ResponseWriter, r *http.Request, key string) {
	if key == "" {
		key = httpcache.Key(&h.keyer, r)
	}
	now := h.s.Now()
	if ent, _, _ := lookup(h, r, key, now); ent != nil && now.Before(ent.FreshUntil) {
		h.write(w, r, &answer{ent: ent, hit: true})
		return
	}
	pass(h, w, r, httpcache.Partition(r), h.passStatusValue)
}

// refresh revalidates stale in the background through the flight table, unless a fetch
// for key is already under way.
func (h *Handler) refresh(r *http.Request, key string, stale *store.Entry) {
	c, ok := flight.TryLead(h.e.flights, key)
	if !ok {
		return
	}
	req, cancel := fetchRequest(h, r, stale)
	flight.Run(h.e.flights, key, c, func() (interface{}, error) {
		res := fetch(h, req, cancel, key, httpcache.PartitionOf(key), stale, nil)
		return res, nil
	})
}

// failed answers a waiter whose fetch panicked or whose answer broke off: stale if allowed,
// else 502 with detail, which says which.
func (h *Handler) failed(w http.ResponseWriter, r *http.Request, stale *store.Entry, cacheStatus, detail string) {
	if stale != nil && h.s.Now().Before(stale.StaleIfErrorUntil) {
		h.write(w, r, &answer{ent: stale, hit: true, detail: staleOriginError})
		return
	}
	h.write(w, r, &answer{status: http.StatusBadGateway, text: http.StatusText(http.StatusBadGateway), cache: cacheStatus, detail: detail})
}
