package core

import (
	"context"
	"math/rand"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/weirproxy/weir/core/admin"
	"github.com/weirproxy/weir/core/admit"
	"github.com/weirproxy/weir/core/breaker"
	"github.com/weirproxy/weir/core/httpcache"
	"github.com/weirproxy/weir/core/limit"
	"github.com/weirproxy/weir/core/metrics"
	"github.com/weirproxy/weir/core/missrate"
	"github.com/weirproxy/weir/core/store"
)

// Cache-Status values (RFC 9211). Weir never writes hit and fwd together; a stale hit is a
// hit with a negative ttl.
const (
	statusHit      = "Weir; hit; ttl="
	statusFwd      = "Weir; fwd="
	statusBypass   = "Weir; fwd=bypass"
	statusMethod   = "Weir; fwd=method"
	fwdURIMiss     = "uri-miss"
	fwdVaryMiss    = "vary-miss"
	fwdStale       = "stale"
	paramStored    = "; stored"
	paramCollapsed = "; collapsed"
	paramDetail    = "; detail="
)

// Handler serves one router's requests through its middleware's engine. Traefik builds a
// new Handler on every configuration change; the engine behind it stays.
type Handler struct {
	e      *engine
	next   http.Handler
	s      Settings
	keyer  httpcache.Keyer
	policy httpcache.Policy
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
	// passStatus is the Cache-Status of a request for a key marked hit-for-pass, built once.
	passStatus string
	// passStatusValue is passStatus as a header value, shared by every answer: header
	// values are never changed in place.
	passStatusValue []string
	// queueWait is limiter.maxQueueWait: the Retry-After of an answer shed by the limiter.
	queueWait time.Duration
	// now is s.Now, one selector closer to the hit path.
	now func() time.Time
	// admin serves admin.path; nil when it is off.
	admin *admin.Handler
	// hits and passes are the engine's counts of the two answers written outside write: the
	// fresh hit and the pass-through. Pointers to the counters' values, so that the hit path
	// takes one selector to reach it (docs/yaegi.md).
	hits   *int64
	passes *int64
	// notClosed is the engine's count of breakers not closed (breaker.NotClosed), which
	// pass loads itself rather than calling breaker.AllClosed.
	notClosed *int32
	// budgets are the request budgets, checked in front of ServeHTTP (Front); nil when off.
	budgets *budgets
	// pacing is the paced origins, whose requests wait for their turn in the gate: the
	// engine's, which an operator may change at any time. paced is its on, which pass and
	// enter load before anything else.
	pacing *pacing
	paced  *int32
	// admission is admission control, in front of ServeHTTP (Front); nil when off. protect
	// lists the path prefixes it takes past its limit: admission.protect and admin.path.
	admission *admit.Controller
	protect   []string
}

// New returns the handler of the middleware name in front of next, finding the engine that
// earlier configurations of name built, or building it.
func New(name string, s Settings, next http.Handler) (*Handler, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	s = s.withDefaults()
	e, err := engineFor(name, s)
	if err != nil {
		return nil, err
	}
	h := &Handler{
		e:      e,
		next:   next,
		s:      s,
		keyer:  httpcache.NewKeyer(s.QueryDrop),
		policy: httpcache.Policy{DefaultTTL: s.DefaultTTL, MaxEntrySize: s.MaxEntrySize},
		mem:    e.mem,
		shared: fallbackOf(e.store),
		hot:    e.hot,

		missRate: e.missRate,

		passStatus:      statusFwd + fwdURIMiss + paramDetail + "uncacheable",
		passStatusValue: []string{statusFwd + fwdURIMiss + paramDetail + "uncacheable"},
		queueWait:       queueWait(s.Limiter.MaxQueueWait),
		now:             s.Now,
		hits:            &e.metrics.outcomes[outcomeHit].N,
		passes:          &e.metrics.outcomes[outcomePass].N,
		notClosed:       breaker.NotClosed(e.breakers),
		budgets:         e.budgets,
		pacing:          e.pacing,
		paced:           &e.pacing.on,
		admission:       e.admission,
	}
	if h.admission != nil {
		h.protect = append([]string(nil), s.Admission.Protect...)
		if s.AdminPath != "" {
			h.protect = append(h.protect, s.AdminPath)
		}
	}
	if s.AdminPath != "" {
		h.admin = newAdmin(e, s)
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
		// Nothing in local memory for a shared store: read it from there at once, under
		// the key just made (serveShared would make it again), without serve's call.
		if ent == nil && h.mem == nil {
			serveSharedAt(h, w, r, key)
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
	// Written out, not metrics.Inc: a call costs the hit path three times as much.
	atomic.AddInt64(h.hits, 1)
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
	// key ends with "?" + q: what stands before it is the partition.
	missrate.Hit(h.missRate, key[:len(key)-len(q)-1])
	return true
}

// passMarked answers a request whose key is marked hit-for-pass (the mark ent): through the
// general path once the mark has expired, else to the origin with the client's own writer.
// A function, not a method: in Yaegi a method call costs four times as much
// (docs/yaegi.md). It reads the clock and the mark's end itself, so that the hit path pays
// no slot for them, and it is pass written out once more, without pass's call: the
// pass-through that a hit-for-pass mark sends is the most frequent of all.
func passMarked(h *Handler, w http.ResponseWriter, r *http.Request, key string, ent *store.Entry) {
	if h.now().UnixNano() >= ent.Hot.KeepNano {
		serve(h, w, r)
		return
	}
	// The partition is the key up to its query: httpcache.PartitionOf written out, since an
	// interpreted call costs more than the scan.
	part := key
	if i := strings.IndexByte(key, '?'); i >= 0 {
		part = key[:i]
	}
	switch atomic.LoadInt32(h.notClosed) + atomic.LoadInt32(h.paced) {
	case 0:
	default:
		passOff(h, w, r, part, h.passStatusValue)
		return
	}
	slot := limit.Take(h.e.limiter, part, r.Host, r.ContentLength != 0)
	if slot == nil {
		passGated(h, w, r, part, h.passStatusValue)
		return
	}
	// Deferred: a panic in the next handler (an aborted proxy copy) must not keep the slot.
	defer limit.Return(slot)
	atomic.AddInt64(h.passes, 1)
	w.Header()["Cache-Status"] = h.passStatusValue
	h.next.ServeHTTP(w, r)
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

// serveShared is serve with a shared store (h.hot its local memory). A GET or HEAD that
// ServeHTTP could not answer from local memory reads its key as the client sent it
// (scheme, host and RequestURI, as ServeHTTP looks it up) from the store at once: when the
// entry is a fresh answer the request may have as it is (no client directive, its query
// the one the origin would be sent), it is written as ServeHTTP writes a hit from local
// memory, without serve's normalised key and general answer writer, which cost a hit from
// the shared store (store.nearCache false, or a key not in the near cache) under Yaegi as
// much again as reading and decoding the entry. Anything else goes on through serve with
// the entry read (serveFrom), which reads the store again only when the normalised key is
// another (a query not in normal form). With the near cache on, an entry local memory
// holds is found there again, without asking the server.
func serveShared(h *Handler, w http.ResponseWriter, r *http.Request) {
	ru := r.RequestURI
	m := r.Method
	if ru == "" || ru[0] != '/' || (m != "GET" && m != "HEAD") || r.Header["Upgrade"] != nil {
		serveFrom(h, w, r, "", nil)
		return
	}
	key := "http://" + r.Host + ru
	if r.TLS != nil {
		key = "https://" + r.Host + ru
	}
	serveSharedAt(h, w, r, key)
}

// serveSharedAt is serveShared for a GET or HEAD whose key as the client sent it is key.
func serveSharedAt(h *Handler, w http.ResponseWriter, r *http.Request, key string) {
	ru := r.RequestURI
	m := r.Method
	now := h.s.Now()
	ent := sharedGet(h, r.Context(), key, now)
	ns := now.UnixNano()
	hit := false
	rh := r.Header
	// One case each: Yaegi evaluates only the first of a case list in a switch without a tag.
	switch {
	case ent == nil:
	case ent.VaryIndex:
	case ent.Pass:
	case ns >= ent.Hot.FreshNano:
	case ent.Hot.Names == nil:
	case rh["Cache-Control"] != nil:
	case rh["Pragma"] != nil:
	case rh["If-None-Match"] != nil:
	case rh["If-Modified-Since"] != nil:
	case rh["Range"] != nil:
	default:
		hit = true
	}
	if hit && r.URL.RawQuery != "" && !queryHit(h, r, key, ru) {
		hit = false
	}
	if !hit {
		if ent != nil && ent.Pass && ns < ent.Hot.KeepNano {
			passMarked(h, w, r, key, ent)
			return
		}
		serveFrom(h, w, r, key, ent)
		return
	}
	// As ServeHTTP writes a hit.
	hot := &ent.Hot
	atomic.AddInt64(h.hits, 1)
	hdr := w.Header()
	for i, name := range hot.Names {
		hdr[name] = hot.Values[i]
	}
	hdr["Age"] = []string{strconv.FormatInt((ns-hot.BornNano)/1e9, 10)}
	hdr["Cache-Status"] = []string{statusHit + strconv.FormatInt((hot.FreshNano-ns)/1e9, 10)}
	w.WriteHeader(ent.Status)
	if m != "HEAD" {
		w.Write(ent.Body)
	}
}

// serveFrom is serve, told that the store holds ent under raw (nil: nothing), read for
// this request: the lookup of the normalised key reads the store again only when it is
// another key. raw "" tells nothing.
func serveFrom(h *Handler, w http.ResponseWriter, r *http.Request, raw string, rawEnt *store.Entry) {
	if adminRequest(h, w, r) {
		return
	}
	if len(r.Header["Upgrade"]) > 0 {
		pass(h, w, r, httpcache.Partition(r), []string{statusBypass + paramDetail + "upgrade"})
		return
	}
	key := h.keyer.Key(r)
	now := h.s.Now()
	var ent *store.Entry
	var lookupKey string
	var varyMiss bool
	if key == raw {
		ent, lookupKey, varyMiss = h.followIndex(r, key, rawEnt, now)
	} else {
		ent, lookupKey, varyMiss = h.lookup(r, key, now)
	}
	if ent != nil && ent.Pass {
		pass(h, w, r, httpcache.Partition(r), h.passStatusValue)
		return
	}
	if ent != nil && now.Before(ent.FreshUntil) && !requestNoCache(r) {
		missrate.Hit(h.missRate, httpcache.PartitionOf(key))
		h.write(w, r, &answer{ent: ent, hit: true})
		return
	}
	h.miss(w, r, key, lookupKey, ent, varyMiss, now)
}

// lookup finds the entry r selects under key, following a variant index. It returns the key
// the entry was found under, or the one it would be stored under, and whether an index
// existed but not the variant.
func (h *Handler) lookup(r *http.Request, key string, now time.Time) (ent *store.Entry, at string, varyMiss bool) {
	ent = h.get(r.Context(), key, now)
	return h.followIndex(r, key, ent, now)
}

// followIndex is lookup, given ent, the entry read under key (nil: none).
func (h *Handler) followIndex(r *http.Request, key string, ent *store.Entry, now time.Time) (*store.Entry, string, bool) {
	if ent == nil || !ent.VaryIndex {
		return ent, key, false
	}
	at := httpcache.VariantKey(httpcache.GenerationKey(key, ent), ent.Vary, r)
	ent = h.get(r.Context(), at, now)
	if ent == nil || ent.VaryIndex {
		return nil, at, true
	}
	return ent, at, false
}

// get reads one key. A store that fails or is slow reads as a miss (FR-STF-1): the miss
// still goes through coalescing and every origin protection.
func (h *Handler) get(ctx context.Context, key string, now time.Time) *store.Entry {
	var ent *store.Entry
	if h.mem != nil {
		ent = store.Lookup(h.mem, key)
	} else if h.shared != nil {
		return sharedGet(h, ctx, key, h.s.Now())
	} else {
		ctx, cancel := context.WithTimeout(ctx, h.s.StoreTimeout)
		began := h.s.Now()
		e, err := h.e.store.Get(ctx, key)
		cancel()
		metrics.ObserveDuration(h.e.metrics.store, h.s.Now().Sub(began))
		if err != nil {
			return nil
		}
		ent = e
	}
	if ent == nil || now.After(ent.KeepUntil) {
		return nil
	}
	return ent
}

// sharedGet is get from a shared store (h.shared), now just read: the call's start for the
// store's latency. No timeout of its own: the store's guard bounds the call by
// timeouts.store. Under Yaegi, dropping the second timeout on the same context, calling
// functions in place of Handler.get and of the Fallback's and the guard's methods through
// interfaces, and reading the clock once less took about 74,000 instructions off a hit read
// from Redis (BenchmarkHitRedis, less what BenchmarkGet of core/redisstore saved).
func sharedGet(h *Handler, ctx context.Context, key string, now time.Time) *store.Entry {
	e, err := store.ReadShared(h.shared, ctx, key)
	metrics.ObserveDuration(h.e.metrics.store, h.s.Now().Sub(now))
	if err != nil || e == nil || now.After(e.KeepUntil) {
		return nil
	}
	return e
}

// put stores ent, answering req, under key, with a variant index in front of it when the
// answer varies. It reports whether the entry was stored.
func (h *Handler) put(key string, req *http.Request, ent *store.Entry) bool {
	ent.Prepare()
	ctx, cancel := context.WithTimeout(context.Background(), h.s.StoreTimeout)
	defer cancel()
	if len(ent.Vary) == 0 {
		return h.e.store.Set(ctx, key, ent) == nil
	}
	// The index's Born names its generation: variants live under keys that carry it, so a
	// purge or invalidation, which deletes the index, also orphans every variant stored
	// before it. A new index takes a random nanosecond offset, so that one made in the same
	// instant as the deleted one is still another generation; a new variant of a live index
	// joins its generation. An index's Born is never used as an age.
	born := ent.Born.Add(time.Duration(rand.Int63n(int64(time.Millisecond))))
	idx := &store.Entry{VaryIndex: true, Vary: ent.Vary, Born: born, FreshUntil: ent.FreshUntil, KeepUntil: ent.KeepUntil}
	if old, err := h.e.store.Get(ctx, key); err == nil && old != nil && old.VaryIndex &&
		httpcache.SameNames(old.Vary, ent.Vary) && ent.Born.Before(old.KeepUntil) {
		idx.Born = old.Born
		if old.KeepUntil.After(idx.KeepUntil) {
			idx.KeepUntil = old.KeepUntil
		}
	}
	if err := h.e.store.Set(ctx, key, idx); err != nil {
		return false
	}
	return h.e.store.Set(ctx, httpcache.VariantKey(httpcache.GenerationKey(key, idx), ent.Vary, req), ent) == nil
}

// pass sends r to the origin as it is, with its own writer, so streaming, flushing and
// upgrades work as without Weir, through the origin gate: an open breaker stops it (FR-CB-5)
// and it holds an origin slot while it goes (FR-LIM-1). part is r's partition;
// cacheStatus[0] is its Cache-Status, a slice shared by every answer that carries it (header
// values are never changed in place).
//
// Its outcome is not recorded with the breaker, which learns from the cache's own fetches
// and from unsafe methods: seeing the status would take a writer of Weir's between the proxy
// and the client, and in Yaegi each of the proxy's calls into it (Header, WriteHeader,
// Write) costs microseconds, on every pass-through request. The breaker's probe is the
// exception (passProbe).
//
// The common case, every breaker closed and a foreground slot free at once, is enter and
// leave written out: what enter does for a caller that records nothing, without its ticket,
// its context or two interpreted calls' frames (docs/yaegi.md). Anything else takes
// passGated, the gate in full.
func pass(h *Handler, w http.ResponseWriter, r *http.Request, part string, cacheStatus []string) {
	// breaker.AllClosed written out, and pacing's on beside it (both are zero or more), with
	// a tagged switch, whose literal case takes no slot. Pacing is loaded on every request,
	// not only where it was configured: an operator may turn it on at any time (admin.go).
	switch atomic.LoadInt32(h.notClosed) + atomic.LoadInt32(h.paced) {
	case 0:
	default:
		// A call with passGated's arguments, so that pass's frame is as without pacing.
		passOff(h, w, r, part, cacheStatus)
		return
	}

	slot := limit.Take(h.e.limiter, part, r.Host, r.ContentLength != 0)
	if slot == nil {
		passGated(h, w, r, part, cacheStatus)
		return
	}
	// Deferred: a panic in the next handler (an aborted proxy copy) must not keep the slot.
	defer limit.Return(slot)
	atomic.AddInt64(h.passes, 1)
	w.Header()["Cache-Status"] = cacheStatus
	h.next.ServeHTTP(w, r)
}

// passOff is pass when its fast path is off: a breaker that is not closed, or pacing on. A
// host without pacing behind closed breakers still takes the fast path, written out once
// more in passFree; the others take passGated, the gate in full.
func passOff(h *Handler, w http.ResponseWriter, r *http.Request, part string, cacheStatus []string) {
	// Not pacing's on: pass found it or a breaker not closed, and with every breaker closed
	// a host finds no pace while pacing is off.
	if !breaker.AllClosed(h.e.breakers) || paceOf(h.pacing, r.Host) != nil {
		passGated(h, w, r, part, cacheStatus)
		return
	}
	passFree(h, w, r, part, cacheStatus)
}

// passFree is pass's fast path for a host without pacing while pacing is on: a slot free at
// once, else the gate in full.
func passFree(h *Handler, w http.ResponseWriter, r *http.Request, part string, cacheStatus []string) {
	slot := limit.Take(h.e.limiter, part, r.Host, r.ContentLength != 0)
	if slot == nil {
		passGated(h, w, r, part, cacheStatus)
		return
	}
	// Deferred: a panic in the next handler (an aborted proxy copy) must not keep the slot.
	defer limit.Return(slot)
	atomic.AddInt64(h.passes, 1)
	w.Header()["Cache-Status"] = cacheStatus
	h.next.ServeHTTP(w, r)
}

// passGated is pass through the whole gate: a breaker that is not closed, or a slot that is
// not free at once.
func passGated(h *Handler, w http.ResponseWriter, r *http.Request, part string, cacheStatus []string) {
	ctx := r.Context()
	t, refused := enter(h, ctx, part, r.Host, r.URL.Path, r.ContentLength != 0, 0)
	if t == nil {
		h.refused(w, r, nil, cacheStatus[0], *refused)
		return
	}
	// Deferred: a panic in the next handler (an aborted proxy copy) must not keep the slot.
	defer leave(h, t, 0, 0, nil)
	atomic.AddInt64(h.passes, 1)
	w.Header()["Cache-Status"] = cacheStatus
	if t.record {
		passProbe(h, t, w, r)
		return
	}
	h.next.ServeHTTP(w, r)
}

// passProbe sends a pass-through request that carries the half-open breaker's probe, and
// records its status: a breaker that sees only pass-through traffic would never close
// otherwise. A function of its own, so that its frame slots are paid only by probes.
func passProbe(h *Handler, t *ticket, w http.ResponseWriter, r *http.Request) {
	sw := &statusWriter{w: w, h: h, r: r}
	began := h.s.Now()
	h.next.ServeHTTP(sw, r)
	took := h.s.Now().Sub(began)
	status := sw.status
	if status == 0 {
		// A handler that returns without writing has answered 200 (net/http's rule).
		status = http.StatusOK
	}
	leave(h, t, status, took, w.Header())
}

// requestNoCache tells whether the client asked that nothing stored be used without
// validation (RFC 9111 section 5.2.1.4, and Pragma: no-cache per section 5.4). Weir still
// coalesces such requests, so a flood of them costs the origin one fetch at a time.
func requestNoCache(r *http.Request) bool {
	if cc := r.Header["Cache-Control"]; len(cc) > 0 {
		c := httpcache.ParseCacheControl(cc)
		return c.NoCache || c.MaxAge == 0
	}
	if p := r.Header["Pragma"]; len(p) > 0 {
		for _, v := range p {
			if v == "no-cache" {
				return true
			}
		}
	}
	return false
}
