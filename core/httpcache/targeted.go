package httpcache

import (
	"net/http"
	"strconv"
	"strings"
)

// Targeted cache-control fields: answer header fields that give one class of caches its own
// directives (RFC 9213). Weir's target list, most specific first:
//
//	Weir-Cache-Control   Weir alone (RFC 9213 section 2.1 lets a cache have a field of its own)
//	Surrogate-Control    the origin's own reverse proxies (W3C Edge Architecture 1.0)
//	CDN-Cache-Control    every CDN in the chain (RFC 9213 section 3)
//	Cache-Control        every cache, browsers included
//
// Surrogate-Control ranks above CDN-Cache-Control: it speaks to the surrogates that act for
// the origin, which Weir is, where CDN-Cache-Control speaks to every CDN in front of them and
// is forwarded to them; Fastly and Squid, which implement it, put it above Cache-Control too.
// The first of them that holds directives for Weir decides what Weir stores and for how long,
// and Cache-Control and Expires are then ignored (RFC 9213 section 2.1).
const (
	FieldWeirCacheControl = "Weir-Cache-Control"
	FieldSurrogateControl = "Surrogate-Control"
	// The canonical form of CDN-Cache-Control, as net/http keys it.
	FieldCDNCacheControl = "Cdn-Cache-Control"
	// FieldWeirPurgeUser on an answer asks Weir to drop every private entry of the user
	// whose request it answers (a logout): meant for Weir alone, as the two above.
	FieldWeirPurgeUser = "Weir-Purge-User"
)

// surrogateToken is the device token by which a Surrogate-Control directive is targeted at
// Weir (`max-age=60;weir`), announced on every fetch in Surrogate-Capability.
const surrogateToken = "weir"

// surrogateCapability is Weir's member of the Surrogate-Capability request field (Edge
// Architecture section 2.1): a surrogate that understands Surrogate-Control.
const surrogateCapability = surrogateToken + `="Surrogate/1.0"`

// noDirectives is what ParseCacheControl returns for a field without any directive Weir
// acts on.
var noDirectives = ParseCacheControl(nil)

// ResponseControl returns the directives an answer's header gives Weir: those of the first
// field of its target list that holds valid directives for it, else Cache-Control's. Every
// decision on an answer (storable, newEntry, sharing with followers) reads its directives
// here, so all of them agree.
func ResponseControl(h http.Header) Directives {
	// The common answer: one Cache-Control line and no targeted field.
	if lines := h["Cache-Control"]; len(lines) == 1 && h[FieldWeirCacheControl] == nil &&
		h[FieldSurrogateControl] == nil && h[FieldCDNCacheControl] == nil {
		return lineControl(lines[0])
	}
	return targetedControl(h)
}

// targetedControl is ResponseControl for every answer but the common one, in a function of
// its own: under Yaegi a call allocates a slot for every value of its callee's whole body
// (docs/yaegi.md).
func targetedControl(h http.Header) Directives {
	if lines := h[FieldWeirCacheControl]; len(lines) > 0 {
		if cc, ok := parseTargetedField(lines); ok {
			return cc
		}
	}
	if lines := h[FieldSurrogateControl]; len(lines) > 0 {
		if cc, ok := parseSurrogateControl(lines, surrogateToken); ok {
			return cc
		}
	}
	if lines := h[FieldCDNCacheControl]; len(lines) > 0 {
		if cc, ok := parseTargetedField(lines); ok {
			return cc
		}
	}
	return ParseCacheControl(h["Cache-Control"])
}

// WeirOnlyField tells whether a header field is meant for Weir alone, and so never leaves it:
// Weir-Cache-Control, Weir-Purge-User, and Surrogate-Control, which the surrogates that implement it (Fastly,
// Squid) remove once they have used it. CDN-Cache-Control is not: RFC 9213 section
// 3 has a CDN forward it to the CDNs in front of it. Answers stored, fetched, streamed, or
// written through statusWriter (other methods) lose them; answers passed through with the
// client's own writer (hit-for-pass, HEAD misses, a GET with a body or a Range, upgrades)
// keep them: removing them there would put a writer of Weir's, interpreted calls on every
// write, between the proxy and the client of each of those requests.
func WeirOnlyField(name string) bool {
	switch name {
	case FieldWeirCacheControl, FieldSurrogateControl, FieldWeirPurgeUser:
		return true
	}
	return false
}

// WithSurrogateCapability returns the Surrogate-Capability field lines of a fetch: those the
// request came with, and Weir's own (Edge Architecture section 2.1: each surrogate appends
// itself).
func WithSurrogateCapability(lines []string) []string {
	out := make([]string, 0, len(lines)+1)
	out = append(out, lines...)
	return append(out, surrogateCapability)
}

// parseSurrogateControl reads Surrogate-Control as Edge Architecture section 2.2 defines it:
// Cache-Control's syntax (names case-insensitive, as the caches that implement it read them),
// where a directive may name the surrogate it is for after a semicolon (`max-age=60;weir`,
// section 2.3).
// Directives targeted at token win over untargeted ones; directives targeted at another
// surrogate are ignored. The `+N` extension of max-age (`max-age=60+30`) is read as max-age
// alone. ok is false when no directive Weir acts on is left: Weir then reads the next field
// of its target list, so that `Surrogate-Control: content="ESI/1.0"` does not make an answer
// uncacheable.
func parseSurrogateControl(lines []string, token string) (Directives, bool) {
	var mine, all []string
	for _, line := range lines {
		for len(line) > 0 {
			var part string
			part, line = nextDirective(line)
			directive, target := splitTarget(part)
			if directive == "" {
				continue
			}
			directive = dropMaxAgeExtension(directive)
			if target == "" {
				all = append(all, directive)
				continue
			}
			if strings.EqualFold(target, token) {
				mine = append(mine, directive)
			}
		}
	}
	use := all
	if len(mine) > 0 {
		use = mine
	}
	cc := ParseCacheControl(use)
	if cc == noDirectives {
		return cc, false
	}
	cc.Targeted = true
	return cc, true
}

// splitTarget splits a Surrogate-Control directive from the device token after its last
// semicolon outside a quoted string.
func splitTarget(part string) (directive, target string) {
	inQuote := false
	cut := -1
	for i := 0; i < len(part); i++ {
		switch part[i] {
		case '"':
			inQuote = !inQuote
		case '\\':
			if inQuote {
				i++
			}
		case ';':
			if !inQuote {
				cut = i
			}
		}
	}
	if cut < 0 {
		return part, ""
	}
	return strings.TrimSpace(part[:cut]), strings.TrimSpace(part[cut+1:])
}

// dropMaxAgeExtension turns `max-age=60+30` into `max-age=60`: Weir does not use the
// extension after the plus (Edge Architecture section 2.2.3); stale-while-revalidate and
// stale-if-error say what Weir may do past max-age.
func dropMaxAgeExtension(directive string) string {
	eq := strings.IndexByte(directive, '=')
	if eq < 0 || !strings.EqualFold(strings.TrimSpace(directive[:eq]), "max-age") {
		return directive
	}
	if plus := strings.IndexByte(directive[eq:], '+'); plus > 0 {
		return directive[:eq+plus]
	}
	return directive
}

// parseTargetedField reads a targeted field (RFC 9213 section 2.2): a Structured Field
// Dictionary (RFC 8941 section 3.2) whose members are cache directives. ok is false when the
// field is empty or does not parse: it is then ignored, as if absent. Each member is mapped
// back to a Cache-Control directive and read by ParseCacheControl, so that every directive
// Weir knows means the same in every field: an Integer is the directive's value, Boolean
// true a directive without value, Boolean false no directive, and any other value (a
// String, a Token, a Decimal...) a quoted one, which an age directive reads as malformed
// (stale) and private or no-cache as present. Parameters are ignored; a key given twice
// keeps its last value (RFC 8941 section 4.2.2).
func parseTargetedField(lines []string) (Directives, bool) {
	members, ok := parseDictionary(strings.Join(lines, ", "))
	if !ok || len(members) == 0 {
		return noDirectives, false
	}
	directives := make([]string, 0, len(members))
	for _, m := range members {
		switch m.kind {
		case sfFalse:
		case sfTrue:
			directives = append(directives, m.key)
		case sfInteger:
			directives = append(directives, m.key+"="+strconv.FormatInt(m.n, 10))
		default:
			directives = append(directives, m.key+`="?"`)
		}
	}
	cc := ParseCacheControl(directives)
	cc.Targeted = true
	return cc, true
}

// The kinds of a dictionary member's value that parseTargetedField tells apart.
const (
	sfOther = iota
	sfTrue
	sfFalse
	sfInteger
)

// sfMember is one member of a Structured Field Dictionary.
type sfMember struct {
	key  string
	kind int
	// n is an Integer's value.
	n int64
}

// sfParser walks a field value by the parsing algorithms of RFC 8941 section 4.2.
type sfParser struct {
	s string
	i int
}

// parseDictionary parses a Dictionary (RFC 8941 section 4.2.2). ok is false on any error.
func parseDictionary(s string) ([]sfMember, bool) {
	var members []sfMember
	p := &sfParser{s: strings.Trim(s, " ")}
	for p.i < len(p.s) {
		key, ok := p.key()
		if !ok {
			return nil, false
		}
		m := sfMember{key: key, kind: sfTrue}
		if p.i < len(p.s) && p.s[p.i] == '=' {
			p.i++
			v, ok := p.itemOrInnerList(key)
			if !ok {
				return nil, false
			}
			m = v
		} else if !p.parameters() {
			return nil, false
		}
		members = putMember(members, m)
		p.ows()
		if p.i == len(p.s) {
			return members, true
		}
		if p.s[p.i] != ',' {
			return nil, false
		}
		p.i++
		p.ows()
		if p.i == len(p.s) {
			// A trailing comma.
			return nil, false
		}
	}
	return members, true
}

// putMember adds m, replacing a member with the same key in place.
func putMember(members []sfMember, m sfMember) []sfMember {
	for i := range members {
		if members[i].key == m.key {
			members[i] = m
			return members
		}
	}
	return append(members, m)
}

// ows skips optional white space: spaces and tabs.
func (p *sfParser) ows() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

// key parses a key: lcalpha or "*", then lcalpha, digits, "_", "-", "." or "*".
func (p *sfParser) key() (string, bool) {
	start := p.i
	if p.i >= len(p.s) || !(isLower(p.s[p.i]) || p.s[p.i] == '*') {
		return "", false
	}
	p.i++
	for p.i < len(p.s) {
		c := p.s[p.i]
		if !isLower(c) && !isDigit(c) && c != '_' && c != '-' && c != '.' && c != '*' {
			break
		}
		p.i++
	}
	return p.s[start:p.i], true
}

// itemOrInnerList parses a member's value and its parameters.
func (p *sfParser) itemOrInnerList(key string) (sfMember, bool) {
	m := sfMember{key: key, kind: sfOther}
	if p.i < len(p.s) && p.s[p.i] == '(' {
		p.i++
		for {
			for p.i < len(p.s) && p.s[p.i] == ' ' {
				p.i++
			}
			if p.i >= len(p.s) {
				return m, false
			}
			if p.s[p.i] == ')' {
				p.i++
				return m, p.parameters()
			}
			if _, ok := p.bareItem(&m); !ok || !p.parameters() {
				return m, false
			}
			if p.i >= len(p.s) || (p.s[p.i] != ' ' && p.s[p.i] != ')') {
				return m, false
			}
		}
	}
	kind, ok := p.bareItem(&m)
	if !ok {
		return m, false
	}
	m.kind = kind
	return m, p.parameters()
}

// parameters parses the parameters after an item or a key, which Weir ignores.
func (p *sfParser) parameters() bool {
	for p.i < len(p.s) && p.s[p.i] == ';' {
		p.i++
		for p.i < len(p.s) && p.s[p.i] == ' ' {
			p.i++
		}
		if _, ok := p.key(); !ok {
			return false
		}
		if p.i < len(p.s) && p.s[p.i] == '=' {
			p.i++
			var ignored sfMember
			if _, ok := p.bareItem(&ignored); !ok {
				return false
			}
		}
	}
	return true
}

// bareItem parses an Integer, Decimal, String, Token, Byte Sequence or Boolean, storing an
// Integer's value in m.n, and reports its kind.
func (p *sfParser) bareItem(m *sfMember) (int, bool) {
	if p.i >= len(p.s) {
		return sfOther, false
	}
	c := p.s[p.i]
	switch {
	case c == '-' || isDigit(c):
		return p.number(m)
	case c == '"':
		return sfOther, p.str()
	case c == '*' || isAlpha(c):
		p.i++
		for p.i < len(p.s) && (isTchar(p.s[p.i]) || p.s[p.i] == ':' || p.s[p.i] == '/') {
			p.i++
		}
		return sfOther, true
	case c == ':':
		p.i++
		for p.i < len(p.s) && p.s[p.i] != ':' {
			b := p.s[p.i]
			if !isAlpha(b) && !isDigit(b) && b != '+' && b != '/' && b != '=' {
				return sfOther, false
			}
			p.i++
		}
		if p.i >= len(p.s) {
			return sfOther, false
		}
		p.i++
		return sfOther, true
	case c == '?':
		if p.i+1 >= len(p.s) {
			return sfOther, false
		}
		b := p.s[p.i+1]
		p.i += 2
		switch b {
		case '1':
			return sfTrue, true
		case '0':
			return sfFalse, true
		}
		return sfOther, false
	}
	return sfOther, false
}

// number parses an Integer (at most 15 digits) or a Decimal (at most 12 digits, a dot, one
// to three digits).
func (p *sfParser) number(m *sfMember) (int, bool) {
	neg := false
	if p.s[p.i] == '-' {
		neg = true
		p.i++
	}
	start := p.i
	for p.i < len(p.s) && isDigit(p.s[p.i]) {
		p.i++
	}
	digits := p.i - start
	if digits == 0 {
		return sfOther, false
	}
	if p.i < len(p.s) && p.s[p.i] == '.' {
		if digits > 12 {
			return sfOther, false
		}
		p.i++
		fracStart := p.i
		for p.i < len(p.s) && isDigit(p.s[p.i]) {
			p.i++
		}
		if frac := p.i - fracStart; frac < 1 || frac > 3 {
			return sfOther, false
		}
		return sfOther, true
	}
	if digits > 15 {
		return sfOther, false
	}
	n, err := strconv.ParseInt(p.s[start:p.i], 10, 64)
	if err != nil {
		return sfOther, false
	}
	if neg {
		n = -n
	}
	m.n = n
	return sfInteger, true
}

// str parses a String: printable ASCII between quotes, with \" and \\ as the only escapes.
func (p *sfParser) str() bool {
	p.i++
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '"':
			return true
		case c == '\\':
			if p.i >= len(p.s) || (p.s[p.i] != '"' && p.s[p.i] != '\\') {
				return false
			}
			p.i++
		case c < 0x20 || c > 0x7e:
			return false
		}
	}
	return false
}

func isLower(c byte) bool { return c >= 'a' && c <= 'z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isAlpha(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

// isTchar tells a token character (RFC 9110 section 5.6.2).
func isTchar(c byte) bool {
	if isAlpha(c) || isDigit(c) {
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}
