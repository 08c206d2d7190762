package core

import (
	"bufio"
	"math/rand"
	"net/http"
	"net/textproto"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// The parsers read what clients and origins send: whatever the input, they must not panic
// and must keep the properties below. The Fuzz functions explore; the Test functions run the
// same checks on the seeds, also under Yaegi, which skips Fuzz functions.

var cacheControlSeeds = []string{
	"", "max-age=60", "MAX-AGE=60, No-Store", `max-age="60"`, "max-age=5, max-age=50",
	"s-maxage=10, max-age=0, stale-while-revalidate=30, stale-if-error=86400",
	`no-cache="Set-Cookie, X-A", private="X-B", public`, `no-cache="a\",b", max-age=1`,
	"must-revalidate, proxy-revalidate, no-store", "max-age=99999999999999999999",
	"max-age=-1", "max-age=", "max-age", `max-age="`, `"`, `\`, ",,,", " = , =",
	"max-age=1,\tprivate", "immutable, community=\"UCI\"",
}

func FuzzParseCacheControl(f *testing.F) {
	for _, s := range cacheControlSeeds {
		f.Add(s)
	}
	f.Fuzz(checkCacheControlProps)
}

func TestParseCacheControlSeeds(t *testing.T) {
	for _, s := range cacheControlSeeds {
		checkCacheControlProps(t, s)
	}
}

func checkCacheControlProps(t *testing.T, s string) {
	cc := parseCacheControl([]string{s})
	ages := []struct {
		name string
		v    int64
	}{
		{"max-age", cc.maxAge}, {"s-maxage", cc.sMaxAge},
		{"stale-while-revalidate", cc.staleWhileRevalidate}, {"stale-if-error", cc.staleIfError},
	}
	zeroAge := false
	for _, a := range ages {
		if a.v < -1 || a.v > maxDeltaSeconds {
			t.Fatalf("parseCacheControl(%q): %s = %d, out of range", s, a.name, a.v)
		}
		if a.v == 0 {
			zeroAge = true
		}
	}
	if cc.invalid && !zeroAge {
		// A malformed or conflicting age reads as zero: the answer is stale.
		t.Fatalf("parseCacheControl(%q) is invalid but no age reads as zero: %+v", s, cc)
	}

	// The directives, written back out canonically, parse to the same values.
	if !cc.invalid {
		out := formatCacheControl(cc)
		if back := parseCacheControl([]string{out}); back != cc {
			t.Fatalf("round trip of %q through %q: got %+v, want %+v", s, out, back, cc)
		}
	}

	// One field line or one line per directive: the same result.
	var lines []string
	for rest := s; len(rest) > 0; {
		var part string
		part, rest = nextDirective(rest)
		lines = append(lines, part)
	}
	if split := parseCacheControl(lines); split != cc {
		t.Fatalf("parseCacheControl(%q) = %+v, but split into %q: %+v", s, cc, lines, split)
	}

	// Directive names are case-insensitive.
	if upper := parseCacheControl([]string{asciiUpper(s)}); upper != cc {
		t.Fatalf("parseCacheControl(%q) = %+v, but in capitals: %+v", s, cc, upper)
	}
}

// formatCacheControl writes cc as a Cache-Control field value.
func formatCacheControl(cc cacheControl) string {
	var parts []string
	flags := []struct {
		on   bool
		name string
	}{
		{cc.noStore, "no-store"}, {cc.noCache, "no-cache"}, {cc.private, "private"}, {cc.public, "public"},
		{cc.mustRevalidate, "must-revalidate"}, {cc.proxyRevalidate, "proxy-revalidate"},
	}
	for _, f := range flags {
		if f.on {
			parts = append(parts, f.name)
		}
	}
	ages := []struct {
		v    int64
		name string
	}{
		{cc.maxAge, "max-age"}, {cc.sMaxAge, "s-maxage"},
		{cc.staleWhileRevalidate, "stale-while-revalidate"}, {cc.staleIfError, "stale-if-error"},
	}
	for _, a := range ages {
		if a.v >= 0 {
			parts = append(parts, a.name+"="+strconv.FormatInt(a.v, 10))
		}
	}
	return strings.Join(parts, ", ")
}

// asciiUpper upper-cases ASCII letters only: the comparison HTTP asks for.
func asciiUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// Targeted fields (RFC 9213) are Structured Field Dictionaries; Surrogate-Control is
// Cache-Control's syntax with targets. Both are read from the same seeds.
var targetedSeeds = []string{
	"", "max-age=60", "Max-Age=60", "max-age=60,", "max-age=60;weir", "max-age=60;other, no-store",
	`private="set-cookie", no-cache=("a" "b");x=?1`, "max-age=1.5, s-maxage=-3", "max-age=999999999999999",
	"a=:aGk=:, b=?0, c=tok/en", `x="\"\\"`, "max-age=60+30", "MaX-aGe=3600;WEIR", `content="ESI/1.0"`,
	"(", "a=(", `a="`, "a=?", "a=:", ";", ",", "*=1", " \tmax-age=5\t ", "\x00",
}

func FuzzParseTargetedField(f *testing.F) {
	for _, s := range targetedSeeds {
		f.Add(s)
	}
	f.Fuzz(checkTargetedProps)
}

func TestParseTargetedFieldSeeds(t *testing.T) {
	for _, s := range targetedSeeds {
		checkTargetedProps(t, s)
	}
}

func checkTargetedProps(t *testing.T, s string) {
	for _, read := range []struct {
		name  string
		parse func(string) (cacheControl, bool)
	}{
		{"parseTargetedField", func(v string) (cacheControl, bool) { return parseTargetedField([]string{v}) }},
		{"parseSurrogateControl", func(v string) (cacheControl, bool) { return parseSurrogateControl([]string{v}, surrogateToken) }},
	} {
		cc, ok := read.parse(s)
		if !ok {
			if read.name == "parseTargetedField" && cc != noDirectives {
				t.Fatalf("%s(%q) failed but returned directives %+v", read.name, s, cc)
			}
			continue
		}
		if !cc.targeted {
			t.Fatalf("%s(%q) = %+v, not marked targeted", read.name, s, cc)
		}
		for _, v := range []int64{cc.maxAge, cc.sMaxAge, cc.staleWhileRevalidate, cc.staleIfError} {
			if v < -1 || v > maxDeltaSeconds {
				t.Fatalf("%s(%q): an age of %d, out of range: %+v", read.name, s, v, cc)
			}
		}
		// The directives, written back out as a Dictionary, read the same.
		if !cc.invalid {
			out := formatCacheControl(cc)
			back, backOK := parseTargetedField([]string{out})
			if out == "" {
				back, backOK = cc, true
			}
			if !backOK || back != cc {
				t.Fatalf("%s(%q) = %+v, but its directives %q read back as %+v, %v", read.name, s, cc, out, back, backOK)
			}
		}
	}
}

var varySeeds = []string{
	"", "*", "Accept-Encoding", "accept-encoding, Accept-Language", " , ,Origin,, ", "Accept, *",
	"x y", "\u00e9t\u00e9", "a\u0085", "A,b,C,d", "*,", ",*", "\t*\t",
}

func FuzzParseVary(f *testing.F) {
	for _, s := range varySeeds {
		f.Add(s)
	}
	f.Fuzz(checkVaryProps)
}

func TestParseVarySeeds(t *testing.T) {
	for _, s := range varySeeds {
		checkVaryProps(t, s)
	}
}

func checkVaryProps(t *testing.T, line string) {
	names, star := parseVary([]string{line})
	if star {
		if names != nil {
			t.Fatalf("parseVary(%q): star with names %q", line, names)
		}
		return
	}
	for _, n := range names {
		if n == "" || n == "*" || strings.IndexByte(n, ',') >= 0 || strings.TrimSpace(n) != n {
			t.Fatalf("parseVary(%q): bad name %q", line, n)
		}
		if textproto.CanonicalMIMEHeaderKey(n) != n {
			t.Fatalf("parseVary(%q): name %q is not canonical", line, n)
		}
	}
	if back, _ := parseVary([]string{strings.Join(names, ", ")}); !reflect.DeepEqual(back, names) {
		t.Fatalf("parseVary(%q) = %q, but its names joined parse to %q", line, names, back)
	}
	// Any request selects some variant, and the same one every time.
	r := &http.Request{Header: http.Header{}}
	for i, n := range names {
		r.Header[n] = []string{strconv.Itoa(i), " x  y "}
	}
	if variantKey("k", names, r) != variantKey("k", names, r) {
		t.Fatalf("variantKey for %q is not stable", names)
	}
}

var querySeeds = []struct {
	q, drop string
	seed    int64
}{
	{"a=1&b=2", "", 1},
	{"b=2&a=1&a=0", "", 2},
	{"utm_source=x&a=1&&b=2&", "utm_source,fbclid", 3},
	{"utm%5Fsource=x&z&fbclid", "utm_source,fbclid", 4},
	{"a+b=1&a%20b=2&a b=3", "a b", 5},
	{"=x&=y&b", "", 6},
	{"%zz=1&a=%zz", "%zz", 7},
	{"x", "x", 8},
	{"&&&", "", 9},
	{"a=1;b=2&c", "", 10},
}

func FuzzQueryNormalize(f *testing.F) {
	for _, s := range querySeeds {
		f.Add(s.q, s.drop, s.seed)
	}
	f.Fuzz(checkQueryProps)
}

func TestQueryNormalizeSeeds(t *testing.T) {
	for _, s := range querySeeds {
		checkQueryProps(t, s.q, s.drop, s.seed)
	}
}

func checkQueryProps(t *testing.T, q, drop string, seed int64) {
	var dropList []string
	if drop != "" {
		dropList = strings.Split(drop, ",")
	}
	k := newKeyer(dropList)
	got, _ := k.normalizeQuery(q)

	if again, _ := k.normalizeQuery(got); again != got {
		t.Fatalf("normalizeQuery(%q) = %q, not idempotent: %q", q, got, again)
	}
	if got != "" && (k.drop != nil || strings.IndexByte(q, '&') >= 0) {
		for _, p := range strings.Split(got, "&") {
			if p == "" {
				t.Fatalf("normalizeQuery(%q) = %q keeps an empty parameter", q, got)
			}
			if k.dropped(p) {
				t.Fatalf("normalizeQuery(%q) = %q keeps the dropped %q", q, got, p)
			}
		}
	}

	// The key does not depend on the order of the parameters. Repeated names keep their
	// order (a=2&a=1 is not a=1&a=2 for most origins), so only that order is kept.
	shuffled := shuffleParams(q, seed)
	if again, _ := k.normalizeQuery(shuffled); again != got {
		t.Fatalf("normalizeQuery(%q) = %q, but reordered %q gives %q", q, got, shuffled, again)
	}
	r1 := &http.Request{Host: "example.com", URL: &url.URL{Path: "/p", RawQuery: q}}
	r2 := &http.Request{Host: "example.com", URL: &url.URL{Path: "/p", RawQuery: shuffled}}
	if k1, k2 := k.key(r1), k.key(r2); k1 != k2 {
		t.Fatalf("key with query %q = %q, with %q = %q", q, k1, shuffled, k2)
	}
}

// shuffleParams reorders the parameters of q, keeping the order of those of the same name.
func shuffleParams(q string, seed int64) string {
	parts := strings.Split(q, "&")
	if len(parts) < 2 {
		return q
	}
	perm := rand.New(rand.NewSource(seed)).Perm(len(parts))
	byName := make(map[string][]string)
	for _, p := range parts {
		n := paramName(p)
		byName[n] = append(byName[n], p)
	}
	out := make([]string, len(parts))
	for i, j := range perm {
		n := paramName(parts[j])
		out[i] = byName[n][0]
		byName[n] = byName[n][1:]
	}
	return strings.Join(out, "&")
}

// The hit path looks a request up under its scheme, host and RequestURI as sent, before any
// normalising: that key is the request's own whenever an entry is stored under it.
var hitPathSeeds = []struct {
	target, drop string
	seed         int64
}{
	{"/p?a=1&b=2", "", 1},
	{"/p?b=2&a=1", "", 2},
	{"/p", "utm_source", 3},
	{"/p?", "utm_source", 4},
	{"/p??", "", 5},
	{"/p?a=1#x&b", "", 6},
	{"/p?utm_source=x", "utm_source", 7},
	{"/p?utm_source=x&a=1", "utm_source", 8},
	{"/p?&", "", 9},
	{"/p?a=1&&b=2&", "fbclid", 10},
	{"/p%3Fa?b=1&a", "", 11},
	{"/a/../b?z&y=1&y=0", "y", 12},
	{"/p?a b", "", 13},
}

func FuzzHitPathKey(f *testing.F) {
	for _, s := range hitPathSeeds {
		f.Add(s.target, s.drop, s.seed)
	}
	f.Fuzz(checkHitPathKeyProps)
}

func TestHitPathKeySeeds(t *testing.T) {
	for _, s := range hitPathSeeds {
		checkHitPathKeyProps(t, s.target, s.drop, s.seed)
	}
}

// parseTarget is a GET for target on example.com as net/http's server hands it on, or nil
// when the server would refuse it or not hand it on in origin form.
func parseTarget(target string) *http.Request {
	r, err := http.ReadRequest(bufio.NewReader(strings.NewReader("GET " + target + " HTTP/1.1\r\nHost: example.com\r\n\r\n")))
	if err != nil || r.RequestURI != target || len(target) == 0 || target[0] != '/' {
		return nil
	}
	return r
}

func checkHitPathKeyProps(t *testing.T, target, drop string, seed int64) {
	var dropList []string
	if drop != "" {
		dropList = strings.Split(drop, ",")
	}
	k := newKeyer(dropList)
	r := parseTarget(target)
	if r == nil {
		return
	}
	// ServeHTTP's check before it answers a hit with a query (queryHit): net/http makes
	// RawQuery what follows the first "?" of the target.
	if i := strings.IndexByte(target, '?'); i >= 0 && target[i+1:] != r.URL.RawQuery {
		t.Fatalf("target %q: RawQuery %q is not what follows its first ?", target, r.URL.RawQuery)
	}
	key := k.key(r)
	const origin = "http://example.com"
	if !strings.HasPrefix(key, origin+"/") {
		t.Fatalf("target %q: key %q", target, key)
	}

	// A client that sends the key's own URI is answered by the hit path's lookup.
	normal := parseTarget(key[len(origin):])
	if normal == nil {
		t.Fatalf("target %q: its key's URI %q is not a request target", target, key[len(origin):])
	}
	if got := hitPathKey(normal); got != key {
		t.Fatalf("target %q: the hit path looks %q up as %q, want its key %q", target, normal.RequestURI, got, key)
	}
	if got := k.key(normal); got != key {
		t.Fatalf("target %q: key %q, but its normal form %q has key %q", target, key, normal.RequestURI, got)
	}

	// Whatever another spelling of the request stores (its parameters reordered), the hit
	// path finds it under this target only if it is this target's own key.
	if i := strings.IndexByte(target, '?'); i >= 0 {
		other := parseTarget(target[:i+1] + shuffleParams(target[i+1:], seed))
		if other == nil {
			return
		}
		if hp, stored := hitPathKey(r), k.key(other); hp == stored && hp != key {
			t.Fatalf("target %q finds %q, stored for %q, on the hit path: its own key is %q", target, stored, other.RequestURI, key)
		}
		if hp, stored := hitPathKey(other), key; hp == stored && k.key(other) != key {
			t.Fatalf("target %q finds %q, stored for %q, on the hit path: its own key is %q", other.RequestURI, stored, target, k.key(other))
		}
	}
}
