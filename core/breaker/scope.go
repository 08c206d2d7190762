package breaker

import (
	"fmt"
	"sort"
	"strings"

	"github.com/weirproxy/weir/core/hostkey"
	"github.com/weirproxy/weir/core/setting"
)

// secondLevels are second-level labels under which, beneath a two-letter country code,
// registries hand out names: example.co.uk, example.com.au, example.ac.jp.
var secondLevels = map[string]bool{
	"co": true, "com": true, "net": true, "org": true, "gov": true, "edu": true, "ac": true,
}

// ScopeKey returns the key of the breaker that guards fetches to host under scope:
//
//   - ScopeEngine (and any value other than those below): "", one breaker for the engine.
//   - ScopeHost, and the empty scope (the default, as in ParseScope): the host's canonical
//     key, as every protection counts it (hostkey.Canonical): ASCII lower case, without port
//     or trailing dots; an IPv4 literal as is, an IPv6 literal in its shortest form between
//     brackets ("[2001:db8::1]").
//   - ScopeDomain: the registrable domain of the host, so that a.example.co.uk and
//     b.example.co.uk share one breaker. IP literals, and names whose last label is all
//     digits, are kept whole. Otherwise the key is the last two labels, or the last three
//     when the name looks like it sits under a country's second level: the last label is
//     two ASCII letters (a country code) and the label before it is two ASCII letters or one
//     of co, com, net, org, gov, edu, ac (example.co.uk, example.com.au, example.ne.jp).
//
// The domain rule is a heuristic standing in for the Public Suffix List, which Weir does not
// carry: it is right for generic top-level domains and the common country second levels, and
// wrong for the rest in a harmless way: a breaker guards a little more or a little less than
// one registrant's names (shop.ab.de is taken to sit under a second level "ab").
//
// Applied to its own result, ScopeKey returns the same key.
func ScopeKey(scope, host string) string {
	switch scope {
	case ScopeHost, "":
		return hostkey.Canonical(host)
	case ScopeDomain:
		return domainKey(hostkey.Canonical(host))
	}
	return ""
}

// domainKey returns the registrable domain of a host already in canonical form
// (hostkey.Canonical).
func domainKey(h string) string {
	// Colons or brackets: an IP literal, or no domain name at all.
	if strings.ContainsAny(h, ":[]") {
		return h
	}
	last := strings.LastIndexByte(h, '.')
	if last < 0 || allDigits(h[last+1:]) {
		return h
	}
	second := strings.LastIndexByte(h[:last], '.')
	if second < 0 {
		return h
	}
	tld := h[last+1:]
	sld := h[second+1 : last]
	if !(isCountryCode(tld) && (isCountryCode(sld) || secondLevels[sld])) {
		return h[second+1:]
	}
	third := strings.LastIndexByte(h[:second], '.')
	if third < 0 {
		return h
	}
	return h[third+1:]
}

// isCountryCode reports whether s is two ASCII letters.
func isCountryCode(s string) bool {
	return len(s) == 2 && s[0] >= 'a' && s[0] <= 'z' && s[1] >= 'a' && s[1] <= 'z'
}

// allDigits reports whether s is one or more ASCII digits.
func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// MaxPaths bounds breaker.paths: each request's path is compared with every prefix.
const MaxPaths = 64

// ParsePaths checks the path prefixes of breaker.paths, each of which gives the requests
// under it a breaker of their own within their scope (PathKey), and returns them longest
// first, the order PathKey tries them in. Each must begin with "/", hold no space, query or
// fragment, and be given once; "/" alone is every path, which the scope's own breaker
// already guards. Errors name the entry and wrap ErrInvalidSetting.
func ParsePaths(list []string) ([]string, error) {
	if len(list) > MaxPaths {
		return nil, fmt.Errorf("breaker.paths: %d prefixes, want at most %d: %w", len(list), MaxPaths, ErrInvalidSetting)
	}
	out := make([]string, 0, len(list))
	for i, p := range list {
		if !strings.HasPrefix(p, "/") || p == "/" || strings.ContainsAny(p, " \t?#") {
			return nil, fmt.Errorf("breaker.paths[%d]: %q must be a path prefix such as /search: %w", i, p, ErrInvalidSetting)
		}
		for j, q := range list[:i] {
			if strings.TrimSuffix(q, "/") == strings.TrimSuffix(p, "/") {
				return nil, fmt.Errorf("breaker.paths[%d]: %q is breaker.paths[%d] again: %w", i, p, j, ErrInvalidSetting)
			}
		}
		out = append(out, p)
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out, nil
}

// PathKey returns the key of the breaker for a request to path whose scope key is key: key
// with the longest of prefixes (as ParsePaths returns them) that path falls under appended,
// "api.example.com/search", or key itself when it falls under none. A path falls under a
// prefix segment by segment (setting.UnderPrefix): "/search" holds "/search" and
// "/search/x", not "/searchlight"; "/search/" holds the same.
func PathKey(key string, prefixes []string, path string) string {
	if i := setting.UnderPrefix(path, prefixes); i >= 0 {
		return key + prefixes[i]
	}
	return key
}

// ScopePathKey is ScopeKey for a key that may carry a breaker.paths prefix (PathKey), as an
// operator names a breaker: the part before the path is reduced to scope's key, the path
// kept.
func ScopePathKey(scope, key string) string {
	host, path := SplitPathKey(key)
	return ScopeKey(scope, host) + path
}

// SplitPathKey returns the scope key and the path prefix of a key PathKey made, the prefix
// empty for a scope's own breaker's: a key's path begins at its first "/", which no host
// holds.
func SplitPathKey(key string) (string, string) {
	if i := strings.IndexByte(key, '/'); i >= 0 {
		return key[:i], key[i:]
	}
	return key, ""
}
