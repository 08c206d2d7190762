package core

import (
	"net/http"
	"net/textproto"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/weirproxy/weir/core/store"
)

// keyer turns requests into cache keys: scheme, host, path and query, with the operator's
// tracking parameters dropped and the others in a stable order, so that `?a=1&b=2` and
// `?b=2&a=1` share one entry. Request headers outside the key (X-Forwarded-Host,
// X-Original-URL and the like) never reach it: only what the origin routes on does.
type keyer struct {
	// drop holds the query parameter names left out of the key, raw and decoded.
	drop map[string]bool
}

func newKeyer(queryDrop []string) keyer {
	k := keyer{}
	if len(queryDrop) > 0 {
		k.drop = make(map[string]bool, len(queryDrop))
		for _, name := range queryDrop {
			k.drop[name] = true
		}
	}
	return k
}

// partition is the part of a key without the query: the unit that the limiter and the
// miss-rate detector count by. The host is taken as the client sent it: case variants of a
// host are distinct keys, which costs a miss, never a wrong answer, and keeps the hit path
// free of a lowercasing.
func partition(r *http.Request) string {
	path := requestPath(r)
	if r.TLS == nil {
		return "http://" + r.Host + path
	}
	return "https://" + r.Host + path
}

// partitionOf is the partition of a cache key: the key up to its query.
func partitionOf(key string) string {
	if i := strings.IndexByte(key, '?'); i >= 0 {
		return key[:i]
	}
	return key
}

// requestPath is the path as the client escaped it. It comes from RequestURI, which Traefik's
// path-rewriting middlewares (stripPrefix, replacePath) keep in step with URL, so the hit
// path can use RequestURI whole for a request without a query; from URL's escaped form when
// RequestURI is not in origin form. Escaped, /a%252Fb and /a%2Fb stay two keys.
func requestPath(r *http.Request) string {
	ru := r.RequestURI
	if len(ru) > 0 && ru[0] == '/' {
		if i := strings.IndexByte(ru, '?'); i >= 0 {
			return ru[:i]
		}
		return ru
	}
	return r.URL.EscapedPath()
}

// key returns the cache key of r: its partition and its normalised query. ServeHTTP builds
// the same key inline for requests without a query.
func (k keyer) key(r *http.Request) string {
	part := partition(r)
	if r.URL.RawQuery == "" {
		return part
	}
	q := k.normalizeQuery(r.URL.RawQuery)
	if q == "" {
		return part
	}
	return part + "?" + q
}

// normalizeQuery drops empty and dropped parameters and sorts the rest. Parameters keep their
// encoding: two spellings of one value stay two keys, which costs a miss, never a wrong hit.
func (k keyer) normalizeQuery(q string) string {
	if k.drop == nil && strings.IndexByte(q, '&') < 0 {
		return q
	}
	parts := strings.Split(q, "&")
	kept := parts[:0]
	for _, p := range parts {
		if p == "" || k.dropped(p) {
			continue
		}
		kept = append(kept, p)
	}
	// A stable sort keeps repeated parameters (`a=2&a=1`) in their order: for most origins
	// that order is meaningful.
	sort.SliceStable(kept, func(i, j int) bool { return paramName(kept[i]) < paramName(kept[j]) })
	return strings.Join(kept, "&")
}

func (k keyer) dropped(param string) bool {
	if k.drop == nil {
		return false
	}
	name := paramName(param)
	if k.drop[name] {
		return true
	}
	if strings.IndexByte(name, '%') >= 0 || strings.IndexByte(name, '+') >= 0 {
		if dec, err := url.QueryUnescape(name); err == nil && k.drop[dec] {
			return true
		}
	}
	return false
}

func paramName(param string) string {
	if i := strings.IndexByte(param, '='); i >= 0 {
		return param[:i]
	}
	return param
}

// parseVary returns the canonical field names of a response's Vary lines, and whether one
// of them is "*", which no request matches (RFC 9111 section 4.1).
func parseVary(lines []string) (names []string, star bool) {
	for _, line := range lines {
		for _, f := range strings.Split(line, ",") {
			f = strings.TrimSpace(f)
			if f == "" {
				continue
			}
			if f == "*" {
				return nil, true
			}
			names = append(names, textproto.CanonicalMIMEHeaderKey(f))
		}
	}
	return names, false
}

// generationKey is the base of the variant keys of an index entry: the primary key and the
// index's generation.
func generationKey(key string, idx *store.Entry) string {
	return key + "\x00g" + strconv.FormatInt(idx.Born.UnixNano(), 36)
}

func sameNames(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// variantKey is the key of the variant that r selects among the answers of key varying on
// names. Values are normalised by dropping white space, which RFC 9111 section 4.1 allows.
func variantKey(key string, names []string, r *http.Request) string {
	var b strings.Builder
	b.WriteString(key)
	b.WriteString("\x00vary")
	for _, name := range names {
		b.WriteByte('\x00')
		b.WriteString(name)
		b.WriteByte(':')
		vals := r.Header[name]
		for i, v := range vals {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strings.Join(strings.Fields(v), ""))
		}
	}
	return b.String()
}
