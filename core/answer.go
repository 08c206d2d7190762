package core

import (
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/weirproxy/weir/core/httpcache"
	"github.com/weirproxy/weir/core/store"
)

// answer is what Weir answers a request with, decided before anything is written
// (ARCHITECTURE.md, "Answers"): a stored entry, a held answer of the origin's, or a status of
// Weir's own. Decisions return one; write is the one writer, and the one place that rounds a
// duration to whole seconds for Retry-After. The fresh hit written out in Handler.ServeHTTP,
// answers streamed to their leader (sink) and answers passed through with the client's own
// writer are the exceptions: the first for speed, the others because the origin writes them.
type answer struct {
	// ent is a stored answer, served with its current Age; the client's validators and Range
	// are answered from it. Nil for the other kinds.
	ent *store.Entry
	// hit marks ent served as a hit: Cache-Status is hit with ent's ttl, negative once stale,
	// computed as it is written. Otherwise cache is the Cache-Status.
	hit bool

	// status is the status of a held answer (header not nil) or of Weir's own.
	status int
	// header and body are a held answer of the origin's.
	header http.Header
	body   []byte
	// shared marks a held answer fetched for another client: the fields that could carry
	// that client's state (Set-Cookie) are left out, and one private for Weir keeps only its
	// status.
	shared bool
	// text is the body of Weir's own answer, a line of plain text; empty, it has none.
	text string

	// cache is the Cache-Status of an answer that is no hit of ent's.
	cache string
	// detail, when set, is the Cache-Status detail, replacing one cache had: RFC 9211 allows
	// one.
	detail string
	// retryAfter, when positive, is sent as Retry-After (every 503 or 429 Weir makes says
	// when to come back).
	retryAfter time.Duration
	// refused marks the answer of a request a protection kept from the origin (refuse).
	refused bool
	// negotiated marks an answer of Weir's own whose body follows the client's Accept: a
	// refusal's or a negative entry's (refusalBody).
	negotiated bool
}

// write writes a.
func (h *Handler) write(w http.ResponseWriter, r *http.Request, a *answer) {
	if a.ent != nil {
		writeEntry(h, w, r, a)
		return
	}
	now := h.s.Now()
	if o := outcomeOf(a, now); o >= 0 {
		countAnswer(h, r, o)
	}
	hdr := w.Header()
	if a.retryAfter > 0 {
		hdr["Retry-After"] = []string{strconv.FormatInt(ceilSeconds(a.retryAfter), 10)}
	}
	if a.header != nil {
		writeHeld(w, a)
		return
	}
	hdr["Cache-Status"] = []string{cacheStatusOf(a, time.Time{})}
	if a.negotiated {
		h.refusalBody(w, r, a)
		return
	}
	if a.text == "" {
		hdr["Content-Length"] = []string{"0"}
		w.WriteHeader(a.status)
		return
	}
	// As http.Error writes an error: a line of text the client must not sniff as anything
	// else.
	hdr["Content-Type"] = []string{"text/plain; charset=utf-8"}
	hdr["X-Content-Type-Options"] = []string{"nosniff"}
	w.WriteHeader(a.status)
	w.Write([]byte(a.text + "\n"))
}

// cacheStatusOf is a's Cache-Status at now.
func cacheStatusOf(a *answer, now time.Time) string {
	cs := a.cache
	if a.hit {
		cs = statusHit + strconv.FormatInt(ttlSeconds(a.ent, now), 10)
	}
	if a.detail != "" {
		cs = withDetail(cs, a.detail)
	}
	return cs
}

// writeEntry is write for an answer with a stored entry (a.ent): it counts the answer, a
// hit, a stale hit or a miss (outcomeOf's cases for an entry), and writes the entry with its
// current Age (RFC 9111 section 5.1), or the 304 its client's validators ask for, or the
// range its client asked for. Every miss stored is answered here (deliver calls it
// directly), and under Yaegi each call costs a frame: the counting and the Cache-Status
// that outcomeOf, countAnswer and cacheStatusOf would each be called for are written out,
// and the header is copied from the entry's prepared slices (Entry.Hot) rather than by
// ranging over its map, a reflective step for each field.
func writeEntry(h *Handler, w http.ResponseWriter, r *http.Request, a *answer) {
	now := h.s.Now()
	ent := a.ent
	o := outcomeMiss
	cs := a.cache
	if a.hit {
		o = outcomeHit
		if !now.Before(ent.FreshUntil) {
			o = outcomeStale
		} else if ent.Fallback {
			fallbackHit(h)
		}
		cs = statusHit + strconv.FormatInt(ttlSeconds(ent, now), 10)
	}
	if atomic.AddInt64(&h.e.metrics.outcomes[o].N, 1)%consoleSample == 0 {
		sampleAnswer(h, r, o)
	}
	if o == outcomeStale {
		countStale(h.e, a.detail)
		noteStale(h, r)
	}
	if a.detail != "" {
		cs = withDetail(cs, a.detail)
	}
	hdr := w.Header()
	if a.retryAfter > 0 {
		hdr["Retry-After"] = []string{strconv.FormatInt(ceilSeconds(a.retryAfter), 10)}
	}
	if names := ent.Hot.Names; names != nil {
		values := ent.Hot.Values
		for i, k := range names {
			hdr[k] = values[i]
		}
	} else {
		// Not prepared: an answer shared with its flight but not stored.
		for k, v := range ent.Header {
			hdr[k] = v
		}
	}
	age := int64(now.Sub(ent.Born) / time.Second)
	if age < 0 {
		age = 0
	}
	hdr["Age"] = []string{strconv.FormatInt(age, 10)}
	hdr["Cache-Status"] = []string{cs}
	rh := r.Header
	if (len(rh["If-None-Match"]) > 0 || len(rh["If-Modified-Since"]) > 0) && httpcache.NotModified(r, ent) {
		httpcache.DropForNotModified(hdr)
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if len(rh["Range"]) > 0 && httpcache.ServeRange(w, r, ent) {
		return
	}
	w.WriteHeader(ent.Status)
	if r.Method != "HEAD" {
		w.Write(ent.Body)
	}
}

// writeFetched is writeEntry for a miss's answer just fetched and stored, ent, to a client
// that sent no validators and no Range: it counts a miss, and writes ent's prepared header
// (Entry.Hot) with its Age and Cache-Status cs. Every miss stored of a flood is answered
// here, and writeEntry's frame, with the values of its hits, 304s and ranges, costs twice
// this one's under Yaegi (docs/yaegi.md).
func writeFetched(h *Handler, w http.ResponseWriter, r *http.Request, ent *store.Entry, cs string) {
	if atomic.AddInt64(&h.e.metrics.outcomes[outcomeMiss].N, 1)%consoleSample == 0 {
		sampleAnswer(h, r, outcomeMiss)
	}
	hot := &ent.Hot
	hdr := w.Header()
	values := hot.Values
	for i, k := range hot.Names {
		hdr[k] = values[i]
	}
	// writeEntry's Age in Unix nanoseconds: whole seconds since the entry was born, never
	// negative (RFC 9111 section 5.1).
	age := (h.now().UnixNano() - hot.BornNano) / 1e9
	if age < 0 {
		age = 0
	}
	hdr["Age"] = []string{strconv.FormatInt(age, 10)}
	hdr["Cache-Status"] = []string{cs}
	w.WriteHeader(ent.Status)
	if r.Method != "HEAD" {
		w.Write(ent.Body)
	}
}

// writeHeld writes a held answer, without the fields meant for Weir alone.
func writeHeld(w http.ResponseWriter, a *answer) {
	dst := w.Header()
	body := a.body
	if a.shared && httpcache.ResponseControl(a.header).Private {
		body = nil
	} else {
		for k, v := range a.header {
			if (a.shared && k == "Set-Cookie") || httpcache.WeirOnlyField(k) {
				continue
			}
			dst[k] = v
		}
	}
	dst["Cache-Status"] = []string{cacheStatusOf(a, time.Time{})}
	w.WriteHeader(a.status)
	if len(body) > 0 {
		w.Write(body)
	}
}

// ttlSeconds is the entry's remaining freshness in whole seconds, negative once stale.
func ttlSeconds(ent *store.Entry, now time.Time) int64 {
	d := ent.FreshUntil.Sub(now)
	if d < 0 {
		return -ceilSeconds(-d)
	}
	return int64(d / time.Second)
}

// withDetail sets the detail of a Cache-Status, replacing one it had: RFC 9211 allows one.
func withDetail(cacheStatus, detail string) string {
	if i := strings.Index(cacheStatus, paramDetail); i >= 0 {
		cacheStatus = cacheStatus[:i]
	}
	return cacheStatus + paramDetail + detail
}

// sfKey is a breaker's key as a Cache-Status parameter's value (RFC 9211 section 2,
// RFC 8941): a token where the key is one (api.example.com, api.example.com/search), else a
// quoted string (an IP literal, 10.0.0.1 or [2001:db8::1]).
func sfKey(key string) string {
	token := key != "" && (key[0] >= 'a' && key[0] <= 'z' || key[0] >= 'A' && key[0] <= 'Z' || key[0] == '*')
	for i := 0; token && i < len(key); i++ {
		c := key[i]
		token = c > ' ' && c < 0x7f && !strings.ContainsRune("\"(),;<=>?@[\\]{}", rune(c))
	}
	if token {
		return key
	}
	return strconv.Quote(key)
}

// ceilSeconds rounds d up to whole seconds, at least 1: for Retry-After (RFC 9110 section
// 10.2.3), where 0 would ask for an immediate retry, and for the ttl of what is past its end.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 1
	}
	return int64((d + time.Second - 1) / time.Second)
}

// Cache-Status values (RFC 9211). Weir never writes hit and fwd together; a stale hit is a
// hit with a negative ttl.
const (
	statusWeir     = "Weir"
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
