package core

import (
	"net/http"
	"strings"
	"testing"
)

// TestAdminPurge: each kind of purge drops what it names, and only that.
func TestAdminPurge(t *testing.T) {
	urls := []string{
		"http://a.example.com/p",
		"http://a.example.com/p?x=1",
		"http://a.example.com/pq",
		"http://a.example.com/static/app.js",
		"http://a.example.com:8080/p",
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
		{desc: "a host, every port", body: `{"host":"A.example.com"}`,
			gone: []string{"http://a.example.com/p", "http://a.example.com/p?x=1", "http://a.example.com/pq",
				"http://a.example.com/static/app.js", "http://a.example.com:8080/p"}},
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
