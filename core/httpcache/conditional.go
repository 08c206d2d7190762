package httpcache

import (
	"net/http"
	"strings"
	"time"

	"github.com/weirproxy/weir/core/entry"
)

// Fields a 304 leaves out: the representation's framing (RFC 9110 section 15.4.5).
var notModifiedDrop = []string{"Content-Length", "Content-Type", "Content-Encoding", "Transfer-Encoding"}

// DropForNotModified removes from the header of a stored answer the fields its 304 leaves
// out. A function rather than an exported list: under Yaegi, naming another package's
// variable takes a slot in the frame of the function that names it, paid on every call
// whichever branch runs (docs/yaegi.md).
func DropForNotModified(hdr http.Header) {
	for _, k := range notModifiedDrop {
		delete(hdr, k)
	}
}

// NotModified evaluates a client's validators against a stored answer (RFC 9110 section
// 13.2.2): If-None-Match first, If-Modified-Since only without it.
func NotModified(r *http.Request, ent *entry.Entry) bool {
	if ent.Status != http.StatusOK {
		return false
	}
	if inm := r.Header["If-None-Match"]; len(inm) > 0 {
		etag := ent.Header.Get("Etag")
		for _, line := range inm {
			for _, tag := range strings.Split(line, ",") {
				tag = strings.TrimSpace(tag)
				if tag == "*" || (etag != "" && weakMatch(tag, etag)) {
					return true
				}
			}
		}
		return false
	}
	lm, ok := modifiedAt(ent)
	if !ok {
		return false
	}
	ims, err := http.ParseTime(r.Header.Get("If-Modified-Since"))
	if err != nil {
		return false
	}
	return !lm.After(ims)
}

// modifiedAt is the date a stored answer's If-Modified-Since is evaluated against: its
// Last-Modified, or without one its Date, or without that the time it was received, Born
// (RFC 9111 section 4.3.2). A Last-Modified that is not a date reports false: the stored
// answer's modification date is unknown, and Weir does not guess it.
func modifiedAt(ent *entry.Entry) (time.Time, bool) {
	if v := ent.Header["Last-Modified"]; len(v) > 0 {
		lm, err := http.ParseTime(v[0])
		return lm, err == nil
	}
	if date, err := http.ParseTime(ent.Header.Get("Date")); err == nil {
		return date, true
	}
	return ent.Born, true
}

// weakMatch compares entity tags by the weak comparison of RFC 9110 section 8.8.3.2.
func weakMatch(a, b string) bool {
	return strings.TrimPrefix(a, "W/") == strings.TrimPrefix(b, "W/")
}
