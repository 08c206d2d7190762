// Package hostkey reduces a request's Host to the one key Weir's protections count it under.
//
// Traefik routes EXAMPLE.com, example.com., example.com:1 and Example.COM:8080 to the same
// router and the same origin: host names compare without regard to case (RFC 9110 section
// 4.2.3), a trailing dot names the same DNS name, and the port is not in a Host rule. A
// limiter, a budget or a detector keyed on the Host as the client wrote it would give each
// spelling a bucket of its own, and a flood that varied the spelling would pass every
// per-host cap. Canonical gives them one key.
//
// The cache key is not such a key: it keeps the Host as sent (core/httpcache), so that an
// answer fetched for one spelling never answers another, which the origin may treat apart.
//
// The package knows nothing of HTTP beyond the Host's syntax and imports only the standard
// library.
package hostkey

import (
	"net/netip"
	"strings"
)

// MaxLen is the longest key Canonical returns as a name: the longest DNS name in its text
// form (RFC 1035 section 2.3.4, 255 bytes on the wire). Anything longer is no name an origin
// answers to, and has the one key Long.
const MaxLen = 253

// Long is the key of every host longer than MaxLen once its port and trailing dots are gone:
// one bucket for them all, so that a client cannot make keys as long as the header limit
// allows, nor a new one with each request. No host holds '<'.
const Long = "<long>"

// Suspect holds the bytes after which a host may not be in canonical form: upper-case
// letters, the port's colon and an IPv6 literal's colons and bracket. A host holding none of
// them, no longer than MaxLen and not ending in a dot is its own key: a caller on a hot path
// may test that itself, with one call into strings, rather than pay an interpreted call to
// Canonical under Yaegi.
const Suspect = "ABCDEFGHIJKLMNOPQRSTUVWXYZ:["

// Canonical returns host's key: ASCII lower case, without port or trailing dots, an IPv4
// address in dotted form (an IPv4-mapped IPv6 address too), an IPv6 address in its shortest
// form between brackets ("[::1]:80" and "::1" give "[::1]"), and Long for a name longer than
// MaxLen. What it cannot make sense of is kept, lower-cased, so that an odd host still gets a
// key of its own. Applied to its own result, it returns that result.
//
// A host already in canonical form is returned as is, without allocating: it is on the path
// of every request that reaches a protection, and Yaegi runs it (one call into strings).
func Canonical(host string) string {
	n := len(host)
	if n == 0 || n <= MaxLen && host[n-1] != '.' && strings.IndexAny(host, Suspect) < 0 {
		return host
	}
	return canonicalSlow(host)
}

// canonicalSlow is Canonical for a host that may not be canonical. It finds the name's
// bounds on the host as sent, which case does not change, so that a host longer than MaxLen
// costs no copy.
func canonicalSlow(h string) string {
	if h[0] == '[' {
		if end := strings.IndexByte(h, ']'); end > 0 {
			lit := h[:end+1]
			if a, err := netip.ParseAddr(h[1:end]); err == nil && a.Zone() == "" {
				return addrKey(a, lit)
			}
			// Not an address, or one with a zone: kept whole, lower-cased.
			return capped(lit)
		}
	}
	switch strings.Count(h, ":") {
	case 0:
	case 1:
		// host:port
		h = h[:strings.IndexByte(h, ':')]
	default:
		// Several colons and no brackets: a bare IPv6 literal, which carries no port.
		if a, err := netip.ParseAddr(strings.TrimRight(h, ".")); err == nil && a.Zone() == "" {
			return addrKey(a, "")
		}
	}
	return capped(strings.TrimRight(h, "."))
}

// addrKey is the key of address a, written lit ("[...]", or "" when it came bare): lit
// itself when it already is that key.
func addrKey(a netip.Addr, lit string) string {
	if a.Is4() || a.Is4In6() {
		return a.Unmap().String()
	}
	var buf [48]byte
	b := a.AppendTo(buf[:0])
	if len(lit) == len(b)+2 && lit[1:len(lit)-1] == string(b) {
		return lit
	}
	return "[" + string(b) + "]"
}

// capped is name lower-cased, or Long when it is longer than MaxLen.
func capped(name string) string {
	if len(name) > MaxLen {
		return Long
	}
	return lowerASCII(name)
}

// lowerASCII lower-cases ASCII letters only: host names on the wire are ASCII and compared
// case-insensitively (RFC 9110 section 4.2.3); other bytes are left alone, so the result is
// stable when applied again. s is returned as is when it holds no upper-case letter.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
