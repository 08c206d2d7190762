package setting

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// Errors of ParsePattern and ParseDays, which callers wrap with the field and the value.
var (
	// ErrPattern marks a path pattern outside the grammar (Pattern).
	ErrPattern = errors.New("must be a path such as \"/static/\", \"/blog/*.html\" or a suffix such as \"*.js\"")
	// ErrDuration marks a duration ParseDays cannot read.
	ErrDuration = errors.New("is not a duration such as \"10s\", \"1h\" or \"1d\"")
)

// What a Pattern matches.
const (
	// patternUnder: Dir and every path under it, segment by segment.
	patternUnder = iota
	// patternSuffix: any path whose last segment ends in Tail.
	patternSuffix
	// patternGlob: a path that is Dir and one more segment, which starts with Lead and ends
	// with Tail.
	patternGlob
)

// Pattern is a path pattern an operator wrote (cache.paths, cache.ttls), parsed once by
// ParsePattern and matched by MatchPattern. The grammar, matched against a path (no
// query), case-sensitive, byte for byte, on segment boundaries:
//
//   - "/static", "/static/" and "/static/*" are the same pattern: "/static" and every path
//     under it ("/static/", "/static/app.js", "/static/css/a.css"), not "/staticfiles",
//     as UnderPrefix matches a prefix. "/" and "/*" match every path.
//   - "*.js" (a "*" first, then a suffix without "/"): any path whose last segment ends in
//     ".js" ("/app.js", "/a/b/app.js"), not "/a.js/b" nor "/a.js/".
//   - "/blog/*.html" (a "*" inside the last segment): a path of exactly one more segment
//     under "/blog/" that starts with what stands before the "*" and ends with what stands
//     after it ("/blog/post.html"), not "/blog/2024/post.html".
//
// A "*" matches any run of bytes within one segment, none included; a pattern holds at
// most one, in its last segment. Spaces, "?", "#" and "," are refused (a list in a label
// is comma-separated), as is "*" alone: "/" says every path.
type Pattern struct {
	// Text is the pattern as written.
	Text string
	kind int
	// dir is the path the pattern is under: for patternUnder without its trailing slash
	// ("" for "/"); for patternGlob with it ("/blog/").
	dir string
	// lead and tail stand before and after the "*" of patternGlob; tail alone is
	// patternSuffix's.
	lead string
	tail string
}

// ParsePattern reads one path pattern (Pattern's grammar). Its error is ErrPattern, which
// the caller wraps with the field and the value.
func ParsePattern(s string) (Pattern, error) {
	p := Pattern{Text: s}
	if s == "" || strings.ContainsAny(s, " \t\r\n?#,") {
		return p, ErrPattern
	}
	star := strings.IndexByte(s, '*')
	if star >= 0 && strings.IndexByte(s[star+1:], '*') >= 0 {
		return p, ErrPattern
	}
	if s[0] == '*' {
		tail := s[1:]
		if tail == "" || strings.IndexByte(tail, '/') >= 0 {
			return p, ErrPattern
		}
		p.kind = patternSuffix
		p.tail = tail
		return p, nil
	}
	if s[0] != '/' {
		return p, ErrPattern
	}
	if star < 0 {
		p.kind = patternUnder
		p.dir = strings.TrimSuffix(s, "/")
		return p, nil
	}
	slash := strings.LastIndexByte(s, '/')
	if slash > star {
		// The "*" stands in a segment before the last.
		return p, ErrPattern
	}
	if s[slash+1:] == "*" {
		p.kind = patternUnder
		p.dir = s[:slash]
		return p, nil
	}
	p.kind = patternGlob
	p.dir = s[:slash+1]
	p.lead = s[slash+1 : star]
	p.tail = s[star+1:]
	return p, nil
}

// MatchPattern returns the index of the first of patterns that path matches, or -1 when it
// matches none. It runs on the way to the origin, never on the hit path; it compares the
// strings in place, allocating nothing compiled, and takes the whole list for one call's
// frame under Yaegi, as UnderPrefix does. An empty path has no segment: only "/" (and
// "/*") match it.
func MatchPattern(path string, patterns []Pattern) int {
	for i := range patterns {
		p := &patterns[i]
		if p.kind == patternUnder {
			n := len(p.dir)
			if len(path) >= n && path[:n] == p.dir && (len(path) == n || path[n] == '/') {
				return i
			}
			continue
		}
		last := path[strings.LastIndexByte(path, '/')+1:]
		if p.kind == patternSuffix {
			if strings.HasSuffix(last, p.tail) && len(path) > len(last) {
				return i
			}
			continue
		}
		if len(path) == len(p.dir)+len(last) && path[:len(p.dir)] == p.dir &&
			len(last) >= len(p.lead)+len(p.tail) && strings.HasPrefix(last, p.lead) && strings.HasSuffix(last, p.tail) {
			return i
		}
	}
	return -1
}

// day is ParseDays' unit "d".
const day = 24 * time.Hour

// ParseDays reads a Go duration ("90s", "1h30m") that may also count days, "d" being 24
// hours ("1d", "7d", "1.5d", "1d12h"), written first as the largest unit. It refuses a
// negative duration and one past time.Duration's range. Its error is ErrDuration.
func ParseDays(s string) (time.Duration, error) {
	i := strings.IndexByte(s, 'd')
	if i < 0 {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return 0, ErrDuration
		}
		return d, nil
	}
	n, err := strconv.ParseFloat(s[:i], 64)
	// ParseFloat takes what a duration's number does not: signs, exponents, hex, "Inf".
	if err != nil || i == 0 || strings.IndexFunc(s[:i], notDecimal) >= 0 || n > maxDays {
		return 0, ErrDuration
	}
	days := time.Duration(n * float64(day))
	if i+1 == len(s) {
		return days, nil
	}
	rest, err := time.ParseDuration(s[i+1:])
	if err != nil || rest < 0 || s[i+1] == '+' || rest > time.Duration(1<<63-1)-days {
		return 0, ErrDuration
	}
	return days + rest, nil
}

// maxDays is the most days a time.Duration holds, with room for the rest of the value.
const maxDays = 100000

// notDecimal tells the runes a duration's number may not hold.
func notDecimal(r rune) bool {
	return (r < '0' || r > '9') && r != '.'
}
