package core

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/store"
)

func TestMissThenHit(t *testing.T) {
	clock := newFakeClock()
	o := staticOrigin(t, 200, []string{"Cache-Control", "max-age=60", "Content-Type", "text/plain"}, "hello")
	h := newTestHandler(t, Settings{Now: clock.Now}, o)

	w := do(t, h, http.MethodGet, "http://example.com/a")
	if got, want := w.Header().Get("Cache-Status"), "Weir; fwd=uri-miss; stored"; got != want {
		t.Errorf("first Cache-Status = %q, want %q", got, want)
	}
	clock.Add(10 * time.Second)
	w = do(t, h, http.MethodGet, "http://example.com/a")
	if got, want := w.Header().Get("Cache-Status"), "Weir; hit; ttl=50"; got != want {
		t.Errorf("second Cache-Status = %q, want %q", got, want)
	}
	if got, want := w.Header().Get("Age"), "10"; got != want {
		t.Errorf("Age = %q, want %q", got, want)
	}
	if got, want := w.Body.String(), "hello"; got != want {
		t.Errorf("body = %q, want %q", got, want)
	}
	wantCalls(t, o, 1)
}

// serverRequest is a request as net/http's server hands it on: parsed from a request line,
// so RequestURI is the target as sent and URL.RawQuery what follows its first "?", a "#"
// and all.
func serverRequest(t *testing.T, method, target string) *http.Request {
	t.Helper()
	r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(method + " " + target + " HTTP/1.1\r\nHost: example.com\r\n\r\n")))
	if err != nil {
		t.Fatalf("request %s %s: %v", method, target, err)
	}
	return r
}

// hitPathKey is the key ServeHTTP looks up first: scheme, host and RequestURI as sent.
func hitPathKey(r *http.Request) string {
	if r.TLS != nil {
		return "https://" + r.Host + r.RequestURI
	}
	return "http://" + r.Host + r.RequestURI
}

// TestQueryHitSameAsGeneralPath: a request whose query is in the key's normal form is
// answered by the hit path's one lookup, any other spelling of it through serve, which
// normalises; both give the entry serve alone would give, and nothing else (`/p?` and `/p`
// stay apart).
func TestQueryHitSameAsGeneralPath(t *testing.T) {
	o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Write([]byte(r.RequestURI + " #" + strconv.Itoa(n)))
	})
	clock := newFakeClock()
	h := newTestHandler(t, Settings{Now: clock.Now, QueryDrop: []string{"utm_source"}}, o)
	for _, target := range []string{"/q?a=1&b=2", "/p", "/p?", "/f?a=1#x", "/e?a=%20&a=1"} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, serverRequest(t, "GET", target))
		if got := w.Header().Get("Cache-Status"); got != "Weir; fwd=uri-miss; stored" {
			t.Fatalf("priming GET %s: Cache-Status %q, want stored", target, got)
		}
	}
	clock.Add(5 * time.Second)
	calls := o.callCount()
	tests := []struct {
		desc, target string
		// wantFast says whether the hit path's own lookup finds the entry.
		wantFast bool
		wantBody string
	}{
		{desc: "query in normal form", target: "/q?a=1&b=2", wantFast: true, wantBody: "/q?a=1&b=2 #1"},
		{desc: "parameters in another order", target: "/q?b=2&a=1", wantBody: "/q?a=1&b=2 #1"},
		{desc: "an empty parameter", target: "/q?a=1&&b=2", wantBody: "/q?a=1&b=2 #1"},
		{desc: "a trailing &", target: "/q?a=1&b=2&", wantBody: "/q?a=1&b=2 #1"},
		{desc: "a dropped parameter", target: "/q?a=1&b=2&utm_source=x", wantBody: "/q?a=1&b=2 #1"},
		{desc: "a dropped parameter first", target: "/q?utm_source=x&a=1&b=2", wantBody: "/q?a=1&b=2 #1"},
		{desc: "no query", target: "/p", wantFast: true, wantBody: "/p #2"},
		{desc: "empty query", target: "/p?", wantFast: true, wantBody: "/p? #3"},
		{desc: "only a dropped parameter", target: "/p?utm_source=x", wantBody: "/p #2"},
		{desc: "a # in the query, as sent", target: "/f?a=1#x", wantFast: true, wantBody: "/f?a=1#x #4"},
		{desc: "repeated parameter, order kept", target: "/e?a=%20&a=1", wantFast: true, wantBody: "/e?a=%20&a=1 #5"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			r := serverRequest(t, "GET", tc.target)
			if fast := store.Lookup(h.hot, hitPathKey(r)) != nil; fast != tc.wantFast {
				t.Errorf("entry under %q: %v, want %v", hitPathKey(r), fast, tc.wantFast)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			general := httptest.NewRecorder()
			serve(h, general, serverRequest(t, "GET", tc.target))
			wantAnswer(t, w, 200, "Weir; hit; ttl=55", tc.wantBody)
			wantAnswer(t, general, 200, "Weir; hit; ttl=55", tc.wantBody)
			if got, want := w.Header().Get("Age"), general.Header().Get("Age"); got != want {
				t.Errorf("Age = %q, serve gives %q", got, want)
			}
		})
	}
	if got := o.callCount(); got != calls {
		t.Errorf("origin calls = %d after the hits, want %d", got, calls)
	}
}

// TestQueryHitKeysOnRawQuery: a middleware in front of Weir that rewrites URL.RawQuery and
// leaves RequestURI alone sends the origin the new query; the hit path, which looks up
// RequestURI, must not answer with the old query's entry.
func TestQueryHitKeysOnRawQuery(t *testing.T) {
	o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Write([]byte(r.URL.RawQuery))
	})
	h := newFrozenHandler(t, o)
	for _, target := range []string{"/q?a=1", "/q?a=2", "/q?x?a=1"} {
		h.ServeHTTP(httptest.NewRecorder(), serverRequest(t, "GET", target))
	}
	tests := []struct {
		desc, target, rawQuery, wantBody string
	}{
		{desc: "another query", target: "/q?a=1", rawQuery: "a=2", wantBody: "a=2"},
		{desc: "a query after a ? in the sent one", target: "/q?x?a=1", rawQuery: "a=1", wantBody: "a=1"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			r := serverRequest(t, "GET", tc.target)
			r.URL.RawQuery = tc.rawQuery
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			wantAnswer(t, w, 200, "Weir; hit; ttl=60", tc.wantBody)
		})
	}
}

func TestRequestNoCache(t *testing.T) {
	tests := []struct {
		desc   string
		header http.Header
		want   bool
	}{
		{desc: "nothing", header: http.Header{}, want: false},
		{desc: "no-cache", header: http.Header{"Cache-Control": {"no-cache"}}, want: true},
		{desc: "max-age=0", header: http.Header{"Cache-Control": {"max-age=0"}}, want: true},
		{desc: "max-age=10", header: http.Header{"Cache-Control": {"max-age=10"}}, want: false},
		{desc: "no-store alone", header: http.Header{"Cache-Control": {"no-store"}}, want: false},
		{desc: "Pragma", header: http.Header{"Pragma": {"no-cache"}}, want: true},
		{desc: "other Pragma", header: http.Header{"Pragma": {"x-foo"}}, want: false},
		{desc: "Pragma ignored beside Cache-Control", header: http.Header{"Cache-Control": {"max-stale"}, "Pragma": {"no-cache"}}, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			r, _ := http.NewRequest(http.MethodGet, "http://example.com/", nil)
			r.Header = tc.header
			if got := requestNoCache(r); got != tc.want {
				t.Errorf("requestNoCache(%v) = %v, want %v", tc.header, got, tc.want)
			}
		})
	}
}

// Two paths that differ on the wire are two keys, on the hit path and off it: a literal %
// in the decoded path (sent as %25) must not make /a%252Fb share the entry of /a%2Fb.
func TestEscapedPathsDoNotCollide(t *testing.T) {
	o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Write([]byte(r.URL.EscapedPath()))
	})
	h := newFrozenHandler(t, o)
	paths := []string{"/a%2Fb", "/a%252Fb", "/a/b", "/x%25", "/x%2525", "/%7Bq", "/{q"}
	for _, p := range paths {
		do(t, h, http.MethodGet, "http://example.com"+p)
	}
	for _, p := range paths {
		want := httptest.NewRequest(http.MethodGet, "http://example.com"+p, nil).URL.EscapedPath()
		w := do(t, h, http.MethodGet, "http://example.com"+p)
		if got := w.Body.String(); got != want {
			t.Errorf("GET %s: got the answer for %s (%s)", p, got, w.Header().Get("Cache-Status"))
		}
	}
}
