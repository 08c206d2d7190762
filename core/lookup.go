package core

import (
	"context"
	"math/rand"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/weirproxy/weir/core/entry"
	"github.com/weirproxy/weir/core/httpcache"
	"github.com/weirproxy/weir/core/metrics"
	"github.com/weirproxy/weir/core/missrate"
	"github.com/weirproxy/weir/core/store"
)

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
	// The admin before the store is read: another instance or an older one may have stored
	// an answer under admin.path.
	if adminRequest(h, w, r) {
		return
	}
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
// The caller has found r not the admin's.
func serveSharedAt(h *Handler, w http.ResponseWriter, r *http.Request, key string) {
	if h.private != nil && privateRequest(h, w, r, httpcache.Key(&h.keyer, r)) {
		return
	}
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
	// Written as ServeHTTP writes a hit, a copy rather than a function both call: a call
	// would cost the hit from local memory, the most frequent answer of all, its frame.
	hot := &ent.Hot
	switch atomic.AddInt64(h.hits, 1) % 61 {
	case 0:
		sampleHit(h, r)
	}
	if ent.Fallback {
		fallbackHit(h)
	}
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
	// adminRequest's own first test, without its call while admin.path is off.
	if h.admin != nil && adminRequest(h, w, r) {
		return
	}
	if len(r.Header["Upgrade"]) > 0 {
		passUpgrade(h, w, r)
		return
	}
	key := httpcache.Key(&h.keyer, r)
	if h.private != nil && privateRequest(h, w, r, key) {
		return
	}
	now := h.s.Now()
	// lookup written out, without `var ent *store.Entry`, whose type's name takes a frame
	// slot of a whole Entry under Yaegi (docs/yaegi.md).
	if key != raw {
		rawEnt = get(h, r.Context(), key, now)
	}
	if rawEnt == nil {
		// Nothing stored: a miss, the most frequent way through here (a flood of distinct
		// queries is nothing else), without serveStored's frame.
		miss(h, w, r, key, key, nil, false, now)
		return
	}
	serveStored(h, w, r, key, rawEnt, now)
}

// passUpgrade passes a request to upgrade its connection (a WebSocket) to the origin.
func passUpgrade(h *Handler, w http.ResponseWriter, r *http.Request) {
	pass(h, w, r, httpcache.Partition(r), []string{statusBypass + paramDetail + "upgrade"})
}

// serveStored is serveFrom for a request under whose key, key, storage holds rawEnt: a
// variant index to follow, a hit-for-pass mark, a fresh entry, or one to revalidate.
func serveStored(h *Handler, w http.ResponseWriter, r *http.Request, key string, rawEnt *store.Entry, now time.Time) {
	ent, lookupKey, varyMiss := followIndex(h, r, key, rawEnt, now)
	if ent != nil && ent.Pass {
		pass(h, w, r, httpcache.Partition(r), h.passStatusValue)
		return
	}
	if ent != nil && now.Before(ent.FreshUntil) && !requestNoCache(r) {
		missrate.Hit(h.missRate, httpcache.PartitionOf(key))
		h.write(w, r, &answer{ent: ent, hit: true})
		return
	}
	miss(h, w, r, key, lookupKey, ent, varyMiss, now)
}

// lookup finds the entry r selects under key, following a variant index. It returns the key
// the entry was found under, or the one it would be stored under, and whether an index
// existed but not the variant.
func lookup(h *Handler, r *http.Request, key string, now time.Time) (ent *store.Entry, at string, varyMiss bool) {
	ent = get(h, r.Context(), key, now)
	return followIndex(h, r, key, ent, now)
}

// followIndex is lookup, given ent, the entry read under key (nil: none).
func followIndex(h *Handler, r *http.Request, key string, ent *store.Entry, now time.Time) (*store.Entry, string, bool) {
	if ent == nil || !ent.VaryIndex {
		return ent, key, false
	}
	at := httpcache.VariantKey(httpcache.GenerationKey(key, ent), ent.Vary, r)
	ent = get(h, r.Context(), at, now)
	if ent == nil || ent.VaryIndex {
		return nil, at, true
	}
	return ent, at, false
}

// get reads one key. A store that fails or is slow reads as a miss (FR-STF-1): the miss
// still goes through coalescing and every origin protection.
func get(h *Handler, ctx context.Context, key string, now time.Time) *store.Entry {
	if h.mem != nil {
		ent := store.Lookup(h.mem, key)
		if ent == nil || now.After(ent.KeepUntil) {
			return nil
		}
		return ent
	}
	if h.shared != nil {
		return sharedGet(h, ctx, key, h.s.Now())
	}
	return getTimed(h, ctx, key, now)
}

// getTimed is get from a store neither in process memory nor shared (one of the tests'),
// bounded by timeouts.store. A function of its own, so that the reads from the other
// stores pay none of its frame under Yaegi.
func getTimed(h *Handler, ctx context.Context, key string, now time.Time) *store.Entry {
	tctx, cancel := context.WithTimeout(ctx, h.s.StoreTimeout)
	began := h.s.Now()
	ent, err := h.e.store.Get(tctx, key)
	cancel()
	metrics.ObserveDuration(h.e.metrics.store, h.s.Now().Sub(began))
	if err != nil || ent == nil || now.After(ent.KeepUntil) {
		return nil
	}
	return ent
}

// sharedGet is get from a shared store (h.shared), now just read: the call's start for the
// store's latency. No timeout of its own: the store's guard bounds the call by
// timeouts.store. A function over the store's functions (store.ReadShared), not
// get over the Fallback's and the guard's methods through interfaces: under Yaegi
// each interface method call costs a hit read from the store (docs/yaegi.md).
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
func put(h *Handler, key string, req *http.Request, ent *store.Entry) bool {
	if h.mem == nil {
		return putIn(h, h.e.store, key, req, ent, nil)
	}
	// Process memory reads no context and never blocks: no timer to bound it (a compiled
	// context.WithTimeout and a deferred cancel under Yaegi), and, for an answer that does
	// not vary, functions rather than the methods putIn calls through the Store interface.
	entry.MakeHot(ent)
	if len(ent.Vary) == 0 {
		return store.Put(h.mem, key, ent, -1) == nil
	}
	return putVariant(h.mem, context.Background(), key, req, ent, nil)
}

// putIn is put into st: the engine's store, or, with secret set, the private cache's, whose
// variant keys hold an HMAC of the varied fields (privateVariantKey).
func putIn(h *Handler, st store.Store, key string, req *http.Request, ent *store.Entry, secret []byte) bool {
	entry.MakeHot(ent)
	ctx, cancel := context.WithTimeout(context.Background(), h.s.StoreTimeout)
	defer cancel()
	if len(ent.Vary) == 0 {
		return st.Set(ctx, key, ent) == nil
	}
	return putVariant(st, ctx, key, req, ent, secret)
}

// putVariant is putIn for an answer that varies, prepared, with ctx for st's calls: a
// variant index under key and ent under the variant key req selects.
func putVariant(st store.Store, ctx context.Context, key string, req *http.Request, ent *store.Entry, secret []byte) bool {
	// The index's Born names its generation: variants live under keys that carry it, so a
	// purge or invalidation, which deletes the index, also orphans every variant stored
	// before it. A new index takes a random nanosecond offset, so that one made in the same
	// instant as the deleted one is still another generation; a new variant of a live index
	// joins its generation. An index's Born is never used as an age.
	born := ent.Born.Add(time.Duration(rand.Int63n(int64(time.Millisecond))))
	idx := &store.Entry{VaryIndex: true, Vary: ent.Vary, Born: born, FreshUntil: ent.FreshUntil, KeepUntil: ent.KeepUntil}
	if old, err := st.Get(ctx, key); err == nil && old != nil && old.VaryIndex &&
		httpcache.SameNames(old.Vary, ent.Vary) && ent.Born.Before(old.KeepUntil) {
		idx.Born = old.Born
		if old.KeepUntil.After(idx.KeepUntil) {
			idx.KeepUntil = old.KeepUntil
		}
	}
	if err := st.Set(ctx, key, idx); err != nil {
		return false
	}
	return st.Set(ctx, privateVariantKey(secret, httpcache.GenerationKey(key, idx), ent.Vary, req), ent) == nil
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
