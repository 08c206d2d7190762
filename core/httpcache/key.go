package httpcache

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/textproto"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/weirproxy/weir/core/entry"
	"github.com/weirproxy/weir/core/hostkey"
)

// Keyer turns requests into cache keys: scheme, host, path and query, with the operator's
// tracking parameters dropped and the others in a stable order, so that `?a=1&b=2` and
// `?b=2&a=1` share one entry. Request headers outside the key (X-Forwarded-Host,
// X-Original-URL and the like) never reach it: only what the origin routes on does.
type Keyer struct {
	// drop holds the query parameter names left out of the key, raw and decoded.
	drop map[string]bool
}

// NewKeyer returns the Keyer that leaves the query parameters named in queryDrop out of
// every key (the operator's key.queryDrop).
func NewKeyer(queryDrop []string) Keyer {
	k := Keyer{}
	if len(queryDrop) > 0 {
		k.drop = make(map[string]bool, len(queryDrop))
		for _, name := range queryDrop {
			k.drop[name] = true
		}
	}
	return k
}

// Partition is r's partition: the unit the limiter and the miss-rate detector count by,
// scheme, host and path without the query, with the host in canonical form
// (hostkey.Canonical), so that EXAMPLE.com, example.com. and example.com:1, which Traefik
// routes alike, share one partition and one share of the origin's slots. The cache key does
// not: it keeps the host as sent (Keyer.Key).
func Partition(r *http.Request) string {
	path := requestPath(r)
	host := hostkey.Canonical(r.Host)
	if r.TLS == nil {
		return "http://" + host + path
	}
	return "https://" + host + path
}

// PartitionOf is the partition of a cache key: the key up to its query, with its host in
// canonical form, as Partition makes it for the key's request. A key whose host is already
// canonical gives a part of itself, without a copy.
func PartitionOf(key string) string {
	head, host, path := SplitKey(key)
	if c := hostkey.Canonical(host); c != host {
		return head + c + path
	}
	return key[:len(head)+len(host)+len(path)]
}

// SplitKey splits a cache key into what stands before its host ("http://"), its host as the
// key holds it (as the client sent it) and its path, escaped as sent, without the query.
// The host runs from the scheme's "//" to the path's "/": a Host holds neither. A key
// without "//" is all head.
func SplitKey(key string) (head, host, path string) {
	if i := strings.IndexByte(key, '?'); i >= 0 {
		key = key[:i]
	}
	start := strings.Index(key, "//")
	if start < 0 {
		return key, "", ""
	}
	start += 2
	end := len(key)
	if i := strings.IndexByte(key[start:], '/'); i >= 0 {
		end = start + i
	}
	// Each part in a variable of its own before the return: Yaegi v0.16.1 returns the first
	// of a variable and a builtin's result twice (docs/yaegi.md); slices alone come back right,
	// but nothing here should rest on which forms do.
	h := key[:start]
	n := key[start:end]
	p := key[end:]
	return h, n, p
}

// keyPartition is the cache key's part without the query: scheme, host as sent and path.
// The host is taken as the client sent it: an answer built for example.com:1 is never
// served to example.com, which the origin may answer otherwise; spellings of a host cost a
// miss each, never a wrong answer, and the hit path is spared a lowercasing.
func keyPartition(r *http.Request) string {
	path := requestPath(r)
	if r.TLS == nil {
		return "http://" + r.Host + path
	}
	return "https://" + r.Host + path
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

// Key returns the cache key of r under k: its scheme, its host as sent, its path and its
// normalised query. The engine's hit path builds the same key inline for requests without a
// query, from RequestURI whole. A function, not a method of Keyer: every miss calls it, and
// under Yaegi a method call goes through a reflective wrapper (docs/yaegi.md).
//
// `/p?` and `/p` are two keys: RFC 3986 section 6.2.3 keeps an empty query apart from none,
// and an origin may answer them differently. Only the operator's key.queryDrop may make a
// query vanish from the key.
func Key(k *Keyer, r *http.Request) string {
	part := keyPartition(r)
	if r.URL.RawQuery == "" {
		if r.URL.ForceQuery || strings.IndexByte(r.RequestURI, '?') >= 0 {
			return part + "?"
		}
		return part
	}
	q, dropped := normalizeQuery(k, r.URL.RawQuery)
	if q == "" && dropped {
		return part
	}
	return part + "?" + q
}

// normalizeQuery drops empty and dropped parameters and sorts the rest; dropped reports
// whether key.queryDrop removed one. Parameters keep their encoding: two spellings of one
// value stay two keys, which costs a miss, never a wrong hit.
func normalizeQuery(k *Keyer, q string) (norm string, dropped bool) {
	if k.drop == nil && strings.IndexByte(q, '&') < 0 {
		return q, false
	}
	parts := strings.Split(q, "&")
	kept := parts[:0]
	for _, p := range parts {
		if p == "" {
			continue
		}
		if k.dropped(p) {
			dropped = true
			continue
		}
		kept = append(kept, p)
	}
	// A stable sort keeps repeated parameters (`a=2&a=1`) in their order: for most origins
	// that order is meaningful.
	sort.SliceStable(kept, func(i, j int) bool { return paramName(kept[i]) < paramName(kept[j]) })
	return strings.Join(kept, "&"), dropped
}

func (k Keyer) dropped(param string) bool {
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

// GenerationKey is the base of the variant keys of an index entry: the primary key and the
// index's generation.
func GenerationKey(key string, idx *entry.Entry) string {
	return key + "\x00g" + strconv.FormatInt(idx.Born.UnixNano(), 36)
}

// SameNames tells whether two lists of Vary names are the same, in the same order: a new
// variant joins the generation of an index only when they are.
func SameNames(a, b []string) bool {
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

// VariantKey is the key of the variant that r selects among the answers of key varying on
// names. RFC 9111 section 4.1 allows only normalisations that the field's own syntax makes
// meaningless (section 5.6.1 of RFC 9110 for lists): the optional white space around the
// members of a list-based field, and how its members are split across field lines. Anything
// else is compared as sent, so `User-Agent: A B/1` and `User-Agent: AB/1` are two variants. An
// absent field is its own variant, apart from an empty one.
func VariantKey(key string, names []string, r *http.Request) string {
	var b strings.Builder
	b.WriteString(key)
	b.WriteString("\x00vary")
	for _, name := range names {
		b.WriteByte('\x00')
		b.WriteString(name)
		vals, present := r.Header[name]
		if !present {
			continue
		}
		b.WriteByte(':')
		if listField[name] {
			writeListMembers(&b, vals)
			continue
		}
		if credentialField[name] {
			// A session cookie or a token is in the key as its SHA-256, never as sent: keys
			// are what anyone who may list the shared store's keys reads (README, security).
			// Equal values still select one variant, different ones apart.
			var v strings.Builder
			writeSingleton(&v, vals)
			sum := sha256.Sum256([]byte(v.String()))
			b.WriteString("sha256=")
			b.WriteString(hex.EncodeToString(sum[:]))
			continue
		}
		writeSingleton(&b, vals)
	}
	return b.String()
}

// writeSingleton writes a singleton field's lines, each without the white space around it,
// joined by a byte no field value holds (RFC 9110 section 5.5 forbids CR and LF in one).
func writeSingleton(b *strings.Builder, vals []string) {
	for i, v := range vals {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(strings.Trim(v, " \t"))
	}
}

// credentialField names the request fields that carry a user's credentials, which a variant
// key holds only as a digest.
var credentialField = map[string]bool{"Authorization": true, "Cookie": true, "Proxy-Authorization": true}

// listField names the request fields whose value is a comma-separated list (RFC 9110 section
// 5.6.1) and that origins commonly vary on: their members may be re-split and their optional
// white space dropped without changing what the field says.
var listField = map[string]bool{
	"Accept": true, "Accept-Charset": true, "Accept-Encoding": true, "Accept-Language": true,
	"Cache-Control": true, "Te": true, "Pragma": true,
}

// writeListMembers writes a list field's members, from every line, joined by commas: the
// optional white space (spaces and tabs, nothing else) around each member dropped, empty
// members left out (RFC 9110 section 5.6.1), commas inside a quoted string kept with their
// member.
func writeListMembers(b *strings.Builder, lines []string) {
	first := true
	for _, line := range lines {
		for len(line) > 0 {
			member := line
			line = ""
			if end := unquotedIndex(member, ','); end >= 0 {
				member, line = member[:end], member[end+1:]
			}
			member = strings.Trim(member, " \t")
			if member == "" {
				continue
			}
			if !first {
				b.WriteByte(',')
			}
			first = false
			b.WriteString(member)
		}
	}
}
