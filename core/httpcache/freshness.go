package httpcache

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/weirproxy/weir/core/entry"
)

// Status codes a cache may store without explicit freshness and give the operator's
// default TTL (RFC 9110 section 15.1, "heuristically cacheable").
var heuristicStatus = map[int]bool{
	200: true, 203: true, 204: true, 300: true, 301: true, 308: true,
	404: true, 405: true, 410: true, 414: true, 501: true,
}

// Status codes Weir stores when the answer states its freshness or carries a validator.
// 206 is left out: Weir does not assemble ranges.
var storableStatus = map[int]bool{
	200: true, 203: true, 204: true, 300: true, 301: true, 302: true, 303: true,
	307: true, 308: true, 404: true, 405: true, 410: true, 414: true, 501: true,
}

// maxRevalidateGrace bounds how long an answer with a validator is kept past its freshness
// only to be revalidated with a conditional request.
const (
	minRevalidateGrace = time.Minute
	maxRevalidateGrace = 24 * time.Hour
)

// Reasons an answer is not stored, for Cache-Status detail: Storable returns those it finds,
// and the engine the two it finds while reading the body (ReasonTooLarge, ReasonStreaming).
const (
	ReasonNoStore   = "no-store"
	ReasonPrivate   = "private"
	ReasonCookie    = "set-cookie"
	ReasonAuth      = "authorization"
	ReasonReqStore  = "request-no-store"
	ReasonStatus    = "status"
	ReasonNoFresh   = "no-freshness"
	ReasonVaryStar  = "vary-star"
	ReasonTooLarge  = "too-large"
	ReasonStreaming = "stream"
)

// Storable tells whether an answer to r with status, header h and directives cc (read by
// ResponseControl) may be stored by a shared cache (RFC 9111 section 3), with Weir's
// stricter rule that an answer setting a cookie is never shared. When it may not, reason
// says why, one of the Reason constants. p is the cache's policy.
//
// Every answer fetched is judged here: a function rather than a method of Policy, the
// common answer first, and every other judged by storableOther, since under Yaegi a method
// call goes through a reflective wrapper and a call allocates a slot for every value of its
// callee's whole body (docs/yaegi.md).
func Storable(p *Policy, r *http.Request, status int, h http.Header, cc Directives) (bool, string) {
	// The common answer: a status stored by default, with max-age or s-maxage, without
	// no-store, private, a cookie or Vary, to a request without directives or credentials.
	// One case each: Yaegi v0.16.1 evaluates only the first expression of a tagless
	// switch's case list.
	switch {
	case cc.NoStore:
	case cc.Private:
	case cc.MaxAge < 0 && cc.SMaxAge < 0:
	case !storableStatus[status]:
	case h["Set-Cookie"] != nil:
	case h["Vary"] != nil:
	case r.Header["Cache-Control"] != nil:
	case r.Header["Authorization"] != nil:
	default:
		return true, ""
	}
	return storableOther(p, r, status, h, cc)
}

// storableOther is Storable for every answer but the common one.
func storableOther(p *Policy, r *http.Request, status int, h http.Header, cc Directives) (bool, string) {
	explicit := cc.SMaxAge >= 0 || cc.MaxAge >= 0 || (len(h["Expires"]) > 0 && !cc.Targeted)
	// One case each: Yaegi v0.16.1 evaluates only the first expression of a tagless
	// switch's case list.
	switch {
	case r.Header["Cache-Control"] != nil && RequestNoStore(r):
		// RFC 9111 section 5.2.1.5: no part of the answer to such a request is stored.
		return false, ReasonReqStore
	case cc.NoStore:
		return false, ReasonNoStore
	case cc.Private && !p.Private:
		return false, ReasonPrivate
	case len(h["Set-Cookie"]) > 0:
		return false, ReasonCookie
	case !storableStatus[status] && !(explicit && !cc.MustUnderstand && otherStorableStatus(status)):
		// RFC 9111 section 3: any final status may be stored when the answer says how long
		// it is fresh, unless must-understand asks for a status Weir knows (section 5.2.2.3).
		return false, ReasonStatus
	}
	// RFC 9111 section 3.5: an answer to a request with credentials is shared only when it
	// says so.
	if !p.Private && len(r.Header["Authorization"]) > 0 && !cc.Public && cc.SMaxAge < 0 && !cc.MustRevalidate {
		return false, ReasonAuth
	}
	if v := h["Vary"]; len(v) > 0 {
		if _, star := parseVary(v); star {
			return false, ReasonVaryStar
		}
	}
	validator := len(h["Etag"]) > 0 || len(h["Last-Modified"]) > 0
	if explicit || validator || (p.DefaultTTL > 0 && heuristicStatus[status]) {
		return true, ""
	}
	return false, ReasonNoFresh
}

// RequestNoStore tells whether the client forbids storing the answer to r (RFC 9111
// section 5.2.1.5).
func RequestNoStore(r *http.Request) bool {
	cc := r.Header["Cache-Control"]
	return len(cc) > 0 && ParseCacheControl(cc).NoStore
}

// RequestScoped tells whether an answer was refused storage for something in the request
// alone (its credentials, its no-store): that says nothing of the answer others get, so the
// key is not marked hit-for-pass (FR-COA-8).
func RequestScoped(reason string) bool {
	return reason == ReasonAuth || reason == ReasonReqStore
}

// otherStorableStatus tells whether a status outside storableStatus may be stored with
// explicit freshness: a final status, not a partial answer (Weir does not assemble ranges),
// not a 304 (which updates a stored answer), and not an origin error (IsOriginError), which
// stale-if-error, coalescing and the negative cache treat as a failure.
func otherStorableStatus(status int) bool {
	return status >= 200 && status <= 599 && status != 206 && status != 304 && !IsOriginError(status)
}

// IsOriginError tells whether status is one of the errors that stale-if-error answers with
// a stale answer: 500, 502, 503 and 504 (RFC 5861 section 4).
func IsOriginError(status int) bool {
	return status == 500 || status == 502 || status == 503 || status == 504
}

// Policy is the part of the settings that decides what is stored and for how long.
type Policy struct {
	// DefaultTTL is the freshness of a heuristically cacheable answer that states none
	// (RFC 9111 section 4.2.2). Zero: such answers are not stored.
	DefaultTTL time.Duration
	// MaxEntrySize is the largest body stored, in bytes. Policy does not read it: the engine
	// checks it while the body arrives.
	MaxEntrySize int64
	// StaleIfError and StaleWhileRevalidate are the operator's stale policy (stale.ifError,
	// stale.whileRevalidate): the windows an answer gets when its origin sent no
	// stale-if-error, or no stale-while-revalidate, of its own (RFC 5861). The origin's own
	// directive comes first, even when it says 0; an answer that may not be served stale
	// (must-revalidate, proxy-revalidate, s-maxage, no-cache) gets neither. Zero: none.
	StaleIfError         time.Duration
	StaleWhileRevalidate time.Duration
	// Private makes the policy the private cache's, which stores an answer for the one user
	// whose request it answers: Cache-Control: private and a request's Authorization do not
	// keep it from being stored (RFC 9111 sections 5.2.2.7 and 3.5 speak of a shared
	// cache). False: a shared cache's.
	Private bool
}

// NewEntry builds, under p, the entry for an answer received at respTime to a request sent at reqTime,
// computing its age and freshness as RFC 9111 sections 4.2.1 and 4.2.3 say, with the header
// to store (hop-by-hop fields and the fields meant for Weir alone removed), for an answer
// that varies, its Vary names, and the answer's tags (Tags). The entry is not prepared for
// the hit path (Entry.Prepare).
//
// It runs on every miss stored. Under Yaegi each call (an interpreted function, a compiled
// method such as Header.Get or time.Time's) costs its frame or a reflective call, so the
// fields are read from the map as sent and parsed only when present (Date, Age, Vary, the
// tags), what only some answers need is entryExtras's, the entry is made with one composite
// literal, and NewEntry is a function rather than a method of Policy.
func NewEntry(p *Policy, status int, h http.Header, body []byte, cc Directives, reqTime, respTime time.Time) *entry.Entry {
	date := respTime
	var apparent time.Duration
	if d := h["Date"]; len(d) > 0 {
		if t, err := http.ParseTime(d[0]); err == nil {
			date = t
			apparent = respTime.Sub(date)
			if apparent < 0 {
				apparent = 0
			}
		}
	}
	corrected := respTime.Sub(reqTime)
	ageOK := true
	if a := h["Age"]; len(a) > 0 {
		age, ok := parseAge(a)
		corrected += time.Duration(age) * time.Second
		ageOK = ok
	}
	initial := apparent
	if corrected > initial {
		initial = corrected
	}
	born := respTime.Add(-initial)

	var lifetime time.Duration
	switch {
	case cc.Invalid || cc.NoCache || !ageOK:
		lifetime = 0
	case cc.SMaxAge >= 0:
		lifetime = time.Duration(cc.SMaxAge) * time.Second
	case cc.MaxAge >= 0:
		lifetime = time.Duration(cc.MaxAge) * time.Second
	case len(h["Expires"]) > 0 && !cc.Targeted:
		// An invalid Expires, such as "0", means already expired (RFC 9111 section 5.3).
		if exp, err := http.ParseTime(h["Expires"][0]); err == nil && exp.After(date) {
			lifetime = exp.Sub(date)
		}
	case heuristicStatus[status]:
		lifetime = p.DefaultTTL
	}

	fresh := born.Add(lifetime)
	e := &entry.Entry{
		Status: status, Header: storedHeader(h, body), Body: body,
		Born: born, FreshUntil: fresh, KeepUntil: fresh,
	}
	// What only some answers need, out of line: a stale window (the origin's directive, or
	// the operator's stale.*), a validator, Vary, tags. Every stored answer passes here, and
	// under Yaegi a call allocates a slot for every value of its callee's whole body
	// (docs/yaegi.md).
	if p.StaleWhileRevalidate > 0 || p.StaleIfError > 0 || cc.StaleWhileRevalidate >= 0 || cc.StaleIfError >= 0 ||
		len(h["Etag"]) > 0 || len(h["Last-Modified"]) > 0 || len(h["Vary"]) > 0 ||
		len(h[FieldSurrogateKey]) > 0 || len(h[FieldCacheTag]) > 0 {
		entryExtras(p, e, h, cc, lifetime)
	}
	return e
}

// entryExtras gives e, just built by NewEntry for an answer with header h, directives cc
// and freshness lifetime, its stale windows, how long it is kept for them or for
// revalidation, its Vary names and its tags.
func entryExtras(p *Policy, e *entry.Entry, h http.Header, cc Directives, lifetime time.Duration) {
	fresh := e.FreshUntil
	keep := fresh
	// must-revalidate, proxy-revalidate, s-maxage and no-cache forbid serving stale
	// (RFC 9111 sections 5.2.2.2, 5.2.2.8, 5.2.2.10; RFC 5861 section 1). Each window is the
	// origin's directive in seconds when it sent one (-1: none), else the operator's; the
	// entry is kept past freshness for as long as a window may need it. The two windows are
	// written out rather than one function called twice: under Yaegi each call costs its
	// frame (docs/yaegi.md).
	if !cc.MustRevalidate && !cc.ProxyRevalidate && !cc.NoCache && cc.SMaxAge < 0 {
		swr := p.StaleWhileRevalidate
		if cc.StaleWhileRevalidate >= 0 {
			swr = time.Duration(cc.StaleWhileRevalidate) * time.Second
		}
		if swr > 0 {
			e.StaleWhileRevalidateUntil = fresh.Add(swr)
			if e.StaleWhileRevalidateUntil.After(keep) {
				keep = e.StaleWhileRevalidateUntil
			}
		}
		sie := p.StaleIfError
		if cc.StaleIfError >= 0 {
			sie = time.Duration(cc.StaleIfError) * time.Second
		}
		if sie > 0 {
			e.StaleIfErrorUntil = fresh.Add(sie)
			if e.StaleIfErrorUntil.After(keep) {
				keep = e.StaleIfErrorUntil
			}
		}
	}
	if len(h["Etag"]) > 0 || len(h["Last-Modified"]) > 0 {
		keep = revalidateKeep(keep, fresh, lifetime)
	}
	e.KeepUntil = keep
	if v := h["Vary"]; len(v) > 0 {
		names, _ := parseVary(v)
		e.Vary = names
	}
	if len(h[FieldSurrogateKey]) > 0 || len(h[FieldCacheTag]) > 0 {
		e.Tags = Tags(h)
	}
}

// revalidateKeep is keep, the end of an entry fresh until fresh for lifetime, lengthened
// for an answer with a validator: kept past its freshness, within bounds, only to be
// revalidated with a conditional request.
func revalidateKeep(keep, fresh time.Time, lifetime time.Duration) time.Time {
	grace := lifetime
	if grace < minRevalidateGrace {
		grace = minRevalidateGrace
	}
	if grace > maxRevalidateGrace {
		grace = maxRevalidateGrace
	}
	return later(keep, fresh.Add(grace))
}

// parseAge reads the Age field (RFC 9111 section 5.1): the leading digits of its first
// member, so "7200", "7200,0", "7200.0" and "7200;x=y" are 7200 seconds. It reports ok false,
// and Weir treats the answer as stale rather than as fresh as if it were new, when the value
// cannot be trusted:
//   - a member that does not start with a digit ("abc", "-7200");
//   - Age sent more than once: two field lines, or a list that repeats its first member
//     ("0, 0", what joining two lines gives, RFC 9110 section 5.3). Age is a singleton that a
//     sender must not repeat (RFC 9110 section 5.3); which hop's value is right is unknowable,
//     and the conformance suite's age-parse-*-twoline and age-parse-dup-* tests require such
//     answers to be stale. A list of different values ("0,7200") keeps RFC 9111's rule of
//     using the first member, as the suite's age-parse-prefix test requires.
//
// No Age field is age zero.
func parseAge(lines []string) (seconds int64, ok bool) {
	if len(lines) == 0 {
		return 0, true
	}
	if len(lines) > 1 {
		return 0, false
	}
	first, rest, _ := strings.Cut(lines[0], ",")
	first = strings.TrimSpace(first)
	for rest != "" {
		var member string
		member, rest, _ = strings.Cut(rest, ",")
		if strings.TrimSpace(member) == first {
			return 0, false
		}
	}
	first = strings.Trim(first, `"`)
	n := 0
	for n < len(first) && first[n] >= '0' && first[n] <= '9' {
		n++
	}
	if n == 0 {
		return 0, false
	}
	secs, _ := ParseDeltaSeconds(first[:n])
	return secs, true
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Header fields never stored: hop-by-hop fields (RFC 9110 section 7.6.1), Age, which is
// recomputed on every answer from storage, Cache-Status, which Weir writes itself, and the
// fields meant for Weir alone (WeirOnlyField), so that no answer from storage carries them
// and the hit path has nothing to remove. A set: storedHeader skips them with one map read
// for each field an answer has, rather than a delete for each of them.
var unstoredHeader = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Connection": true, "Te": true, "Trailer": true,
	"Transfer-Encoding": true, "Upgrade": true, "Proxy-Authenticate": true, "Age": true,
	"Cache-Status": true, FieldWeirCacheControl: true, FieldSurrogateControl: true,
	FieldWeirPurgeUser: true,
}

// storedHeader copies an answer's header for storage, with Content-Length set to the
// buffered body's length.
func storedHeader(h http.Header, body []byte) http.Header {
	out := make(http.Header, len(h)+1)
	for k, v := range h {
		if unstoredHeader[k] {
			continue
		}
		out[k] = append([]string(nil), v...)
	}
	out["Content-Length"] = []string{strconv.Itoa(len(body))}
	return out
}

// Fields of a 304 that do not replace the stored ones (RFC 9111 section 3.2: the stored
// representation's framing stays).
//
// The validators stay too: a 304 answers the conditional request made with the stored
// ETag, and one naming another ETag must not relabel the stored body.
var keepOn304 = map[string]bool{
	"Content-Length": true, "Content-Encoding": true, "Transfer-Encoding": true, "Content-Range": true,
	"Etag": true, "Content-Md5": true,
}

// MergeNotModified returns the header of a stored answer updated with a 304's fields
// (RFC 9111 section 4.3.4).
func MergeNotModified(stored, fresh http.Header) http.Header {
	out := make(http.Header, len(stored)+len(fresh))
	for k, v := range stored {
		out[k] = v
	}
	for k, v := range fresh {
		if keepOn304[k] {
			continue
		}
		out[k] = append([]string(nil), v...)
	}
	return out
}
