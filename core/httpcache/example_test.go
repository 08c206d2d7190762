package httpcache_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/entry"
	"github.com/weirproxy/weir/core/httpcache"
)

// Yaegi loads Examples without running them (docs/yaegi.md): TestExamplesAsserted checks
// what each of them prints.

func ExampleParseCacheControl() {
	cc := httpcache.ParseCacheControl([]string{"max-age=60, stale-while-revalidate=30", `private="Set-Cookie"`})
	fmt.Println(cc.MaxAge, cc.StaleWhileRevalidate, cc.Private, cc.SMaxAge)
	// Output: 60 30 true -1
}

// A targeted field speaks to CDNs and wins over Cache-Control (RFC 9213).
func ExampleResponseControl() {
	h := http.Header{"Cache-Control": {"max-age=600"}, "Cdn-Cache-Control": {"max-age=60"}}
	cc := httpcache.ResponseControl(h)
	fmt.Println(cc.MaxAge, cc.Targeted)
	// Output: 60 true
}

func ExampleKey() {
	k := httpcache.NewKeyer([]string{"utm_source"})
	r := httptest.NewRequest(http.MethodGet, "http://example.com/p?b=2&utm_source=x&a=1", nil)
	fmt.Println(httpcache.Key(&k, r))
	fmt.Println(httpcache.PartitionOf(httpcache.Key(&k, r)))
	// Output:
	// http://example.com/p?a=1&b=2
	// http://example.com/p
}

func ExampleStorable() {
	p := &httpcache.Policy{DefaultTTL: time.Minute}
	r := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
	h := http.Header{"Cache-Control": {"max-age=60"}, "Set-Cookie": {"id=1"}}
	fmt.Println(httpcache.Storable(p, r, http.StatusOK, h, httpcache.ResponseControl(h)))
	// Output: false set-cookie
}

func ExampleServeRange() {
	ent := &entry.Entry{Status: http.StatusOK, Header: http.Header{}, Body: []byte("hello world")}
	r := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
	r.Header.Set("Range", "bytes=0-4")
	w := httptest.NewRecorder()
	served := httpcache.ServeRange(w, r, ent)
	fmt.Println(served, w.Code, w.Header().Get("Content-Range"), w.Body.String())
	// Output: true 206 bytes 0-4/11 hello
}

func ExampleNotModified() {
	ent := &entry.Entry{Status: http.StatusOK, Header: http.Header{"Etag": {`"v1"`}}}
	r := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
	r.Header.Set("If-None-Match", `W/"v1"`)
	fmt.Println(httpcache.NotModified(r, ent))
	// Output: true
}

// Fastly's Surrogate-Key and Cloudflare's Cache-Tag name an answer's tags, which a purge
// of one of them drops the answer by.
func ExampleTags() {
	h := http.Header{"Surrogate-Key": {"product-42 products"}, "Cache-Tag": {"products, home"}}
	fmt.Printf("%q\n", httpcache.Tags(h))
	// Output: ["product-42" "products" "home"]
}

func TestExamplesAsserted(t *testing.T) {
	if got := fmt.Sprintf("%q", httpcache.Tags(http.Header{"Surrogate-Key": {"product-42 products"}, "Cache-Tag": {"products, home"}})); got != `["product-42" "products" "home"]` {
		t.Errorf("Tags = %s, want [\"product-42\" \"products\" \"home\"]", got)
	}

	cc := httpcache.ParseCacheControl([]string{"max-age=60, stale-while-revalidate=30", `private="Set-Cookie"`})
	if cc.MaxAge != 60 || cc.StaleWhileRevalidate != 30 || !cc.Private || cc.SMaxAge != -1 {
		t.Errorf("ParseCacheControl = %+v, want max-age 60, stale-while-revalidate 30, private, no s-maxage", cc)
	}

	tc := httpcache.ResponseControl(http.Header{"Cache-Control": {"max-age=600"}, "Cdn-Cache-Control": {"max-age=60"}})
	if tc.MaxAge != 60 || !tc.Targeted {
		t.Errorf("ResponseControl = %+v, want CDN-Cache-Control's max-age 60, targeted", tc)
	}

	k := httpcache.NewKeyer([]string{"utm_source"})
	r := httptest.NewRequest(http.MethodGet, "http://example.com/p?b=2&utm_source=x&a=1", nil)
	if got, want := httpcache.Key(&k, r), "http://example.com/p?a=1&b=2"; got != want {
		t.Errorf("Key = %q, want %q", got, want)
	}
	if got, want := httpcache.PartitionOf(httpcache.Key(&k, r)), "http://example.com/p"; got != want {
		t.Errorf("PartitionOf = %q, want %q", got, want)
	}

	p := &httpcache.Policy{DefaultTTL: time.Minute}
	h := http.Header{"Cache-Control": {"max-age=60"}, "Set-Cookie": {"id=1"}}
	if ok, reason := httpcache.Storable(p, httptest.NewRequest(http.MethodGet, "http://example.com/", nil), http.StatusOK, h, httpcache.ResponseControl(h)); ok || reason != httpcache.ReasonCookie {
		t.Errorf("Storable = %v, %q; want false, %q", ok, reason, httpcache.ReasonCookie)
	}

	ent := &entry.Entry{Status: http.StatusOK, Header: http.Header{}, Body: []byte("hello world")}
	rr := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
	rr.Header.Set("Range", "bytes=0-4")
	w := httptest.NewRecorder()
	if served := httpcache.ServeRange(w, rr, ent); !served || w.Code != 206 || w.Header().Get("Content-Range") != "bytes 0-4/11" || w.Body.String() != "hello" {
		t.Errorf("ServeRange = %v, %d %q %q; want true, 206 \"bytes 0-4/11\" \"hello\"", served, w.Code, w.Header().Get("Content-Range"), w.Body.String())
	}

	tagged := &entry.Entry{Status: http.StatusOK, Header: http.Header{"Etag": {`"v1"`}}}
	cr := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
	cr.Header.Set("If-None-Match", `W/"v1"`)
	if !httpcache.NotModified(cr, tagged) {
		t.Error("NotModified with a weak match of the stored ETag = false, want true")
	}
}
