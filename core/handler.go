package core

import (
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/weirproxy/weir/core/admin"
	"github.com/weirproxy/weir/core/admit"
	"github.com/weirproxy/weir/core/breaker"
	"github.com/weirproxy/weir/core/console"
	"github.com/weirproxy/weir/core/hostkey"
	"github.com/weirproxy/weir/core/httpcache"
	"github.com/weirproxy/weir/core/missrate"
	"github.com/weirproxy/weir/core/store"
)

// Handler serves one router's requests through its middleware's engine. Traefik builds a
// new Handler on every configuration change; the engine behind it stays.
type Handler struct {
	e    *engine
	next http.Handler
	// s is the handler's settings, with their defaults. A pointer: under Yaegi each
	// selector through a struct value takes a frame slot of the whole struct (a Settings
	// is over a kilobyte), allocated on every call of every function that reads h.s
	// (docs/yaegi.md).
	s      *Settings
	keyer  httpcache.Keyer
	policy httpcache.Policy
	// buckets are cache.paths and cache.ttls, read on the way to the origin (bucketOf);
	// nil: every path stored, under policy.
	buckets *buckets
	// private is the private cache's stage (private.go), tried where the shared cache
	// missed; nil when private.paths is empty.
	private *privateStage
	// mem is the engine's store when it is process memory.
	mem *store.Memory
	// shared is the engine's store when it is a shared store: the guarded remote store with
	// local memory behind it.
	shared *store.Fallback
	// hot is what the hit path reads directly: mem, or the shared store's local memory
	// (its near cache, and what is kept while the store is lost: store.Fallback).
	hot *store.Memory
	// missRate is the engine's miss-rate detector, told of every lookup that could hit.
	missRate *missrate.Detector
	// missFlags is missRate's count of flagged partitions while missRate.bypass can act
	// (missrate.Flags), which the common miss loads itself rather than calling bypassed.
	missFlags *int32
	// passStatus is the Cache-Status of a request for a key marked hit-for-pass, built once.
	passStatus string
	// passStatusValue is passStatus as a header value, shared by every answer: header
	// values are never changed in place.
	passStatusValue []string
	// queueWait is limiter.maxQueueWait: the Retry-After of an answer shed by the limiter.
	queueWait time.Duration
	// now is s.Now, one selector closer to the hit path.
	now func() time.Time
	// admin serves admin.path; nil when it is off. adminLead is the path's byte after its
	// first slash (0 when off): a request whose RequestURI has neither it nor '%' there is
	// not the admin's, which the hit path learns from one byte (adminFirst).
	admin     *admin.Handler
	adminLead byte
	// hits and passes are the engine's counts of the two answers written outside write: the
	// fresh hit and the pass-through. Pointers to the counters' values, so that the hit path
	// takes one selector to reach it (docs/yaegi.md).
	hits   *int64
	passes *int64
	// fallbackHits counts the hits of copies the shared store's local fallback kept
	// (Entry.Fallback), within hits.
	fallbackHits *int64
	// hosts is the console's hosts table, which the sampled hits and pass-throughs reach in
	// one selector (sampleHit).
	hosts *console.Table
	// notClosed is the engine's count of breakers not closed (breaker.NotClosed), which
	// pass loads itself rather than calling breaker.AllClosed.
	notClosed *int32
	// sampler samples pass-through requests for the breakers; sampleNext is its next, which
	// every pass-through request loads.
	sampler    *passSampler
	sampleNext *int64
	// budgets are the request budgets, checked in front of ServeHTTP (Front); nil when off.
	budgets *budgets
	// pacing is the paced origins, whose requests wait for their turn in the gate: the
	// engine's, which an operator may change at any time. paced is its on, which pass and
	// enter load before anything else.
	pacing *pacing
	paced  *int32
	// admission is admission control, in front of ServeHTTP (Front); nil when off. protect
	// lists the path prefixes it takes past its limit: admission.protect (admin.path is
	// served before admission).
	admission *admit.Controller
	protect   []string
}

// New returns the handler of the middleware name in front of next, finding the engine that
// earlier configurations of name built, or building it.
func New(name string, s Settings, next http.Handler) (*Handler, error) {
	s, err := s.withSecrets()
	if err != nil {
		return nil, err
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	s = s.withDefaults()
	e, err := engineFor(name, s)
	if err != nil {
		return nil, err
	}
	h := &Handler{
		e:     e,
		next:  next,
		s:     &s,
		keyer: httpcache.NewKeyer(s.QueryDrop),
		policy: httpcache.Policy{DefaultTTL: s.DefaultTTL, MaxEntrySize: s.MaxEntrySize,
			StaleIfError: s.Stale.IfError, StaleWhileRevalidate: s.Stale.WhileRevalidate},
		mem:    e.mem,
		shared: fallbackOf(e.store),
		hot:    e.hot,

		missRate:  e.missRate,
		missFlags: missrate.Flags(e.missRate),

		passStatus:      statusFwd + fwdURIMiss + paramDetail + "uncacheable",
		passStatusValue: []string{statusFwd + fwdURIMiss + paramDetail + "uncacheable"},
		queueWait:       queueWait(s.Limiter.MaxQueueWait),
		now:             s.Now,
		hits:            &e.metrics.outcomes[outcomeHit].N,
		fallbackHits:    &e.metrics.fallbackHits.N,
		passes:          &e.metrics.outcomes[outcomePass].N,
		hosts:           e.metrics.console.hosts,
		notClosed:       breaker.NotClosed(e.breakers),
		sampler:         e.passSample,
		sampleNext:      &e.passSample.next,
		budgets:         e.budgets,
		pacing:          e.pacing,
		paced:           &e.pacing.on,
		admission:       e.admission,
	}
	h.buckets = newBuckets(s, h.policy)
	h.private = newPrivateStage(e, s, h.policy)
	if h.admission != nil {
		h.protect = append([]string(nil), s.Admission.Protect...)
	}
	if s.AdminPath != "" {
		h.admin = newAdmin(e, s)
		h.adminLead = s.AdminPath[1]
	}
	// Warming goes through the last handler built: the latest settings, and a router's
	// service as next.
	e.warm.use(h)
	if e.warmOn != "" {
		e.warm.start(e.warmOn)
	}
	return h, nil
}

// ServeHTTP answers from storage when it can and goes to the origin when it must.
//
// The fresh hit is written out in this one function, for the fewest interpreted steps and,
// above all, the fewest frame slots: on every call Yaegi allocates one slot for each local
// and each intermediate value of the whole function, taken branch or not (docs/yaegi.md),
// so every expression here costs every request, and whatever only the other paths need
// lives in the functions they call (ARCHITECTURE.md, "The hot path").
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Tagged switches rather than && and ||: a case compared with the tag takes no slot, and
	// a literal none where a package constant (http.MethodGet) takes one.
	m := r.Method
	switch m {
	case "GET", "HEAD":
	default:
		serveOther(h, w, r)
		return
	}
	// The key is looked up as the client sent it: scheme, host and RequestURI (origin form),
	// query and all. Stored keys are in normal form (httpcache.Keyer.Key), and normalising is
	// idempotent, so a request whose scheme, host and URI spell a stored key has that key
	// for its own; one whose query is not in normal form (`?b=2&a=1`, a dropped parameter,
	// an empty one) finds nothing under it and takes serve, which normalises. A header
	// field present is a non-nil slice.
	ru := r.RequestURI
	rh := r.Header
	switch ru {
	case "":
		serve(h, w, r)
		return
	}
	if ru[0] != '/' || rh["Upgrade"] != nil {
		serve(h, w, r)
		return
	}
	// The admin before any lookup: whatever is stored under admin.path, by whoever, is never
	// read (adminFirst). One byte compared for the requests of the site.
	if len(ru) > 1 {
		switch ru[1] {
		case h.adminLead, '%':
			if adminRequest(h, w, r) {
				return
			}
		}
	}
	scheme := "http://"
	if r.TLS != nil {
		scheme = "https://"
	}
	key := scheme + r.Host + ru
	// Not `switch h.hot { case nil: }`: Yaegi never matches a nil pointer tag with case nil.
	// Nor `var ent *store.Entry`: the type's name takes a frame slot of a whole Entry.
	if h.hot == nil {
		serve(h, w, r)
		return
	}
	ent := store.Lookup(h.hot, key)
	// One case each: Yaegi evaluates only the first of a case list in a switch without a tag.
	// A key marked hit-for-pass is passed whatever the client's header (as serveFrom does):
	// before the header's five lookups, which a pass-through request would pay for nothing.
	hit := false
	switch {
	case ent == nil:
	case ent.VaryIndex:
	case ent.Pass:
		passMarked(h, w, r, key, ent)
		return
	case rh["Cache-Control"] != nil:
	case rh["Pragma"] != nil:
	case rh["If-None-Match"] != nil:
	case rh["If-Modified-Since"] != nil:
	case rh["Range"] != nil:
	default:
		hit = true
	}
	if !hit {
		if ent == nil {
			serveAt(h, w, r, key)
			return
		}
		serve(h, w, r)
		return
	}
	// Integers and slices prepared when the entry was stored (store.Hot): no time.Time
	// method and no map iteration here.
	hot := &ent.Hot
	now := h.now().UnixNano()
	if now >= hot.FreshNano || hot.Names == nil {
		serve(h, w, r)
		return
	}
	// A hit on a URL with a query is checked and told to the miss-rate detector, in a
	// function of its own (queryHit). Hits on URLs without one are not: a call costs as much
	// as a fifth of the hit path in Yaegi, and a cache-busting flood sends queries.
	switch r.URL.RawQuery {
	case "":
	default:
		if !queryHit(h, r, key, ru) {
			serve(h, w, r)
			return
		}
	}
	// Written out, not metrics.Inc: a call costs the hit path three times as much. The
	// count's every consoleSample-th (61) names the host to the console's hosts table, out of
	// line (sampleHit); a tagged switch, whose literal case takes no slot, costs less than
	// `if n%61 == 0` (docs/benchmarks.md).
	switch atomic.AddInt64(h.hits, 1) % 61 {
	case 0:
		sampleHit(h, r)
	}
	// A copy the shared store's local fallback kept while the store was lost: its hit is
	// the fallback's too (weir_store_fallback_hits_total). One frame slot (the field; a
	// tagged switch on it takes two), and a call only for such a copy.
	if ent.Fallback {
		fallbackHit(h)
	}
	hdr := w.Header()
	for i, name := range hot.Names {
		hdr[name] = hot.Values[i]
	}
	hdr["Age"] = []string{strconv.FormatInt((now-hot.BornNano)/1e9, 10)}
	hdr["Cache-Status"] = []string{statusHit + strconv.FormatInt((hot.FreshNano-now)/1e9, 10)}
	w.WriteHeader(ent.Status)
	switch m {
	case "HEAD":
	default:
		w.Write(ent.Body)
	}
}

// fallbackHit counts a hit answered by a copy the shared store's local fallback kept while
// the store was lost (Entry.Fallback): out of the hit path's frame, which only such a copy
// calls it from.
func fallbackHit(h *Handler) {
	atomic.AddInt64(h.fallbackHits, 1)
}

// queryHit finishes ServeHTTP's hit on a URL with a query string: it tells whether the
// query in ru, the RequestURI that the key was built from, is r's RawQuery (what the origin
// would be sent), and if so counts the hit with the miss-rate detector, whose ratio of
// misses to lookups a partition's hits must dilute (FR-MR-1). Traefik's middlewares keep
// the two in step; one that rewrote RawQuery alone sends the request through serve, which
// keys on RawQuery. A function, not a method, so that a hit without a query pays none of
// its slots.
func queryHit(h *Handler, r *http.Request, key, ru string) bool {
	q := r.URL.RawQuery
	i := strings.IndexByte(ru, '?')
	if i < 0 || ru[i+1:] != q {
		return false
	}
	// key ends with "?" + q: what stands before it is the partition when the host is
	// canonical, as it mostly is; the key holds the host as sent, the partition its key. Whether
	// the host is canonical is tested here (hostkey.Suspect), not by a call to Canonical,
	// whose frame would cost every query hit under Yaegi.
	part := key[:len(key)-len(q)-1]
	if host := r.Host; len(host) > hostkey.MaxLen || host != "" && host[len(host)-1] == '.' ||
		strings.IndexAny(host, hostkey.Suspect) >= 0 {
		part = httpcache.PartitionOf(key)
	}
	missrate.Hit(h.missRate, part)
	return true
}

// serveAt serves a GET or HEAD that found nothing in local memory under key, its key as the
// client sent it. With a shared store, the store is read at once under key (serveShared
// would make it again). With process memory, which is what ServeHTTP just read, serveFrom
// reads it again only when the key's normal form is another: a miss reads memory twice, not
// three times (the leader's last look, joinFlight, is the other).
func serveAt(h *Handler, w http.ResponseWriter, r *http.Request, key string) {
	if h.mem == nil {
		serveSharedAt(h, w, r, key)
		return
	}
	serveFrom(h, w, r, key, nil)
}

// serve is the general path: any key, Vary, the client's validators and cache directives,
// remote stores, misses.
func serve(h *Handler, w http.ResponseWriter, r *http.Request) {
	if h.mem == nil && h.hot != nil {
		serveShared(h, w, r)
		return
	}
	serveFrom(h, w, r, "", nil)
}
