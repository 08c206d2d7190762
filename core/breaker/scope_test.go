package breaker

import (
	"errors"
	"strings"
	"testing"
)

func TestScopeKey(t *testing.T) {
	tests := []struct {
		desc   string
		host   string
		host2  string // want under ScopeHost
		domain string // want under ScopeDomain
	}{
		{desc: "plain name", host: "api.example.com", host2: "api.example.com", domain: "example.com"},
		{desc: "deep name", host: "a.b.c.example.org", host2: "a.b.c.example.org", domain: "example.org"},
		{desc: "registrable name itself", host: "example.com", host2: "example.com", domain: "example.com"},
		{desc: "single label", host: "localhost", host2: "localhost", domain: "localhost"},
		{desc: "port stripped", host: "api.example.com:8443", host2: "api.example.com", domain: "example.com"},
		{desc: "case folded", host: "API.Example.COM", host2: "api.example.com", domain: "example.com"},
		{desc: "trailing dot", host: "api.example.com.", host2: "api.example.com", domain: "example.com"},
		{desc: "trailing dot and port", host: "api.example.com.:80", host2: "api.example.com", domain: "example.com"},
		{desc: "co.uk", host: "a.example.co.uk", host2: "a.example.co.uk", domain: "example.co.uk"},
		{desc: "co.uk sibling", host: "b.example.co.uk", host2: "b.example.co.uk", domain: "example.co.uk"},
		{desc: "co.uk registrable", host: "example.co.uk", host2: "example.co.uk", domain: "example.co.uk"},
		{desc: "co.uk alone", host: "co.uk", host2: "co.uk", domain: "co.uk"},
		{desc: "com.au", host: "shop.example.com.au", host2: "shop.example.com.au", domain: "example.com.au"},
		{desc: "ac.jp", host: "www.u-tokyo.ac.jp", host2: "www.u-tokyo.ac.jp", domain: "u-tokyo.ac.jp"},
		{desc: "two-letter second level", host: "www.example.ne.jp", host2: "www.example.ne.jp", domain: "example.ne.jp"},
		{desc: "ordinary country domain", host: "www.example.de", host2: "www.example.de", domain: "example.de"},
		{desc: "com under a generic domain is not a second level", host: "a.example.com.net", host2: "a.example.com.net", domain: "com.net"},
		{desc: "IPv4", host: "192.0.2.10", host2: "192.0.2.10", domain: "192.0.2.10"},
		{desc: "IPv4 with port", host: "192.0.2.10:8080", host2: "192.0.2.10", domain: "192.0.2.10"},
		{desc: "IPv6 in brackets", host: "[2001:DB8:0::1]", host2: "[2001:db8::1]", domain: "[2001:db8::1]"},
		{desc: "IPv6 with port", host: "[2001:db8::1]:443", host2: "[2001:db8::1]", domain: "[2001:db8::1]"},
		{desc: "bare IPv6", host: "2001:db8::1", host2: "[2001:db8::1]", domain: "[2001:db8::1]"},
		{desc: "IPv4-mapped IPv6", host: "[::ffff:192.0.2.1]:80", host2: "192.0.2.1", domain: "192.0.2.1"},
		{desc: "IPv6 with zone kept whole", host: "[fe80::1%25eth0]:80", host2: "[fe80::1%25eth0]", domain: "[fe80::1%25eth0]"},
		{desc: "numeric last label kept whole", host: "10.1.2.300", host2: "10.1.2.300", domain: "10.1.2.300"},
		{desc: "empty", host: "", host2: "", domain: ""},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if got := ScopeKey(ScopeHost, tc.host); got != tc.host2 {
				t.Errorf("ScopeKey(host, %q) = %q, want %q", tc.host, got, tc.host2)
			}
			if got := ScopeKey(ScopeDomain, tc.host); got != tc.domain {
				t.Errorf("ScopeKey(domain, %q) = %q, want %q", tc.host, got, tc.domain)
			}
			if got := ScopeKey(ScopeEngine, tc.host); got != "" {
				t.Errorf("ScopeKey(engine, %q) = %q, want \"\"", tc.host, got)
			}
		})
	}
}

// scopeKeySeeds are hosts, odd and ordinary, that FuzzScopeKey starts from and that
// TestScopeKeySeeds checks where fuzzing does not run.
var scopeKeySeeds = []string{
	"", ".", "..", ":", "::", "[", "]", "[]", "[:]", "[::1]", "[::1]:80", "::1", "::1.",
	"a:b", "a:b:c", "[a:b]", "[a:b", "a.:80", "a:80.", "a..b", "x.Co.UK.", "1.2.3.4",
	"1.2.3.4:", "::ffff:1.2.3.4", "[fe80::1%eth0]", "ÄBC.example.com", "\xff\xfe.de",
	"a.b.co.uk:443", "example.com..", "[2001:db8::1]x", ".[].A",
}

// checkScopeKey fails t unless ScopeKey is stable on its own output for host.
func checkScopeKey(t *testing.T, host string) {
	t.Helper()
	for _, scope := range []string{ScopeHost, ScopeDomain} {
		once := ScopeKey(scope, host)
		if twice := ScopeKey(scope, once); twice != once {
			t.Errorf("ScopeKey(%s, %q) = %q, but ScopeKey(%s, %q) = %q", scope, host, once, scope, once, twice)
		}
	}
}

func TestScopeKeySeeds(t *testing.T) {
	checkSeeds(t, scopeKeySeeds, checkScopeKey)
}

func FuzzScopeKey(f *testing.F) {
	fuzzStrings(f, scopeKeySeeds, checkScopeKey)
}

func TestParsePaths(t *testing.T) {
	tests := []struct {
		desc string
		list []string
		want string // the prefixes joined by spaces, or a substring of the error
		err  bool
	}{
		{desc: "none", list: nil, want: ""},
		{desc: "longest first", list: []string{"/a", "/search", "/a/b"}, want: "/search /a/b /a"},
		{desc: "no slash", list: []string{"search"}, want: `breaker.paths[0]: "search" must be a path prefix`, err: true},
		{desc: "root", list: []string{"/x", "/"}, want: `breaker.paths[1]: "/"`, err: true},
		{desc: "query", list: []string{"/x?y"}, want: `breaker.paths[0]: "/x?y"`, err: true},
		{desc: "twice", list: []string{"/x", "/y", "/x"}, want: `breaker.paths[2]: "/x" is breaker.paths[0] again`, err: true},
		{desc: "twice, once with a trailing slash", list: []string{"/x", "/x/"}, want: `breaker.paths[1]: "/x/" is breaker.paths[0] again`, err: true},
		{desc: "too many", list: make([]string, MaxPaths+1), want: "breaker.paths: 65 prefixes", err: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := ParsePaths(tc.list)
			if tc.err {
				if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalidSetting) {
					t.Fatalf("ParsePaths(%q) error = %v, want one containing %q", tc.list, err, tc.want)
				}
				return
			}
			if err != nil || strings.Join(got, " ") != tc.want {
				t.Fatalf("ParsePaths(%q) = %q, %v; want %q", tc.list, got, err, tc.want)
			}
		})
	}
}

func TestPathKey(t *testing.T) {
	prefixes, err := ParsePaths([]string{"/search", "/checkout", "/search/deep", "/static/"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		desc, key, path, want string
	}{
		{desc: "the prefix itself", key: "a.com", path: "/search", want: "a.com/search"},
		{desc: "below it", key: "a.com", path: "/search/x", want: "a.com/search"},
		{desc: "the longest", key: "a.com", path: "/search/deep/x", want: "a.com/search/deep"},
		{desc: "a longer name", key: "a.com", path: "/searchlight", want: "a.com"},
		{desc: "a prefix ending in a slash", key: "a.com", path: "/static/x.css", want: "a.com/static/"},
		{desc: "a prefix ending in a slash, its bare path", key: "a.com", path: "/static", want: "a.com/static/"},
		{desc: "a prefix ending in a slash, a longer name", key: "a.com", path: "/statics", want: "a.com"},
		{desc: "none", key: "a.com", path: "/", want: "a.com"},
		{desc: "scope engine", key: "", path: "/checkout/pay", want: "/checkout"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got := PathKey(tc.key, prefixes, tc.path)
			if got != tc.want {
				t.Fatalf("PathKey(%q, %q) = %q, want %q", tc.key, tc.path, got, tc.want)
			}
			key, path := SplitPathKey(got)
			if key != tc.key || key+path != got {
				t.Errorf("SplitPathKey(%q) = %q, %q; want %q and the rest", got, key, path, tc.key)
			}
		})
	}
}
