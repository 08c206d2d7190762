package httpcache

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/weirproxy/weir/core/entry"
)

// What a Range field asks of a stored answer (RFC 9110 section 14). Plain int constants,
// compared in tagged switches.
const (
	// rangeWhole: serve the whole answer, as to a request without Range. A server may ignore
	// Range (RFC 9110 section 14.2), and Weir does for another unit, an invalid
	// ranges-specifier, several ranges (a multipart answer is rarely worth it: the whole
	// representation is in memory and small) and an empty representation (a 206 cannot
	// describe an empty range).
	rangeWhole = iota
	// rangePart: 206 with the bytes first..last (RFC 9110 section 15.3.7).
	rangePart
	// rangeNone: 416, the range does not overlap the representation (RFC 9110 section
	// 15.5.17).
	rangeNone
)

// maxRangePos caps the positions a range-spec names: any larger is past every stored
// representation, and the cap keeps the arithmetic from overflowing.
const maxRangePos = 1 << 53

// Fields of a stored answer left out of a 416, which carries no representation: no type,
// no coding to decode an empty body with, and no freshness, so that no cache downstream
// keeps the 416 for later requests of the URI.
var unsatisfiableDrop = []string{"Content-Type", "Content-Encoding", "Cache-Control", "Expires"}

// RangeAsked tells whether r asks for part of an answer: Range is defined for GET only
// (RFC 9110 section 14.2).
func RangeAsked(r *http.Request) bool {
	return r.Method == http.MethodGet && len(r.Header["Range"]) > 0
}

// ServeRange answers a Range request from a stored answer whose header fields are already
// set on w, with 206 or 416, and reports whether it did; false: the whole answer is served.
// Only a GET for a complete 200 is served in part, and only when If-Range holds (RFC 9110
// section 13.1.5); the client's If-None-Match and If-Modified-Since were answered first
// (RFC 9110 section 13.2.2).
func ServeRange(w http.ResponseWriter, r *http.Request, ent *entry.Entry) bool {
	lines := r.Header["Range"]
	if r.Method != http.MethodGet || ent.Status != http.StatusOK || len(lines) != 1 {
		return false
	}
	if !ifRangeHolds(r.Header["If-Range"], ent.Header) {
		return false
	}
	size := int64(len(ent.Body))
	first, last, answer := parseRange(lines[0], size)
	hdr := w.Header()
	switch answer {
	case rangePart:
		hdr["Content-Range"] = []string{"bytes " + itoa(first) + "-" + itoa(last) + "/" + itoa(size)}
		hdr["Content-Length"] = []string{itoa(last - first + 1)}
		w.WriteHeader(http.StatusPartialContent)
		w.Write(ent.Body[first : last+1])
		return true
	case rangeNone:
		for _, k := range unsatisfiableDrop {
			delete(hdr, k)
		}
		hdr["Content-Range"] = []string{"bytes */" + itoa(size)}
		hdr["Content-Length"] = []string{"0"}
		w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
		return true
	}
	return false
}

// parseRange reads a Range field value against a representation of size bytes (RFC 9110
// section 14.1). It returns rangePart with the first and last byte positions, clipped to the
// representation; rangeNone when the one range asked for is unsatisfiable (a first-pos at or
// past the end, a suffix of zero); rangeWhole for everything Weir serves whole (see the
// constants). The unit is case-insensitive; empty list elements are skipped (RFC 9110
// section 5.6.1); nothing else is tolerated (no whitespace inside a range-spec, no sign).
func parseRange(v string, size int64) (first, last int64, answer int) {
	if len(v) < 6 || !strings.EqualFold(v[:6], "bytes=") {
		return 0, 0, rangeWhole
	}
	spec := ""
	rest := v[6:]
	for rest != "" {
		var member string
		member, rest, _ = strings.Cut(rest, ",")
		member = strings.Trim(member, " \t")
		if member == "" {
			continue
		}
		if spec != "" {
			return 0, 0, rangeWhole
		}
		spec = member
	}
	dash := strings.IndexByte(spec, '-')
	if dash < 0 {
		return 0, 0, rangeWhole
	}
	if dash == 0 {
		// suffix-range: the last n bytes, all of them when n is larger.
		n, ok := rangePos(spec[1:])
		switch {
		case !ok:
			return 0, 0, rangeWhole
		case n == 0:
			return 0, 0, rangeNone
		case size == 0:
			return 0, 0, rangeWhole
		}
		if n > size {
			n = size
		}
		return size - n, size - 1, rangePart
	}
	var ok bool
	first, ok = rangePos(spec[:dash])
	if !ok {
		return 0, 0, rangeWhole
	}
	last = maxRangePos
	if dash+1 < len(spec) {
		l, ok := rangePos(spec[dash+1:])
		if !ok || l < first {
			// An int-range with last-pos before first-pos is invalid (RFC 9110 section
			// 14.1.1): ignored, like any invalid ranges-specifier.
			return 0, 0, rangeWhole
		}
		last = l
	}
	if first >= size {
		return 0, 0, rangeNone
	}
	if last >= size {
		last = size - 1
	}
	return first, last, rangePart
}

// rangePos reads a byte position: one digit or more, nothing else, capped at maxRangePos.
func rangePos(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if n < maxRangePos {
			n = n*10 + int64(c-'0')
		}
	}
	if n > maxRangePos {
		n = maxRangePos
	}
	return n, true
}

// ifRangeHolds evaluates If-Range against a stored answer's header (RFC 9110 section
// 13.1.5): true without the field; with an entity tag, when it is the stored ETag by strong
// comparison (a weak tag, asked or stored, never is); with a date, when it is the stored
// Last-Modified. Anything else, two field lines included, is false: the whole answer.
func ifRangeHolds(lines []string, stored http.Header) bool {
	switch len(lines) {
	case 0:
		return true
	case 1:
	default:
		return false
	}
	v := strings.TrimSpace(lines[0])
	if strings.HasPrefix(v, `"`) {
		return stored.Get("Etag") == v
	}
	if strings.HasPrefix(v, "W/") {
		return false
	}
	date, err := http.ParseTime(v)
	if err != nil {
		return false
	}
	lm, err := http.ParseTime(stored.Get("Last-Modified"))
	return err == nil && lm.Equal(date)
}

// itoa formats an int64 for header values.
func itoa(v int64) string { return strconv.FormatInt(v, 10) }
