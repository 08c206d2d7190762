package core

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/weirproxy/weir/internal/redistest"
)

// TestAdminPurge: each kind of purge drops what it names, and only that.
func TestAdminPurge(t *testing.T) {
	urls := []string{
		"http://a.example.com/p",
		"http://a.example.com/p?x=1",
		"http://a.example.com/pq",
		"http://a.example.com/static/app.js",
		"http://a.example.com:8080/p",
		"http://A.EXAMPLE.com/up",
		"http://a.example.com./dot",
		"http://b.example.com/p",
		"http://b.example.com/tagged",
	}
	tests := []struct {
		desc  string
		body  string
		gone  []string
		wantN string
	}{
		{desc: "one URL with its variants", body: `{"url":"http://a.example.com/p"}`,
			gone: []string{"http://a.example.com/p"}},
		{desc: "a URL with a query", body: `{"url":"http://a.example.com/p?x=1"}`,
			gone: []string{"http://a.example.com/p?x=1"}},
		{desc: "a prefix", body: `{"prefix":"http://a.example.com/p"}`,
			gone: []string{"http://a.example.com/p", "http://a.example.com/p?x=1", "http://a.example.com/pq"}},
		{desc: "a host, every port and spelling", body: `{"host":"A.example.com"}`,
			gone: []string{"http://a.example.com/p", "http://a.example.com/p?x=1", "http://a.example.com/pq",
				"http://a.example.com/static/app.js", "http://a.example.com:8080/p", "http://A.EXAMPLE.com/up",
				"http://a.example.com./dot"}},
		{desc: "a host and a port", body: `{"host":"a.example.com:8080"}`,
			gone: []string{"http://a.example.com:8080/p"}},
		{desc: "a tag", body: `{"tag":"product-42"}`,
			gone: []string{"http://b.example.com/tagged", "http://a.example.com/static/app.js"}},
		{desc: "everything", body: `{"all":true}`, gone: urls},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Cache-Control", "max-age=600")
				w.Header().Set("Vary", "Accept-Language")
				switch {
				case r.URL.Path == "/tagged":
					w.Header().Set("Surrogate-Key", "product-42 list")
				case strings.HasSuffix(r.URL.Path, ".js"):
					w.Header().Set("Cache-Tag", "static, product-42")
				}
				w.Write([]byte("body"))
			})
			h := newTestHandler(t, adminSettings(Settings{Now: newFakeClock().Now, Log: discardLog}), o)
			for _, u := range urls {
				for _, lang := range []string{"en", "fr"} {
					do(t, h, "GET", u, "Accept-Language", lang)
				}
			}
			before := o.callCount()
			w := adminDo(t, h, "POST", "http://a.example.com/_weir/api/purge", tt.body, adminToken)
			wantCode(t, "purge", w, 200)
			gone := make(map[string]bool)
			for _, u := range tt.gone {
				gone[u] = true
			}
			for _, u := range urls {
				for _, lang := range []string{"en", "fr"} {
					w := do(t, h, "GET", u, "Accept-Language", lang)
					hit := strings.Contains(w.Header().Get("Cache-Status"), "hit")
					if hit == gone[u] {
						t.Errorf("%s (%s) after purging %s: Cache-Status %q, want a hit %t", u, lang, tt.body, w.Header().Get("Cache-Status"), !gone[u])
					}
				}
			}
			if got, want := o.callCount()-before, 2*len(tt.gone); got != want {
				t.Errorf("origin calls after the purge %d, want %d", got, want)
			}
		})
	}
}

func TestAdminPurgeErrors(t *testing.T) {
	h := newTestHandler(t, adminSettings(Settings{Now: newFakeClock().Now, Log: discardLog}), http.NotFoundHandler())
	for _, body := range []string{`{"url":"/relative"}`, `{"url":"ftp://x/y"}`, `{"prefix":"/p"}`, `{"host":"a/b"}`} {
		w := adminDo(t, h, "POST", "http://example.com/_weir/api/purge", body, adminToken)
		if w.Code != http.StatusBadRequest {
			t.Errorf("purge %s: status %d, want 400", body, w.Code)
		}
	}
}

// TestPurgeHostSpellingsShared: with a shared store, a purge of a host drops its answers
// stored under every spelling Traefik routes as that host, from Redis as well as from
// memory, and leaves other hosts' and a longer name's.
func TestPurgeHostSpellingsShared(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	o := staticOrigin(t, 200, []string{"Cache-Control", "max-age=600"}, "page")
	// A store timeout no loaded machine reaches: a write that timed out would be kept in
	// local memory instead (store.Fallback), and missing from what the test reads in Redis.
	h := mustNew(t, uniqueEngineName(t), adminSettings(Settings{Now: newFakeClock().Now, Log: discardLog,
		StoreURL: "redis://" + srv.Addr, StoreTimeout: 10 * time.Second}), o)
	for _, u := range []string{"http://example.com/a", "http://EXAMPLE.com/b", "http://Example.COM:8080/c",
		"http://example.com./d", "https://eXample.com/e", "http://example.com.au/f", "http://other.com/g"} {
		wantCode(t, u, do(t, h, "GET", u), 200)
	}
	w := adminDo(t, h, "POST", "http://example.com/_weir/api/purge", `{"host":"example.com"}`, adminToken)
	wantCode(t, "purge", w, 200)
	want := []string{"http://example.com.au/f", "http://other.com/g"}
	if got := storedKeys(t, srv); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("stored after purging example.com: %q, want %q", got, want)
	}
	calls := o.callCount()
	wantCode(t, "a purged spelling again", do(t, h, "GET", "http://EXAMPLE.com/b"), 200)
	wantCalls(t, o, calls+1)
}

func TestCaseGlob(t *testing.T) {
	tests := []struct{ desc, name, want string }{
		{desc: "letters and a dot", name: "ab.c", want: "[aA][bB].[cC]"},
		{desc: "digits and a hyphen", name: "a-1", want: "[aA]-1"},
		{desc: "glob characters escaped", name: "a*?]", want: `[aA]\*\?\]`},
		{desc: "an IPv6 literal", name: "[::1]", want: `\[`},
	}
	for _, tt := range tests {
		if got := caseGlob(tt.name); got != tt.want {
			t.Errorf("%s: caseGlob(%q) = %q, want %q", tt.desc, tt.name, got, tt.want)
		}
	}
}
