package httpcache

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

func TestKeyerKey(t *testing.T) {
	k := NewKeyer([]string{"utm_source", "fbclid", "a b"})
	tests := []struct {
		desc string
		url  string
		tls  bool
		want string
	}{
		{desc: "path only", url: "http://example.com/a/b", want: "http://example.com/a/b"},
		{desc: "https", url: "http://example.com/a", tls: true, want: "https://example.com/a"},
		{desc: "port kept", url: "http://example.com:8080/a", want: "http://example.com:8080/a"},
		{desc: "root", url: "http://example.com/", want: "http://example.com/"},
		{desc: "escaped path kept as sent", url: "http://example.com/a%2Fb", want: "http://example.com/a%2Fb"},
		{desc: "one parameter", url: "http://example.com/p?x=1", want: "http://example.com/p?x=1"},
		{desc: "sorted", url: "http://example.com/p?b=2&a=1&c=3", want: "http://example.com/p?a=1&b=2&c=3"},
		{desc: "repeated names keep their order", url: "http://example.com/p?b=1&a=2&a=1", want: "http://example.com/p?a=2&a=1&b=1"},
		{desc: "empty parameters dropped", url: "http://example.com/p?&a=1&&b=2&", want: "http://example.com/p?a=1&b=2"},
		{desc: "dropped parameter", url: "http://example.com/p?utm_source=x&a=1", want: "http://example.com/p?a=1"},
		{desc: "dropped without value", url: "http://example.com/p?a=1&fbclid", want: "http://example.com/p?a=1"},
		{desc: "dropped when percent-encoded", url: "http://example.com/p?utm%5Fsource=x&a=1", want: "http://example.com/p?a=1"},
		{desc: "dropped when plus-encoded", url: "http://example.com/p?a+b=x&a=1", want: "http://example.com/p?a=1"},
		{desc: "only dropped parameters", url: "http://example.com/p?utm_source=x&fbclid=y", want: "http://example.com/p"},
		// RFC 3986 section 6.2.3: an empty query is not no query; the origin sees `/p?`.
		{desc: "lone question mark", url: "http://example.com/p?", want: "http://example.com/p?"},
		{desc: "only empty parameters", url: "http://example.com/p?&&", want: "http://example.com/p?"},
		{desc: "name prefix is not the name", url: "http://example.com/p?utm_sourcex=1", want: "http://example.com/p?utm_sourcex=1"},
		{desc: "values keep their encoding", url: "http://example.com/p?q=a%20b&r=a+b", want: "http://example.com/p?q=a%20b&r=a+b"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, tc.url, nil)
			if tc.tls {
				r.TLS = &tls.ConnectionState{}
			}
			if got := Key(&k, r); got != tc.want {
				t.Errorf("key(%s) = %q, want %q", tc.url, got, tc.want)
			}
		})
	}
}

// Headers that proxies use to rewrite the target never reach the key.
func TestKeyIgnoresRewriteHeaders(t *testing.T) {
	k := NewKeyer(nil)
	r := httptest.NewRequest(http.MethodGet, "http://example.com/a", nil)
	want := Key(&k, r)
	for _, h := range []string{"X-Forwarded-Host", "X-Original-Url", "X-Rewrite-Url", "X-Forwarded-Proto", "Forwarded"} {
		r2 := httptest.NewRequest(http.MethodGet, "http://example.com/a", nil)
		r2.Header.Set(h, "evil.example")
		if got := Key(&k, r2); got != want {
			t.Errorf("key with %s = %q, want %q", h, got, want)
		}
	}
}

// The spellings of a host that Traefik routes to one router share one partition, so that
// the limiter and the miss-rate detector count them as one; each keeps a cache key of its
// own, so that an answer fetched for one never answers another.
func TestHostSpellingsSharePartitionNotKey(t *testing.T) {
	k := NewKeyer(nil)
	keys := map[string]string{}
	for _, host := range []string{"example.com", "EXAMPLE.com", "example.com.", "example.com:1", "Example.COM:8080"} {
		r := httptest.NewRequest(http.MethodGet, "http://example.com/p?a=1", nil)
		r.Host = host
		key := Key(&k, r)
		if want := "http://" + host + "/p?a=1"; key != want {
			t.Errorf("Host %q: key %q, want %q (the host as sent)", host, key, want)
		}
		if other, ok := keys[key]; ok {
			t.Errorf("Hosts %q and %q share the key %q", host, other, key)
		}
		keys[key] = host
		if got, want := Partition(r), "http://example.com/p"; got != want {
			t.Errorf("Host %q: Partition %q, want %q", host, got, want)
		}
		if got, want := PartitionOf(key), "http://example.com/p"; got != want {
			t.Errorf("Host %q: PartitionOf(%q) = %q, want %q", host, key, got, want)
		}
	}
}

func TestPartitionOf(t *testing.T) {
	tests := []struct {
		desc string
		key  string
		want string
	}{
		{desc: "canonical, no query", key: "http://example.com/p", want: "http://example.com/p"},
		{desc: "query cut", key: "https://example.com/p?a=1", want: "https://example.com/p"},
		{desc: "empty query cut", key: "http://example.com/p?", want: "http://example.com/p"},
		{desc: "host lowered, port cut", key: "http://EXAMPLE.com:8080/a/b?x", want: "http://example.com/a/b"},
		{desc: "IPv6 with port", key: "http://[::1]:80/p", want: "http://[::1]/p"},
		{desc: "no path", key: "http://Example.com", want: "http://example.com"},
		{desc: "no scheme", key: "Example.com/p", want: "Example.com/p"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if got := PartitionOf(tc.key); got != tc.want {
				t.Errorf("PartitionOf(%q) = %q, want %q", tc.key, got, tc.want)
			}
		})
	}
}

func TestNormalizeQueryWithoutDrop(t *testing.T) {
	k := NewKeyer(nil)
	tests := []struct {
		desc, in, want string
	}{
		{desc: "single", in: "a=1", want: "a=1"},
		{desc: "sorted by name", in: "z=1&a=2", want: "a=2&z=1"},
		{desc: "same name keeps order", in: "a=2&a=1", want: "a=2&a=1"},
		{desc: "names compare raw", in: "b=1&%61=2", want: "%61=2&b=1"},
		{desc: "empty name", in: "b=1&=x", want: "=x&b=1"},
		{desc: "trailing ampersand", in: "a=1&", want: "a=1"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if got, _ := normalizeQuery(&k, tc.in); got != tc.want {
				t.Errorf("normalizeQuery(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestParseVary(t *testing.T) {
	tests := []struct {
		desc      string
		lines     []string
		wantNames []string
		wantStar  bool
	}{
		{desc: "none", lines: nil},
		{desc: "one", lines: []string{"accept-encoding"}, wantNames: []string{"Accept-Encoding"}},
		{desc: "list and lines", lines: []string{"Accept-Encoding, accept-language", "Origin"},
			wantNames: []string{"Accept-Encoding", "Accept-Language", "Origin"}},
		{desc: "empty members", lines: []string{" , Accept,, "}, wantNames: []string{"Accept"}},
		{desc: "star", lines: []string{"*"}, wantStar: true},
		{desc: "star in a list", lines: []string{"Accept", "Origin, *"}, wantStar: true},
		{desc: "star with spaces", lines: []string{" * "}, wantStar: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			names, star := parseVary(tc.lines)
			if star != tc.wantStar || !reflect.DeepEqual(names, tc.wantNames) {
				t.Errorf("parseVary(%q) = %q, %v; want %q, %v", tc.lines, names, star, tc.wantNames, tc.wantStar)
			}
		})
	}
}

func TestVariantKey(t *testing.T) {
	names := []string{"Accept-Encoding", "Accept-Language"}
	req := func(header ...string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "http://example.com/v", nil)
		for i := 0; i+1 < len(header); i += 2 {
			r.Header.Add(header[i], header[i+1])
		}
		return r
	}
	base := VariantKey("k", names, req("Accept-Encoding", "gzip, br", "Accept-Language", "fr"))
	tests := []struct {
		desc string
		r    *http.Request
		same bool
	}{
		{desc: "white space around list members ignored", r: req("Accept-Encoding", "gzip,br", "Accept-Language", "fr"), same: true},
		{desc: "tabs around list members ignored", r: req("Accept-Encoding", "gzip\t,\t br", "Accept-Language", "fr"), same: true},
		{desc: "list members split across lines", r: req("Accept-Encoding", "gzip", "Accept-Encoding", "br", "Accept-Language", "fr"), same: true},
		{desc: "empty list members ignored", r: req("Accept-Encoding", ", gzip,, br,", "Accept-Language", "fr"), same: true},
		{desc: "white space inside a member matters", r: req("Accept-Encoding", "gzip, br", "Accept-Language", "f r"), same: false},
		{desc: "a vertical tab is no white space", r: req("Accept-Encoding", "gzip, br\v", "Accept-Language", "fr"), same: false},
		{desc: "a quoted comma stays in its member", r: req("Accept-Encoding", `gzip, br;q="1,0"`, "Accept-Language", "fr"), same: false},
		{desc: "other headers ignored", r: req("Accept-Encoding", "gzip, br", "Accept-Language", "fr", "Cookie", "a=1"), same: true},
		{desc: "other value", r: req("Accept-Encoding", "gzip", "Accept-Language", "fr"), same: false},
		{desc: "order of values matters", r: req("Accept-Encoding", "br, gzip", "Accept-Language", "fr"), same: false},
		{desc: "missing field", r: req("Accept-Encoding", "gzip, br"), same: false},
		{desc: "value moved to another field", r: req("Accept-Encoding", "", "Accept-Language", "gzip,brfr"), same: false},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got := VariantKey("k", names, tc.r)
			if (got == base) != tc.same {
				t.Errorf("VariantKey = %q, base %q: same = %v, want %v", got, base, got == base, tc.same)
			}
		})
	}
	if VariantKey("k1", names, req()) == VariantKey("k2", names, req()) {
		t.Error("two keys share a variant key")
	}
}

// TestVariantKeySingletonFields: a field that is no list is compared as sent, apart from the
// white space around the whole value, which is not part of it (RFC 9110 section 5.5): a
// client must not plant a variant that another client's different value selects.
func TestVariantKeySingletonFields(t *testing.T) {
	names := []string{"User-Agent"}
	req := func(header ...string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "http://example.com/v", nil)
		for i := 0; i+1 < len(header); i += 2 {
			r.Header[header[i]] = append(r.Header[header[i]], header[i+1])
		}
		return r
	}
	tests := []struct {
		desc string
		a, b *http.Request
		same bool
	}{
		{desc: "inner white space matters", a: req("User-Agent", "A B/1"), b: req("User-Agent", "AB/1"), same: false},
		{desc: "a tab is not a space", a: req("User-Agent", "A B/1"), b: req("User-Agent", "A\tB/1"), same: false},
		{desc: "outer white space is not the value", a: req("User-Agent", "A B/1"), b: req("User-Agent", " A B/1\t"), same: true},
		{desc: "commas are not list separators", a: req("User-Agent", "a, b"), b: req("User-Agent", "a,b"), same: false},
		{desc: "two lines are not one with a comma", a: req("User-Agent", "a", "User-Agent", "b"), b: req("User-Agent", "a,b"), same: false},
		{desc: "absent is not empty", a: req(), b: req("User-Agent", ""), same: false},
		{desc: "same value", a: req("User-Agent", "A B/1"), b: req("User-Agent", "A B/1"), same: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			a, b := VariantKey("k", names, tc.a), VariantKey("k", names, tc.b)
			if (a == b) != tc.same {
				t.Errorf("VariantKey: %q and %q: same = %v, want %v", a, b, a == b, tc.same)
			}
		})
	}
}

// TestVariantKeyHidesCredentials: an answer varying on Cookie or Authorization is stored
// under a key holding the value's SHA-256, never the value: a session in a store's key list
// is a session anyone listing them could use. Equal values still share a variant.
func TestVariantKeyHidesCredentials(t *testing.T) {
	req := func(name, value string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "http://example.com/v", nil)
		r.Header.Set(name, value)
		return r
	}
	for _, name := range []string{"Cookie", "Authorization", "Proxy-Authorization"} {
		names := []string{name}
		a := VariantKey("k", names, req(name, "session=alice-secret"))
		if strings.Contains(a, "alice-secret") {
			t.Errorf("%s: VariantKey = %q holds the value", name, a)
		}
		if b := VariantKey("k", names, req(name, " session=alice-secret ")); b != a {
			t.Errorf("%s: the same value apart from outer white space: %q, want %q", name, b, a)
		}
		if b := VariantKey("k", names, req(name, "session=alice-secreT")); b == a {
			t.Errorf("%s: a value one byte apart selects the same variant %q", name, a)
		}
	}
}
