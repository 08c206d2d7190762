package core

import (
	"encoding/json"
	"html"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/weirproxy/weir/core/store"
)

// Refusals. A protection that keeps a request from the origin says why with a reason,
// registered once in its own file (protect_<name>.go); metrics (weir_shed_total), the shed
// event line, the admin page and the refusal writer (refuse) read the one list, and
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
	// scope is the key of the breaker that refused (circuit-open).
	scope string
}

// refuse answers a request that a protection kept from the origin: nothing for a client
// that left; a stale entry where the reason allows it; else the reason's status with its
// name in Cache-Status (after cacheStatus) and when to come back in Retry-After. Every
// refusal is counted here, once, by reason.
//
// The common refusal, with nothing stored to stand in and no Accept to weigh (a flood's
// shed request), is written by writeRefusal; every other goes through refuseOther. A
// flood's refusals are as many as its fetches, and under Yaegi a call allocates a slot for
// every value of its function's whole body, taken branch or not (docs/yaegi.md).
func refuse(h *Handler, w http.ResponseWriter, r *http.Request, stale *store.Entry, cacheStatus string, f refusal) {
	why := f.why
	if why == reasonClientLeft {
		return
	}
	countShed(h.e, why)
	noteRefused(h, r)
	if stale != nil || why == reasonCircuitOpen || r.Header["Accept"] != nil {
		refuseOther(h, w, r, stale, cacheStatus, f)
		return
	}
	writeRefusal(h, w, r, why, withDetail(cacheStatus, why.name+f.param), f.retryAfter)
}

// refuseOther is refuse, counted, for a circuit-open refusal, one that stale may answer,
// and one whose client sent Accept (refusalBody).
func refuseOther(h *Handler, w http.ResponseWriter, r *http.Request, stale *store.Entry, cacheStatus string, f refusal) {
	why := f.why
	if why == reasonCircuitOpen {
		h.e.metrics.shortCircuits.add(f.scope)
	}
	if staleAnswers(why, stale, h.s.Now()) {
		h.write(w, r, &answer{ent: stale, hit: true, detail: why.name})
		return
	}
	h.write(w, r, &answer{status: why.status, text: why.text, cache: cacheStatus, detail: why.name + f.param,
		retryAfter: f.retryAfter, refused: true, negotiated: true})
}

// writeRefusal writes the answer of a refusal for why, as write and refusalBody write it for
// r, whose client sent no Accept: the reason's status and line of text, Cache-Status cs, and
// Retry-After from retryAfter (when positive). It counts the answer as write does (a shed).
func writeRefusal(h *Handler, w http.ResponseWriter, r *http.Request, why *reason, cs string, retryAfter time.Duration) {
	if atomic.AddInt64(&h.e.metrics.outcomes[outcomeShed].N, 1)%consoleSample == 0 {
		sampleAnswer(h, r, outcomeShed)
	}
	hdr := w.Header()
	if retryAfter > 0 {
		hdr["Retry-After"] = []string{strconv.FormatInt(ceilSeconds(retryAfter), 10)}
	}
	hdr["Cache-Status"] = []string{cs}
	hdr["X-Content-Type-Options"] = []string{"nosniff"}
	hdr["Content-Type"] = []string{"text/plain; charset=utf-8"}
	w.WriteHeader(why.status)
	w.Write([]byte(why.text + "\n"))
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

// Refusal bodies. A refusal, and a negative entry's answer, keep their status, Retry-After
// and Cache-Status whatever the body: {"error": "<detail>", "retryAfter": <seconds>} for a
// client whose Accept prefers JSON to HTML and text (an API's), refusal.body filled in for
// one that prefers HTML when the operator set it (a branded "back soon" page), else the
// reason's line of text.

// The bodies a refusal may take (acceptedBody).
const (
	bodyText = 0
	bodyJSON = 1
	bodyHTML = 2
)

// refusalBody writes the body of a, an answer of Weir's own whose status and fields are set,
// as r's Accept asks for it.
func (h *Handler) refusalBody(w http.ResponseWriter, r *http.Request, a *answer) {
	hdr := w.Header()
	hdr["X-Content-Type-Options"] = []string{"nosniff"}
	seconds := int64(0)
	if a.retryAfter > 0 {
		seconds = ceilSeconds(a.retryAfter)
	}
	switch acceptedBody(r.Header["Accept"], h.s.RefusalBody != "") {
	case bodyJSON:
		body, _ := json.Marshal(refusalJSON{Error: a.detail, RetryAfter: seconds})
		hdr["Content-Type"] = []string{"application/json"}
		w.WriteHeader(a.status)
		w.Write(append(body, '\n'))
		return
	case bodyHTML:
		hdr["Content-Type"] = []string{"text/html; charset=utf-8"}
		w.WriteHeader(a.status)
		w.Write([]byte(refusalPage(h.s.RefusalBody, a.detail, seconds, a.status)))
		return
	}
	hdr["Content-Type"] = []string{"text/plain; charset=utf-8"}
	w.WriteHeader(a.status)
	w.Write([]byte(a.text + "\n"))
}

// maxRefusalBody bounds refusal.body: a page, not a site.
const maxRefusalBody = 64 << 10

// refusalPage fills refusal.body, an HTML page, with a refusal's values: {detail} (the
// reason, as Cache-Status names it), {retryAfter} (seconds) and {status}. Placeholders, not a
// Go template: Traefik's file provider renders its files as Go templates first, so a page
// holding {{...}} would break the operator's whole file.
func refusalPage(page, detail string, retryAfter int64, status int) string {
	return strings.NewReplacer("{detail}", html.EscapeString(detail),
		"{retryAfter}", strconv.FormatInt(retryAfter, 10), "{status}", strconv.Itoa(status)).Replace(page)
}

// refusalJSON is a refusal's body for a JSON client.
type refusalJSON struct {
	Error      string `json:"error"`
	RetryAfter int64  `json:"retryAfter"`
}

// acceptedBody is the body a client with the Accept field values accept prefers (RFC 9110
// section 12.5.1): JSON when it weighs application/json (or application/*) above both
// text/html and text/plain; HTML when it weighs text/html above both and a page is set
// (html); else the line of text. No Accept, or */* alone, is text.
func acceptedBody(accept []string, html bool) int {
	if len(accept) == 0 {
		return bodyText
	}
	var jsonQ, htmlQ, textQ, anyQ float64 = -1, -1, -1, -1
	var appQ, textAnyQ float64 = -1, -1
	for _, v := range accept {
		for _, member := range strings.Split(v, ",") {
			mt, q := acceptMember(member)
			switch mt {
			case "application/json":
				jsonQ = q
			case "application/*":
				appQ = q
			case "text/html":
				htmlQ = q
			case "text/plain":
				textQ = q
			case "text/*":
				textAnyQ = q
			case "*/*":
				anyQ = q
			}
		}
	}
	// A specific type's weight, else its range's, else */*'s.
	pick := func(q, rangeQ float64) float64 {
		switch {
		case q >= 0:
			return q
		case rangeQ >= 0:
			return rangeQ
		}
		return anyQ
	}
	j, hq, tq := pick(jsonQ, appQ), pick(htmlQ, textAnyQ), pick(textQ, textAnyQ)
	switch {
	case j > 0 && j > hq && j > tq:
		return bodyJSON
	case html && hq > 0 && hq > tq && hq >= j:
		return bodyHTML
	}
	return bodyText
}

// acceptMember reads one member of Accept: its media type, lower case, and its weight (1
// unless q says otherwise; a q that does not parse is 0).
func acceptMember(member string) (string, float64) {
	parts := strings.Split(member, ";")
	mt := strings.ToLower(strings.TrimSpace(parts[0]))
	q := 1.0
	for _, p := range parts[1:] {
		p = strings.TrimSpace(p)
		if len(p) > 2 && (p[0] == 'q' || p[0] == 'Q') && p[1] == '=' {
			v, err := strconv.ParseFloat(p[2:], 64)
			if err != nil || v < 0 || v > 1 {
				v = 0
			}
			q = v
		}
	}
	return mt, q
}
