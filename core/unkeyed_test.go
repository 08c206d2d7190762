package core

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/weirproxy/weir/core/httpcache"
)

// Unkeyed request headers and cache poisoning. Weir's key is the scheme (from the connection:
// r.TLS, never a header), r.Host, the path and the normalised query (key.go). The headers
// below are not in it, so they cannot make a request read or write another key's entry. What
// they cannot prevent is an origin that reflects one of them into a storable answer: that
// answer is stored under the request's own key and served to the next clean request for the
// same URL. These tests pin both halves: the key ignores the headers, and a reflecting
// origin's answer is what a clean request then gets. The defence against the second is the
// origin's (not reflecting unkeyed headers into cacheable answers, or naming them in Vary,
// which Weir honours: TestUnkeyedHeaderNamedInVaryIsKeyed).

// poisonHeaders are the headers a poisoning attempt sends, as name, value pairs.
var poisonHeaders = []string{
	"X-Forwarded-Host", "evil.example",
	"X-Original-Url", "/admin",
	"X-Rewrite-Url", "/admin",
	"X-Forwarded-Proto", "https",
	"X-Forwarded-Scheme", "https",
	"X-Http-Method-Override", "POST",
}

// reflectingOrigin answers a storable page whose body names the poison headers it saw.
func reflectingOrigin(t *testing.T) *scriptOrigin {
	return newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		var b strings.Builder
		b.WriteString("page")
		for i := 0; i+1 < len(poisonHeaders); i += 2 {
			if v := r.Header.Get(poisonHeaders[i]); v != "" {
				b.WriteString(" " + poisonHeaders[i] + "=" + v)
			}
		}
		w.Write([]byte(b.String()))
	})
}

// (a) Every poison header, alone or all together, leaves the key as it is.
func TestUnkeyedHeadersDoNotChangeTheKey(t *testing.T) {
	k := httpcache.NewKeyer(nil)
	const url = "http://example.com/page?b=2&a=1"
	want := httpcache.Key(&k, newRequest(http.MethodGet, url))
	for i := 0; i+1 < len(poisonHeaders); i += 2 {
		t.Run(poisonHeaders[i], func(t *testing.T) {
			if got := httpcache.Key(&k, newRequest(http.MethodGet, url, poisonHeaders[i], poisonHeaders[i+1])); got != want {
				t.Errorf("key = %q, want %q", got, want)
			}
		})
	}
	t.Run("all", func(t *testing.T) {
		if got := httpcache.Key(&k, newRequest(http.MethodGet, url, poisonHeaders...)); got != want {
			t.Errorf("key = %q, want %q", got, want)
		}
	})
}

// (b) The scheme comes from the connection. X-Forwarded-Proto (or -Scheme) on a plain
// connection keeps the http key, and "http" on a TLS connection keeps the https key: a header
// cannot move an answer between the two.
func TestUnkeyedForwardedProtoDoesNotChangeTheScheme(t *testing.T) {
	k := httpcache.NewKeyer(nil)
	tests := []struct {
		desc   string
		tls    bool
		header []string
		want   string
	}{
		{desc: "plain", want: "http://example.com/p"},
		{desc: "plain claiming https", header: []string{"X-Forwarded-Proto", "https"}, want: "http://example.com/p"},
		{desc: "plain claiming https by scheme", header: []string{"X-Forwarded-Scheme", "https"}, want: "http://example.com/p"},
		{desc: "plain claiming https by Forwarded", header: []string{"Forwarded", "proto=https"}, want: "http://example.com/p"},
		{desc: "tls", tls: true, want: "https://example.com/p"},
		{desc: "tls claiming http", tls: true, header: []string{"X-Forwarded-Proto", "http"}, want: "https://example.com/p"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			r := newRequest(http.MethodGet, "http://example.com/p", tc.header...)
			if tc.tls {
				r.TLS = &tls.ConnectionState{}
			}
			if got := httpcache.Key(&k, r); got != tc.want {
				t.Errorf("key = %q, want %q", got, tc.want)
			}
			if got := httpcache.Partition(r); got != tc.want {
				t.Errorf("partition = %q, want %q", got, tc.want)
			}
		})
	}
}

// (c) The Host is keyed: two hosts are two entries, each fetched once and each served its
// own answer; the scheme likewise.
func TestUnkeyedHostIsKeyed(t *testing.T) {
	o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		w.Write([]byte(scheme + "://" + r.Host))
	})
	h := newFrozenHandler(t, o)
	serve := func(url string, tlsOn bool) *httptest.ResponseRecorder {
		r := newRequest(http.MethodGet, url)
		if tlsOn {
			r.TLS = &tls.ConnectionState{}
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for _, round := range []struct {
		desc        string
		cacheStatus string
	}{
		{desc: "first", cacheStatus: "Weir; fwd=uri-miss; stored"},
		{desc: "second", cacheStatus: "Weir; hit; ttl=60"},
	} {
		for _, tc := range []struct {
			url  string
			tls  bool
			body string
		}{
			{url: "http://a.example/p", body: "http://a.example"},
			{url: "http://b.example/p", body: "http://b.example"},
			{url: "http://a.example:8443/p", body: "http://a.example:8443"},
			{url: "http://a.example/p", tls: true, body: "https://a.example"},
		} {
			w := serve(tc.url, tc.tls)
			if w.Code != 200 || w.Header().Get("Cache-Status") != round.cacheStatus || w.Body.String() != tc.body {
				t.Errorf("%s %s (tls %v): got %d %q %q, want 200 %q %q", round.desc, tc.url, tc.tls,
					w.Code, w.Header().Get("Cache-Status"), w.Body.String(), round.cacheStatus, tc.body)
			}
		}
	}
	if got := o.callCount(); got != 4 {
		t.Errorf("origin calls = %d, want 4 (one per host and scheme)", got)
	}
}

// What Weir does with a poisoning attempt against an origin that reflects unkeyed headers:
// the reflected answer is stored under the request's own key (the URL the attacker asked
// for, nothing else), and a clean request for that URL is served it until it expires. Other
// URLs and hosts are untouched. This is the documented risk, pinned so that a change to it
// is deliberate.
func TestUnkeyedReflectionPoisonsOnlyItsOwnKey(t *testing.T) {
	o := reflectingOrigin(t)
	h := newFrozenHandler(t, o)
	const poisoned = "page X-Forwarded-Host=evil.example X-Original-Url=/admin X-Rewrite-Url=/admin" +
		" X-Forwarded-Proto=https X-Forwarded-Scheme=https X-Http-Method-Override=POST"

	wantAnswer(t, do(t, h, http.MethodGet, "http://example.com/p", poisonHeaders...), 200, "Weir; fwd=uri-miss; stored", poisoned)
	// The override header did not make the GET a POST: the entry was stored, not invalidated.
	wantAnswer(t, do(t, h, http.MethodGet, "http://example.com/p"), 200, "Weir; hit; ttl=60", poisoned)
	// X-Original-Url /admin wrote nothing under /admin, and other hosts are untouched.
	wantAnswer(t, do(t, h, http.MethodGet, "http://example.com/admin"), 200, "Weir; fwd=uri-miss; stored", "page")
	wantAnswer(t, do(t, h, http.MethodGet, "http://other.example/p"), 200, "Weir; fwd=uri-miss; stored", "page")
	wantCalls(t, o, 3)
}

// An origin that names the header it reflects in Vary gets one entry per value: the
// poisoned variant is served only to requests that send the same value.
func TestUnkeyedHeaderNamedInVaryIsKeyed(t *testing.T) {
	o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("Vary", "X-Forwarded-Host")
		w.Write([]byte("host=" + r.Header.Get("X-Forwarded-Host")))
	})
	h := newFrozenHandler(t, o)
	const url = "http://example.com/v"
	do(t, h, http.MethodGet, url, "X-Forwarded-Host", "evil.example")
	w := do(t, h, http.MethodGet, url)
	if got := w.Body.String(); got != "host=" {
		t.Errorf("clean request got %q, want the clean variant %q", got, "host=")
	}
	w = do(t, h, http.MethodGet, url, "X-Forwarded-Host", "evil.example")
	if got, want := w.Header().Get("Cache-Status"), "Weir; hit; ttl=60"; got != want {
		t.Errorf("repeated poisoned request: Cache-Status = %q, want %q", got, want)
	}
	wantCalls(t, o, 2)
}

// X-HTTP-Method-Override is not a method: a GET carrying "POST" or "DELETE" is a GET, which
// neither invalidates the stored entry nor bypasses it (RFC 9111 section 4.4 invalidates on
// the request method only).
func TestUnkeyedMethodOverrideDoesNotInvalidate(t *testing.T) {
	o := staticOrigin(t, 200, []string{"Cache-Control", "max-age=60"}, "kept")
	h := newFrozenHandler(t, o)
	const url = "http://example.com/m"
	do(t, h, http.MethodGet, url)
	for _, m := range []string{"POST", "DELETE", "PURGE"} {
		wantAnswer(t, do(t, h, http.MethodGet, url, "X-Http-Method-Override", m), 200, "Weir; hit; ttl=60", "kept")
	}
	wantCalls(t, o, 1)
}
