package httpcache

import (
	"strconv"
	"strings"
)

// maxDeltaSeconds caps delta-seconds values: RFC 9111 section 1.2.2 lets a cache treat any
// larger value as 2^31.
const maxDeltaSeconds = 1 << 31

// Directives holds the cache directives Weir acts on (RFC 9111 section 5.2), read from a
// request's or an answer's Cache-Control or from a targeted field (RFC 9213). Ages are in
// seconds; -1 means the directive is absent.
type Directives struct {
	NoStore, NoCache, Private, Public  bool
	MustRevalidate, ProxyRevalidate    bool
	MustUnderstand                     bool
	MaxAge, SMaxAge                    int64
	StaleWhileRevalidate, StaleIfError int64
	// Invalid is set when a directive that bounds freshness is malformed or repeated with
	// different values; the answer is then treated as stale (RFC 9111 section 4.2.1).
	Invalid bool
	// Targeted marks directives read from a targeted field (targeted.go): Expires is then
	// ignored, as Cache-Control is (RFC 9213 section 2.1).
	Targeted bool
}

// ParseCacheControl reads every Cache-Control field line of a request or an answer. It is conservative with malformed
// input: an unparsable age makes the answer stale, a qualified private or no-cache
// (`private="Set-Cookie"`) counts as the unqualified directive.
func ParseCacheControl(lines []string) Directives {
	cc := Directives{MaxAge: -1, SMaxAge: -1, StaleWhileRevalidate: -1, StaleIfError: -1}
	for _, line := range lines {
		for len(line) > 0 {
			var part string
			part, line = nextDirective(line)
			name, value := part, ""
			if i := strings.IndexByte(part, '='); i >= 0 {
				name, value = strings.TrimSpace(part[:i]), strings.TrimSpace(part[i+1:])
			}
			switch strings.ToLower(name) {
			case "no-store":
				cc.NoStore = true
			case "no-cache":
				cc.NoCache = true
			case "private":
				cc.Private = true
			case "public":
				cc.Public = true
			case "must-revalidate":
				cc.MustRevalidate = true
			case "proxy-revalidate":
				cc.ProxyRevalidate = true
			case "must-understand":
				cc.MustUnderstand = true
			case "max-age":
				cc.MaxAge = cc.age(cc.MaxAge, value)
			case "s-maxage":
				cc.SMaxAge = cc.age(cc.SMaxAge, value)
			case "stale-while-revalidate":
				cc.StaleWhileRevalidate = cc.age(cc.StaleWhileRevalidate, value)
			case "stale-if-error":
				cc.StaleIfError = cc.age(cc.StaleIfError, value)
			}
		}
	}
	return cc
}

// nextDirective splits off the first comma-separated directive, keeping commas inside a
// quoted string (`no-cache="a, b"`) with the directive.
func nextDirective(s string) (part, rest string) {
	i := unquotedIndex(s, ',')
	if i < 0 {
		return strings.TrimSpace(s), ""
	}
	return strings.TrimSpace(s[:i]), s[i+1:]
}

// unquotedIndex is the index of the first c in s outside a quoted string, where a backslash
// escapes the next byte (RFC 9110 section 5.6.4), or -1.
func unquotedIndex(s string, c byte) int {
	inQuote := false
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			inQuote = !inQuote
		} else if s[i] == '\\' && inQuote {
			i++
		} else if s[i] == c && !inQuote {
			return i
		}
	}
	return -1
}

// age parses a delta-seconds value for a directive already seen as prev. A malformed value,
// or a repeat with another value, marks the whole header invalid and reads as zero.
func (cc *Directives) age(prev int64, value string) int64 {
	v, ok := ParseDeltaSeconds(value)
	if !ok || (prev >= 0 && prev != v) {
		cc.Invalid = true
		return 0
	}
	return v
}

// ParseDeltaSeconds reads a non-negative integer of seconds, quoted or not (RFC 9111
// section 5.2 allows both forms on the wire), capped at 2^31. ok is false for anything
// else.
func ParseDeltaSeconds(s string) (int64, bool) {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	if s == "" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	if len(s) > 10 {
		return maxDeltaSeconds, true
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, false
	}
	if v > maxDeltaSeconds {
		v = maxDeltaSeconds
	}
	return v, true
}
