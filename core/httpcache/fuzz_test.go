package httpcache

import (
	"net/http"
	"net/textproto"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/entry"
	"github.com/weirproxy/weir/core/store"
	"github.com/weirproxy/weir/internal/querytest"
)

// The parsers read what clients and origins send: whatever the input, they must not panic
// and must keep the properties below. The Fuzz functions explore; the Test functions run the
// same checks on the seeds, also under Yaegi, which skips Fuzz functions.

// fuzzStrings fuzzes check from seeds.
func fuzzStrings(f *testing.F, seeds []string, check func(t *testing.T, s string)) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(check)
}

// checkStrings runs check on each of seeds.
func checkStrings(t *testing.T, seeds []string, check func(t *testing.T, s string)) {
	for _, s := range seeds {
		check(t, s)
	}
}

var cacheControlSeeds = []string{
	"", "max-age=60", "MAX-AGE=60, No-Store", `max-age="60"`, "max-age=5, max-age=50",
	"s-maxage=10, max-age=0, stale-while-revalidate=30, stale-if-error=86400",
	`no-cache="Set-Cookie, X-A", private="X-B", public`, `no-cache="a\",b", max-age=1`,
	"must-revalidate, proxy-revalidate, no-store", "max-age=99999999999999999999",
	"max-age=-1", "max-age=", "max-age", `max-age="`, `"`, `\`, ",,,", " = , =",
	"max-age=1,\tprivate", "immutable, community=\"UCI\"",
}

func FuzzParseCacheControl(f *testing.F) { fuzzStrings(f, cacheControlSeeds, checkCacheControlProps) }

func TestParseCacheControlSeeds(t *testing.T) {
	checkStrings(t, cacheControlSeeds, checkCacheControlProps)
}

func checkCacheControlProps(t *testing.T, s string) {
	cc := ParseCacheControl([]string{s})
	ages := []struct {
		name string
		v    int64
	}{
		{"max-age", cc.MaxAge}, {"s-maxage", cc.SMaxAge},
		{"stale-while-revalidate", cc.StaleWhileRevalidate}, {"stale-if-error", cc.StaleIfError},
	}
	zeroAge := false
	for _, a := range ages {
		if a.v < -1 || a.v > maxDeltaSeconds {
			t.Fatalf("ParseCacheControl(%q): %s = %d, out of range", s, a.name, a.v)
		}
		if a.v == 0 {
			zeroAge = true
		}
	}
	if cc.Invalid && !zeroAge {
		// A malformed or conflicting age reads as zero: the answer is stale.
		t.Fatalf("ParseCacheControl(%q) is invalid but no age reads as zero: %+v", s, cc)
	}

	// The directives, written back out canonically, parse to the same values.
	if !cc.Invalid {
		out := formatCacheControl(cc)
		if back := ParseCacheControl([]string{out}); back != cc {
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
	if split := ParseCacheControl(lines); split != cc {
		t.Fatalf("ParseCacheControl(%q) = %+v, but split into %q: %+v", s, cc, lines, split)
	}

	// Directive names are case-insensitive.
	if upper := ParseCacheControl([]string{asciiUpper(s)}); upper != cc {
		t.Fatalf("ParseCacheControl(%q) = %+v, but in capitals: %+v", s, cc, upper)
	}
}

// formatCacheControl writes cc as a Cache-Control field value.
func formatCacheControl(cc Directives) string {
	var parts []string
	flags := []struct {
		on   bool
		name string
	}{
		{cc.NoStore, "no-store"}, {cc.NoCache, "no-cache"}, {cc.Private, "private"}, {cc.Public, "public"},
		{cc.MustRevalidate, "must-revalidate"}, {cc.ProxyRevalidate, "proxy-revalidate"},
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
		{cc.MaxAge, "max-age"}, {cc.SMaxAge, "s-maxage"},
		{cc.StaleWhileRevalidate, "stale-while-revalidate"}, {cc.StaleIfError, "stale-if-error"},
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

func FuzzParseTargetedField(f *testing.F) { fuzzStrings(f, targetedSeeds, checkTargetedProps) }

func TestParseTargetedFieldSeeds(t *testing.T) { checkStrings(t, targetedSeeds, checkTargetedProps) }

func checkTargetedProps(t *testing.T, s string) {
	for _, read := range []struct {
		name  string
		parse func(string) (Directives, bool)
	}{
		{"parseTargetedField", func(v string) (Directives, bool) { return parseTargetedField([]string{v}) }},
		{"parseSurrogateControl", func(v string) (Directives, bool) { return parseSurrogateControl([]string{v}, surrogateToken) }},
	} {
		cc, ok := read.parse(s)
		if !ok {
			if read.name == "parseTargetedField" && cc != noDirectives {
				t.Fatalf("%s(%q) failed but returned directives %+v", read.name, s, cc)
			}
			continue
		}
		if !cc.Targeted {
			t.Fatalf("%s(%q) = %+v, not marked targeted", read.name, s, cc)
		}
		for _, v := range []int64{cc.MaxAge, cc.SMaxAge, cc.StaleWhileRevalidate, cc.StaleIfError} {
			if v < -1 || v > maxDeltaSeconds {
				t.Fatalf("%s(%q): an age of %d, out of range: %+v", read.name, s, v, cc)
			}
		}
		// The directives, written back out as a Dictionary, read the same.
		if !cc.Invalid {
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

func FuzzParseVary(f *testing.F) { fuzzStrings(f, varySeeds, checkVaryProps) }

func TestParseVarySeeds(t *testing.T) { checkStrings(t, varySeeds, checkVaryProps) }

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
	if VariantKey("k", names, r) != VariantKey("k", names, r) {
		t.Fatalf("VariantKey for %q is not stable", names)
	}
}

var querySeeds = []querytest.Seed{
	{Query: "a=1&b=2", Order: 1},
	{Query: "b=2&a=1&a=0", Order: 2},
	{Query: "utm_source=x&a=1&&b=2&", Drop: "utm_source,fbclid", Order: 3},
	{Query: "utm%5Fsource=x&z&fbclid", Drop: "utm_source,fbclid", Order: 4},
	{Query: "a+b=1&a%20b=2&a b=3", Drop: "a b", Order: 5},
	{Query: "=x&=y&b", Order: 6},
	{Query: "%zz=1&a=%zz", Drop: "%zz", Order: 7},
	{Query: "x", Drop: "x", Order: 8},
	{Query: "&&&", Order: 9},
	{Query: "a=1;b=2&c", Order: 10},
}

func FuzzQueryNormalize(f *testing.F) { querytest.Fuzz(f, querySeeds, checkQueryProps) }

func TestQueryNormalizeSeeds(t *testing.T) { querytest.Run(t, querySeeds, checkQueryProps) }

func checkQueryProps(t *testing.T, q, drop string, seed int64) {
	k := NewKeyer(querytest.DropList(drop))
	got, _ := normalizeQuery(&k, q)

	if again, _ := normalizeQuery(&k, got); again != got {
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
	shuffled := querytest.Shuffle(q, seed)
	if again, _ := normalizeQuery(&k, shuffled); again != got {
		t.Fatalf("normalizeQuery(%q) = %q, but reordered %q gives %q", q, got, shuffled, again)
	}
	r1 := &http.Request{Host: "example.com", URL: &url.URL{Path: "/p", RawQuery: q}}
	r2 := &http.Request{Host: "example.com", URL: &url.URL{Path: "/p", RawQuery: shuffled}}
	if k1, k2 := Key(&k, r1), Key(&k, r2); k1 != k2 {
		t.Fatalf("key with query %q = %q, with %q = %q", q, k1, shuffled, k2)
	}
}

var tagSeeds = [][2]string{
	{"", ""}, {"a b", "c,d"}, {" \ta  a\t", " a , ,b"}, {"a,b", "a b"}, {"\x00 \x7f \xff", "\r\n,\t"},
	{strings.Repeat("k ", 100), strings.Repeat("k,", 100)}, {strings.Repeat("x", 300), "caf\xc3\xa9"},
}

func FuzzTags(f *testing.F) {
	for _, s := range tagSeeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(checkTagsProps)
}

func TestTagsSeeds(t *testing.T) {
	for _, s := range tagSeeds {
		checkTagsProps(t, s[0], s[1])
	}
}

// checkTagsProps holds Tags' properties: at most entry.MaxTags tags, each valid (so that
// the codec takes the entry), none twice, each found in one of the fields as a whole member.
func checkTagsProps(t *testing.T, keys, tags string) {
	got := Tags(http.Header{"Surrogate-Key": {keys}, "Cache-Tag": {tags}})
	if len(got) > entry.MaxTags {
		t.Fatalf("Tags(%q, %q): %d tags, over %d", keys, tags, len(got), entry.MaxTags)
	}
	seen := map[string]bool{}
	for _, tag := range got {
		if !entry.ValidTag(tag) {
			t.Fatalf("Tags(%q, %q): invalid tag %q", keys, tags, tag)
		}
		if seen[tag] {
			t.Fatalf("Tags(%q, %q): %q twice", keys, tags, tag)
		}
		seen[tag] = true
		inKeys := strings.Contains(" "+strings.ReplaceAll(keys, "\t", " ")+" ", " "+tag+" ")
		inTags := false
		for _, m := range strings.Split(tags, ",") {
			inTags = inTags || strings.Trim(m, " \t") == tag
		}
		if !inKeys && !inTags {
			t.Fatalf("Tags(%q, %q): %q is no member of either field", keys, tags, tag)
		}
	}
	e := &entry.Entry{Status: 200, Born: time.Unix(1, 0), FreshUntil: time.Unix(1, 0), KeepUntil: time.Unix(1, 0), Tags: got}
	if _, err := store.Decode(store.Encode(e)); err != nil {
		t.Fatalf("Tags(%q, %q) = %q: the codec refuses them: %v", keys, tags, got, err)
	}
}
