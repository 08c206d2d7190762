package core

import (
	"net/http"
	"strconv"
	"time"

	"github.com/weirproxy/weir/core/httpcache"
	"github.com/weirproxy/weir/core/missrate"
	"github.com/weirproxy/weir/core/neg"
)

// negativeHit answers r from the failure remembered for key, if one is in force at now
// (FR-NEG-1), and reports whether it did. Out of miss's body, whose every call would
// otherwise allocate its slots (docs/yaegi.md).
func negativeHit(h *Handler, w http.ResponseWriter, r *http.Request, key string, now time.Time) bool {
	ne, ok := h.e.neg.Lookup(key, now)
	if !ok {
		return false
	}
	missrate.Hit(h.missRate, httpcache.PartitionOf(key))
	h.write(w, r, negativeAnswer(ne, now))
	return true
}

// negativeAnswer is the answer of a negative entry: the remembered status, a refusal's body
// (refusalBody), no origin contact (FR-NEG-1, FR-NEG-2), and Retry-After, which every 503 (and 502, 504) Weir
// makes carries: the time left until the later of the entry's end and the end of the
// origin's own Retry-After, so a client that obeys it neither comes back to the same negative
// answer nor before the origin asked.
func negativeAnswer(ne neg.Entry, now time.Time) *answer {
	left := ne.Until.Sub(now)
	if origin := ne.At.Add(ne.RetryAfter).Sub(now); origin > left {
		left = origin
	}
	return &answer{status: ne.Status, text: textUnavailable, cache: statusHit + strconv.FormatInt(ceilSeconds(ne.Until.Sub(now)), 10),
		detail: "negative", retryAfter: left, negotiated: true}
}

// rememberFailure records a negative entry for key after a fetch failed on origin health with
// nothing stored; neg refuses 500s, 4xx and requests with credentials (FR-NEG-4).
func (h *Handler) rememberFailure(key string, req *http.Request, status int, header http.Header, now time.Time) {
	var retryAfter time.Duration
	if v, ok := httpcache.ParseDeltaSeconds(header.Get("Retry-After")); ok {
		retryAfter = time.Duration(v) * time.Second
	}
	h.e.neg.Record(key, neg.Failure{Status: status, RetryAfter: retryAfter, Credentialed: hasCredentials(req)}, now)
}

// hasCredentials tells whether a request carries what identifies a client.
func hasCredentials(r *http.Request) bool {
	return len(r.Header["Authorization"]) > 0 || len(r.Header["Cookie"]) > 0
}
