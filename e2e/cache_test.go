package e2e

import (
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// staleAfter is how long a max-age=1 answer takes to be stale for certain: Age counts
// whole seconds (RFC 9111 §5.1), so a second and a margin.
const staleAfter = 2100 * time.Millisecond

// TestCacheHitMiss: a cacheable answer is fetched once, stored, then served from the cache
// with its Age (RFC 9111 §4.2.3, §5.1) and an RFC 9211 Cache-Status.
func TestCacheHitMiss(t *testing.T) {
	o := newOrigin(t)
	body := body1K("hit")
	o.Handle("/hit/a", answer("max-age=60", body))
	tr := startTraefik(t, o, cachedRoute("hit", "/hit", "weir-hit", specConfig(t)))

	first := get(t, tr, "/hit/a")
	wantReply(t, "first GET", first, http.StatusOK, body)
	wantMiss(t, "first GET", first, "uri-miss", true)

	second := get(t, tr, "/hit/a")
	wantReply(t, "second GET", second, http.StatusOK, body)
	wantHit(t, "second GET", second)
	if ttl, _ := second.cacheStatus().ttl(); ttl > 60 {
		t.Errorf("second GET: ttl = %d, want at most max-age 60", ttl)
	}
	if second.header.Get("Age") == "" {
		t.Errorf("second GET: no Age header on a cached answer (RFC 9111 §5.1)")
	}
	wantCount(t, o, "/hit/a", 1)
}

// TestCacheHitQuery: a URL with a query string is stored under its normalised key; sent in
// that form it is answered from the hit path's lookup, and sent otherwise (parameters in
// another order, a key.queryDrop parameter) from the same entry. `?` alone and no query stay
// two entries, as the origin sees two URIs.
func TestCacheHitQuery(t *testing.T) {
	o := newOrigin(t)
	o.Handle("/q/a", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		io.WriteString(w, "origin saw "+r.URL.RequestURI())
	})
	tr := startTraefik(t, o, cachedRoute("q", "/q", "weir-q", specConfig(t)))

	steps := []struct {
		desc, path, want string
		hit              bool
	}{
		{desc: "first GET", path: "/q/a?a=1&b=2", want: "/q/a?a=1&b=2"},
		{desc: "same URL", path: "/q/a?a=1&b=2", want: "/q/a?a=1&b=2", hit: true},
		{desc: "parameters in another order", path: "/q/a?b=2&a=1", want: "/q/a?a=1&b=2", hit: true},
		{desc: "a dropped parameter", path: "/q/a?utm_source=x&a=1&b=2", want: "/q/a?a=1&b=2", hit: true},
		{desc: "another query", path: "/q/a?a=1", want: "/q/a?a=1"},
		{desc: "an empty query", path: "/q/a?", want: "/q/a?"},
		{desc: "no query", path: "/q/a", want: "/q/a"},
		{desc: "an empty query again", path: "/q/a?", want: "/q/a?", hit: true},
		{desc: "no query again", path: "/q/a", want: "/q/a", hit: true},
	}
	for _, st := range steps {
		r := get(t, tr, st.path)
		wantReply(t, st.desc, r, http.StatusOK, "origin saw "+st.want)
		if st.hit {
			wantHit(t, st.desc, r)
		} else {
			wantMiss(t, st.desc, r, "uri-miss", true)
		}
	}
	wantCount(t, o, "/q/a", 4)
}

// TestStaleWhileRevalidate: past max-age but within stale-while-revalidate (RFC 5861 §3),
// the stale answer is served at once and exactly one background request refreshes it.
func TestStaleWhileRevalidate(t *testing.T) {
	o := newOrigin(t)
	var n int64
	o.Handle("/swr/a", func(w http.ResponseWriter, r *http.Request) {
		if atomic.AddInt64(&n, 1) == 1 {
			w.Header().Set("Cache-Control", "max-age=1, stale-while-revalidate=30")
			io.WriteString(w, "v1")
			return
		}
		// The refresh is slow, so a client that waited for it would notice.
		time.Sleep(time.Second)
		w.Header().Set("Cache-Control", "max-age=60")
		io.WriteString(w, "v2")
	})
	tr := startTraefik(t, o, cachedRoute("swr", "/swr", "weir-swr", specConfig(t)))

	wantReply(t, "first GET", get(t, tr, "/swr/a"), http.StatusOK, "v1")
	time.Sleep(staleAfter)

	stale := get(t, tr, "/swr/a")
	wantReply(t, "GET once stale", stale, http.StatusOK, "v1")
	cs := stale.cacheStatus()
	if ttl, ok := cs.ttl(); !cs.hit() || !ok || ttl >= 0 {
		t.Errorf("GET once stale: Cache-Status = %q, want \"Weir; hit; ttl=-N\"", cs)
	}
	if stale.took > 500*time.Millisecond {
		t.Errorf("GET once stale took %v: it waited for the 1s refresh instead of answering at once", stale.took)
	}
	if !waitFor(5*time.Second, func() bool { return o.Count("/swr/a") >= 2 }) {
		t.Fatalf("no background refresh reached the origin within 5s (origin requests %d)", o.Count("/swr/a"))
	}

	var fresh reply
	if !waitFor(5*time.Second, func() bool {
		fresh = get(t, tr, "/swr/a")
		return fresh.body == "v2"
	}) {
		t.Fatalf("the refreshed answer was not served within 5s: last body %q, Cache-Status %q", fresh.body, fresh.cacheStatus())
	}
	wantHit(t, "GET after the refresh", fresh)
	wantCount(t, o, "/swr/a", 2)
}

// TestStaleIfError: past max-age but within stale-if-error (RFC 5861 §4), an origin that
// fails leaves the client with the stale answer.
func TestStaleIfError(t *testing.T) {
	tests := []struct {
		desc string
		fail http.HandlerFunc
		// retried: Traefik's transport (net/http) resends an idempotent request once when a
		// reused connection closes before any answer, so the origin may see the GET twice.
		retried bool
	}{
		{desc: "origin answers 503", fail: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "down")
		}},
		{desc: "origin closes the connection", fail: func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}, retried: true},
	}
	o := newOrigin(t)
	tr := startTraefik(t, o, cachedRoute("sie", "/sie", "weir-sie", specConfig(t)))
	for i, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			path := fmt.Sprintf("/sie/%d", i)
			var n int64
			fail := tc.fail
			o.Handle(path, func(w http.ResponseWriter, r *http.Request) {
				if atomic.AddInt64(&n, 1) == 1 {
					w.Header().Set("Cache-Control", "max-age=1, stale-if-error=60")
					io.WriteString(w, "good")
					return
				}
				fail(w, r)
			})
			wantReply(t, "first GET", get(t, tr, path), http.StatusOK, "good")
			time.Sleep(staleAfter)
			r := get(t, tr, path)
			wantReply(t, "GET while the origin fails", r, http.StatusOK, "good")
			t.Logf("Cache-Status while the origin fails: %q", r.cacheStatus())
			if got := o.Count(path); got < 2 || (got > 2 && !tc.retried) || got > 3 {
				t.Errorf("origin requests for %s = %d, want 2 (3 if the transport retried)", path, got)
			}
		})
	}
}

// TestVary: each Accept-Language gets its own stored answer (RFC 9111 §4.1); an answer with
// Vary: * never matches a later request.
func TestVary(t *testing.T) {
	o := newOrigin(t)
	o.Handle("/vary/lang", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("Vary", "Accept-Language")
		io.WriteString(w, "hello "+r.Header.Get("Accept-Language"))
	})
	o.Handle("/vary/star", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("Vary", "*")
		io.WriteString(w, "star")
	})
	tr := startTraefik(t, o, cachedRoute("vary", "/vary", "weir-vary", specConfig(t)))

	lang := func(l string) reply {
		t.Helper()
		return send(t, tr, http.MethodGet, "/vary/lang", map[string]string{"Accept-Language": l})
	}
	for _, l := range []string{"en", "fr"} {
		r := lang(l)
		wantReply(t, "first GET "+l, r, http.StatusOK, "hello "+l)
		if cs := r.cacheStatus(); cs.hit() || cs.fwd() == "" {
			t.Errorf("first GET %s: Cache-Status = %q, want a miss (fwd=uri-miss or fwd=vary-miss)", l, cs)
		}
	}
	for _, l := range []string{"en", "fr"} {
		r := lang(l)
		wantReply(t, "second GET "+l, r, http.StatusOK, "hello "+l)
		wantHit(t, "second GET "+l, r)
	}
	wantCount(t, o, "/vary/lang", 2)

	for i := 1; i <= 3; i++ {
		r := get(t, tr, "/vary/star")
		wantReply(t, fmt.Sprintf("GET %d with Vary: *", i), r, http.StatusOK, "star")
		if cs := r.cacheStatus(); cs.hit() {
			t.Errorf("GET %d with Vary: *: Cache-Status = %q, want no hit", i, cs)
		}
	}
	wantCount(t, o, "/vary/star", 3)
}

// TestInvalidation: an unsafe method answered with a non-error status invalidates the
// stored answer for its URI (RFC 9111 §4.4).
func TestInvalidation(t *testing.T) {
	o := newOrigin(t)
	o.Handle("/inv/a", versioned())
	tr := startTraefik(t, o, cachedRoute("inv", "/inv", "weir-inv", specConfig(t)))

	wantReply(t, "first GET", get(t, tr, "/inv/a"), http.StatusOK, "v1")
	cached := get(t, tr, "/inv/a")
	wantReply(t, "second GET", cached, http.StatusOK, "v1")
	wantHit(t, "second GET", cached)

	post := send(t, tr, http.MethodPost, "/inv/a", nil)
	wantReply(t, "POST", post, http.StatusOK, "done")
	if cs := post.cacheStatus(); cs.hit() {
		t.Errorf("POST: Cache-Status = %q, want it forwarded", cs)
	}

	after := get(t, tr, "/inv/a")
	wantReply(t, "GET after POST", after, http.StatusOK, "v2")
	if cs := after.cacheStatus(); cs.hit() {
		t.Errorf("GET after POST: Cache-Status = %q, want a miss", cs)
	}
	if got := o.CountMethod(http.MethodGet, "/inv/a"); got != 2 {
		t.Errorf("origin GETs = %d, want 2", got)
	}
	if got := o.CountMethod(http.MethodPost, "/inv/a"); got != 1 {
		t.Errorf("origin POSTs = %d, want 1", got)
	}
}

// TestRequestsThatMustNotShare: three ways a client could be given an answer the origin gave
// another request, each through a real Traefik: an empty query (`/p?` is not `/p`, RFC 3986
// §6.2.3), white space inside a field the answer varies on (RFC 9111 §4.1), and a request
// that forbids storing its answer (RFC 9111 §5.2.1.5).
func TestRequestsThatMustNotShare(t *testing.T) {
	o := newOrigin(t)
	o.Handle("/share/q", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		io.WriteString(w, r.RequestURI)
	})
	o.Handle("/share/ua", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("Vary", "User-Agent")
		io.WriteString(w, r.Header.Get("User-Agent"))
	})
	o.Handle("/share/nostore", answer("max-age=60", "shared"))
	tr := startTraefik(t, o, cachedRoute("share", "/share", "weir-share", specConfig(t)))

	t.Run("an empty query is not no query", func(t *testing.T) {
		wantReply(t, "GET /share/q", get(t, tr, "/share/q"), http.StatusOK, "/share/q")
		r := get(t, tr, "/share/q?")
		wantReply(t, "GET /share/q?", r, http.StatusOK, "/share/q?")
		wantMiss(t, "GET /share/q?", r, "uri-miss", true)
		wantHit(t, "GET /share/q? again", get(t, tr, "/share/q?"))
		wantCount(t, o, "/share/q", 2)
	})

	t.Run("white space inside a varying field selects another variant", func(t *testing.T) {
		ua := func(v string) reply {
			return send(t, tr, http.MethodGet, "/share/ua", map[string]string{"User-Agent": v})
		}
		wantReply(t, "User-Agent A B/1", ua("A B/1"), http.StatusOK, "A B/1")
		r := ua("AB/1")
		wantReply(t, "User-Agent AB/1", r, http.StatusOK, "AB/1")
		wantMiss(t, "User-Agent AB/1", r, "vary-miss", true)
		wantHit(t, "User-Agent A B/1 again", ua("A B/1"))
		wantCount(t, o, "/share/ua", 2)
	})

	t.Run("a no-store request's answer is not stored", func(t *testing.T) {
		r := send(t, tr, http.MethodGet, "/share/nostore", map[string]string{"Cache-Control": "no-store"})
		wantReply(t, "GET with no-store", r, http.StatusOK, "shared")
		if cs := r.cacheStatus(); cs.has("stored") || cs.params["detail"] != "request-no-store" {
			t.Errorf("GET with no-store: Cache-Status = %q, want detail=request-no-store and nothing stored", cs)
		}
		wantMiss(t, "next GET", get(t, tr, "/share/nostore"), "uri-miss", true)
		wantHit(t, "GET after that", get(t, tr, "/share/nostore"))
		wantCount(t, o, "/share/nostore", 2)
	})
}

// TestTargetedCacheControl: through Traefik, the most specific of Weir's targeted fields
// decides (Weir-Cache-Control, then Surrogate-Control, then CDN-Cache-Control, then
// Cache-Control; RFC 9213 §2.1), Weir announces itself in Surrogate-Capability, and the
// fields meant for Weir alone never reach the client, on a miss, a hit or a streamed answer,
// while CDN-Cache-Control does (RFC 9213 §3).
func TestTargetedCacheControl(t *testing.T) {
	o := newOrigin(t)
	var capability atomic.Value
	capability.Store([]string(nil))
	fields := func(h map[string]string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			capability.Store(r.Header.Values("Surrogate-Capability"))
			for k, v := range h {
				w.Header().Set(k, v)
			}
			io.WriteString(w, "body")
		}
	}
	o.Handle("/tcc/surrogate", fields(map[string]string{"Cache-Control": "no-store", "Surrogate-Control": "max-age=60"}))
	o.Handle("/tcc/weir", fields(map[string]string{"Cache-Control": "max-age=60", "CDN-Cache-Control": "max-age=60",
		"Weir-Cache-Control": "no-store"}))
	o.Handle("/tcc/cdn", fields(map[string]string{"Cache-Control": "no-store", "CDN-Cache-Control": "max-age=60"}))
	tr := startTraefik(t, o, cachedRoute("tcc", "/tcc", "weir-tcc", specConfig(t)))

	tests := []struct {
		path string
		// stored: the second GET is a hit.
		stored   bool
		wantGone []string
		wantKept map[string]string
	}{
		{path: "/tcc/surrogate", stored: true, wantGone: []string{"Surrogate-Control"},
			wantKept: map[string]string{"Cache-Control": "no-store"}},
		{path: "/tcc/weir", stored: false, wantGone: []string{"Weir-Cache-Control"},
			wantKept: map[string]string{"Cache-Control": "max-age=60", "CDN-Cache-Control": "max-age=60"}},
		{path: "/tcc/cdn", stored: true,
			wantKept: map[string]string{"Cache-Control": "no-store", "CDN-Cache-Control": "max-age=60"}},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			first := get(t, tr, tc.path)
			wantReply(t, "first GET", first, http.StatusOK, "body")
			if got := capability.Load().([]string); len(got) != 1 || got[0] != `weir="Surrogate/1.0"` {
				t.Errorf("origin saw Surrogate-Capability %q, want [weir=\"Surrogate/1.0\"]", got)
			}
			second := get(t, tr, tc.path)
			wantReply(t, "second GET", second, http.StatusOK, "body")
			if tc.stored {
				wantHit(t, "second GET", second)
				wantCount(t, o, tc.path, 1)
			} else if cs := second.cacheStatus(); cs.hit() {
				t.Errorf("second GET: Cache-Status = %q, want no hit", cs)
			}
			for i, r := range []reply{first, second} {
				if r.cacheStatus().params["detail"] == "uncacheable" {
					// Passed through with the client's own writer: the origin's fields
					// reach the client as they are (README, "Targeted cache-control
					// fields").
					continue
				}
				for _, k := range tc.wantGone {
					if v := r.header.Values(k); len(v) > 0 {
						t.Errorf("GET %d (%s) carries %s: %q, meant for Weir alone", i+1, r.cacheStatus(), k, v)
					}
				}
				for k, want := range tc.wantKept {
					if got := r.header.Get(k); got != want {
						t.Errorf("GET %d (%s): %s = %q, want %q", i+1, r.cacheStatus(), k, got, want)
					}
				}
			}
		})
	}
}
