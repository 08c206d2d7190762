package core

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/limit"
)

// Buckets (cache.paths, cache.ttls): which paths are stored, and the freshness given by
// path to answers that state none. Decided where the answer is fetched, never on the hit
// path.

const unstoredPath = "Weir; fwd=uri-miss; detail=path-not-cached"

// TestBucketsPathsStoreOnlyTheirs: with cache.paths set, an answer to a path the patterns
// match is stored, and any other is fetched every time and never stored. Patterns match the
// path as the cache key holds it: escaped as sent, without the query, case-sensitive.
func TestBucketsPathsStoreOnlyTheirs(t *testing.T) {
	const (
		stored = "Weir; fwd=uri-miss; stored"
		hit    = "Weir; hit; ttl=60"
	)
	tests := []struct {
		desc, path          string
		wantFirst, wantNext string
		wantCalls           int
	}{
		{desc: "under a prefix", path: "/static/css/a.css", wantFirst: stored, wantNext: hit, wantCalls: 1},
		{desc: "the prefix itself", path: "/static", wantFirst: stored, wantNext: hit, wantCalls: 1},
		{desc: "under a prefix, with a query", path: "/static/a.css?v=2", wantFirst: stored, wantNext: hit, wantCalls: 1},
		{desc: "a suffix", path: "/lib/app.js", wantFirst: stored, wantNext: hit, wantCalls: 1},
		{desc: "a glob in the last segment", path: "/blog/post.html", wantFirst: stored, wantNext: hit, wantCalls: 1},
		{desc: "outside: another path", path: "/page", wantFirst: unstoredPath, wantNext: unstoredPath, wantCalls: 2},
		{desc: "outside: the root", path: "/", wantFirst: unstoredPath, wantNext: unstoredPath, wantCalls: 2},
		{desc: "outside: a longer segment", path: "/staticfiles/a.css", wantFirst: unstoredPath, wantNext: unstoredPath, wantCalls: 2},
		{desc: "outside: another case", path: "/Static/a.css", wantFirst: unstoredPath, wantNext: unstoredPath, wantCalls: 2},
		{desc: "outside: an encoded slash", path: "/static%2Fa.css", wantFirst: unstoredPath, wantNext: unstoredPath, wantCalls: 2},
		{desc: "outside: a dot in a directory", path: "/a.js/b", wantFirst: unstoredPath, wantNext: unstoredPath, wantCalls: 2},
		{desc: "outside: a glob one segment deeper", path: "/blog/2024/post.html", wantFirst: unstoredPath, wantNext: unstoredPath, wantCalls: 2},
		{desc: "outside: the suffix only in the query", path: "/page?f=app.js", wantFirst: unstoredPath, wantNext: unstoredPath, wantCalls: 2},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			o := staticOrigin(t, 200, []string{"Cache-Control", "max-age=60"}, "body")
			h := newTestHandler(t, Settings{Now: newFakeClock().Now, CachePaths: []string{"/static/", "*.js", "/blog/*.html"}}, o)
			url := "http://example.com" + tc.path
			wantAnswer(t, do(t, h, http.MethodGet, url), 200, tc.wantFirst, "body")
			wantAnswer(t, do(t, h, http.MethodGet, url), 200, tc.wantNext, "body")
			wantCalls(t, o, tc.wantCalls)
		})
	}
}

// TestBucketsUnstoredPathCoalesced: requests for a path outside cache.paths that arrive
// while its fetch is under way share that one fetch, and nothing is stored for the next.
func TestBucketsUnstoredPathCoalesced(t *testing.T) {
	o := countingOrigin(t, []string{"Cache-Control", "max-age=60"})
	o.hold(1)
	h := newTestHandler(t, Settings{Now: newFakeClock().Now, CachePaths: []string{"/static/"}}, o)
	const url = "http://example.com/page"
	leader, followers := startFlight(t, h, o, url, 1, 4)
	o.release(1)
	wantAnswer(t, awaitAnswer(t, leader), 200, unstoredPath, "v1")
	for _, f := range followers {
		wantAnswer(t, awaitAnswer(t, f), 200, "Weir; fwd=uri-miss; collapsed; detail=path-not-cached", "v1")
	}
	wantCalls(t, o, 1)
	wantAnswer(t, do(t, h, http.MethodGet, url), 200, unstoredPath, "v2")
	wantCalls(t, o, 2)
}

// TestBucketsUnstoredPathCountedByLimiter: a path outside cache.paths takes an origin slot
// as any fetch does: with the one slot held and the one queue place taken, both by requests
// outside cache.paths, another is shed with 503 and never reaches the origin.
func TestBucketsUnstoredPathCountedByLimiter(t *testing.T) {
	o := newScriptOrigin(t, limAnswer)
	h := newTestHandler(t, Settings{CachePaths: []string{"/static/"}, Limiter: limit.Settings{
		MaxConcurrent: 1, MaxQueue: 1, MaxQueueWait: 5 * time.Second, AfterFunc: limNeverFires,
	}}, o)
	hold := limFillFetchPool(t, h, o)
	if st := h.e.limiter.Stats(); st.Fetch.Queued != 1 {
		t.Errorf("queued = %d, want 1: the request outside cache.paths waits for a slot", st.Fetch.Queued)
	}
	w := serveRequest(t, h, newRequest("GET", "http://example.com/page"))
	wantCode(t, "GET /page", w, 503)
	if got, want := w.Header().Get("Cache-Status"), "Weir; fwd=uri-miss; detail=queue-full"; got != want {
		t.Errorf("Cache-Status = %q, want %q", got, want)
	}
	if got := w.Header().Get("Retry-After"); got != "5" {
		t.Errorf("Retry-After = %q, want \"5\"", got)
	}
	if n := o.count("/page"); n != 0 {
		t.Errorf("/page reached the origin %d times, want 0", n)
	}
	hold.finish(t)
}

// TestBucketsTTLs: cache.ttls gives an answer that states no freshness its path's TTL, the
// first pattern that matches winning, else cache.defaultTTL; the origin's own freshness
// comes first.
func TestBucketsTTLs(t *testing.T) {
	ttls := []PathTTL{
		{Pattern: "/static/*", TTL: time.Hour},
		{Pattern: "*.js", TTL: 24 * time.Hour},
		{Pattern: "/api/*", TTL: 5 * time.Second},
		{Pattern: "/live/", TTL: 0},
	}
	tests := []struct {
		desc, path string
		header     []string
		defaultTTL time.Duration
		wantFirst  string
		wantNext   string
	}{
		{desc: "a prefix's TTL", path: "/static/a.css", defaultTTL: 30 * time.Second,
			wantFirst: "Weir; fwd=uri-miss; stored", wantNext: "Weir; hit; ttl=3600"},
		{desc: "the first match wins", path: "/static/app.js", defaultTTL: 30 * time.Second,
			wantFirst: "Weir; fwd=uri-miss; stored", wantNext: "Weir; hit; ttl=3600"},
		{desc: "a suffix's TTL", path: "/lib/app.js", defaultTTL: 30 * time.Second,
			wantFirst: "Weir; fwd=uri-miss; stored", wantNext: "Weir; hit; ttl=86400"},
		{desc: "a short TTL", path: "/api/users", defaultTTL: 30 * time.Second,
			wantFirst: "Weir; fwd=uri-miss; stored", wantNext: "Weir; hit; ttl=5"},
		{desc: "no match: cache.defaultTTL", path: "/page", defaultTTL: 30 * time.Second,
			wantFirst: "Weir; fwd=uri-miss; stored", wantNext: "Weir; hit; ttl=30"},
		{desc: "no match and no default: not stored", path: "/page",
			wantFirst: "Weir; fwd=uri-miss; detail=no-freshness", wantNext: "Weir; fwd=uri-miss; detail=uncacheable"},
		{desc: "a match without cache.defaultTTL", path: "/api/users",
			wantFirst: "Weir; fwd=uri-miss; stored", wantNext: "Weir; hit; ttl=5"},
		{desc: "a TTL of 0 keeps cache.defaultTTL off", path: "/live/feed", defaultTTL: 30 * time.Second,
			wantFirst: "Weir; fwd=uri-miss; detail=no-freshness", wantNext: "Weir; fwd=uri-miss; detail=uncacheable"},
		{desc: "the origin's max-age wins", path: "/static/a.css", header: []string{"Cache-Control", "max-age=90"},
			wantFirst: "Weir; fwd=uri-miss; stored", wantNext: "Weir; hit; ttl=90"},
		{desc: "the origin's max-age=0 wins", path: "/static/a.css", header: []string{"Cache-Control", "max-age=0"},
			wantFirst: "Weir; fwd=uri-miss; stored", wantNext: "Weir; fwd=stale; stored"},
		{desc: "the origin's Expires wins", path: "/static/a.css", header: []string{"Expires", "0"},
			wantFirst: "Weir; fwd=uri-miss; stored", wantNext: "Weir; fwd=stale; stored"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			o := staticOrigin(t, 200, append([]string{"Content-Type", "text/plain"}, tc.header...), "body")
			h := newTestHandler(t, Settings{Now: newFakeClock().Now, DefaultTTL: tc.defaultTTL, CacheTTLs: ttls}, o)
			url := "http://example.com" + tc.path
			wantAnswer(t, do(t, h, http.MethodGet, url), 200, tc.wantFirst, "body")
			wantAnswer(t, do(t, h, http.MethodGet, url), 200, tc.wantNext, "body")
		})
	}
}

// TestBucketsPathsAndTTLs: the two together: a TTL pattern outside cache.paths stores
// nothing.
func TestBucketsPathsAndTTLs(t *testing.T) {
	o := staticOrigin(t, 200, []string{"Content-Type", "text/plain"}, "body")
	h := newTestHandler(t, Settings{Now: newFakeClock().Now, CachePaths: []string{"/static/"},
		CacheTTLs: []PathTTL{{Pattern: "/static/*", TTL: time.Hour}, {Pattern: "/api/*", TTL: time.Minute}}}, o)
	do(t, h, http.MethodGet, "http://example.com/static/a")
	wantAnswer(t, do(t, h, http.MethodGet, "http://example.com/static/a"), 200, "Weir; hit; ttl=3600", "body")
	do(t, h, http.MethodGet, "http://example.com/api/a")
	wantAnswer(t, do(t, h, http.MethodGet, "http://example.com/api/a"), 200, unstoredPath, "body")
	wantCalls(t, o, 3)
}

// TestBucketsRefuseBadSettings: New names the field and the value it refuses.
func TestBucketsRefuseBadSettings(t *testing.T) {
	many := make([]string, MaxPathPatterns+1)
	for i := range many {
		many[i] = fmt.Sprintf("/p%d/", i)
	}
	tests := []struct {
		desc string
		s    Settings
		want string
	}{
		{desc: "a relative path", s: Settings{CachePaths: []string{"/ok/", "static/"}},
			want: `cache.paths: "static/" must be a path such as`},
		{desc: "a star in a directory", s: Settings{CachePaths: []string{"/a/*/b"}},
			want: `cache.paths: "/a/*/b" must be a path such as`},
		{desc: "too many paths", s: Settings{CachePaths: many}, want: "cache.paths: 65 patterns, at most 64"},
		{desc: "a bad TTL pattern", s: Settings{CacheTTLs: []PathTTL{{Pattern: "**", TTL: time.Hour}}},
			want: `cache.ttls: "**" must be a path such as`},
		{desc: "a negative TTL", s: Settings{CacheTTLs: []PathTTL{{Pattern: "/a/", TTL: -time.Second}}},
			want: `cache.ttls: "/a/": -1s must not be negative`},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			h, err := New(uniqueEngineName(t), tc.s, http.NotFoundHandler())
			if h != nil || !errors.Is(err, ErrSettings) {
				t.Fatalf("New = %v, %v; want nil and an error wrapping ErrSettings", h, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to hold %q", err, tc.want)
			}
			if err := Check(tc.s); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Check = %v, want it to hold %q", err, tc.want)
			}
		})
	}
}

// TestBucketsChangeEmptiesTheCache: what is stored, and for how long, depends on the
// patterns: a reload that changes them starts from an empty cache, as one changing
// cache.defaultTTL does.
func TestBucketsChangeEmptiesTheCache(t *testing.T) {
	base := Settings{CachePaths: []string{"/static/"}, CacheTTLs: []PathTTL{{Pattern: "*.js", TTL: time.Hour}}}
	changed := []Settings{
		{CachePaths: []string{"/assets/"}, CacheTTLs: base.CacheTTLs},
		{CachePaths: base.CachePaths, CacheTTLs: []PathTTL{{Pattern: "*.js", TTL: time.Minute}}},
		{CachePaths: base.CachePaths},
	}
	for i, s := range changed {
		if s.fingerprint() == base.fingerprint() {
			t.Errorf("change %d: fingerprint %q unchanged", i, s.fingerprint())
		}
	}
	if again := (Settings{CachePaths: []string{"/static/"}, CacheTTLs: []PathTTL{{Pattern: "*.js", TTL: time.Hour}}}); again.fingerprint() != base.fingerprint() {
		t.Errorf("the same buckets: fingerprint %q, want %q", again.fingerprint(), base.fingerprint())
	}
}

func TestKeyPath(t *testing.T) {
	tests := []struct{ desc, key, want string }{
		{desc: "a path", key: "http://example.com/static/a.css", want: "/static/a.css"},
		{desc: "a query", key: "https://example.com/a.js?v=1", want: "/a.js"},
		{desc: "a slash in the query", key: "http://example.com/a?next=/static/x", want: "/a"},
		{desc: "the root", key: "http://example.com/", want: "/"},
		{desc: "no path", key: "http://example.com", want: ""},
		{desc: "no path, a query", key: "http://example.com?a=1", want: ""},
		{desc: "a port", key: "http://example.com:8080/x", want: "/x"},
		{desc: "escaped as sent", key: "http://example.com/st%61tic/a%2Fb", want: "/st%61tic/a%2Fb"},
	}
	for _, tc := range tests {
		if got := keyPath(tc.key); got != tc.want {
			t.Errorf("%s: keyPath(%q) = %q, want %q", tc.desc, tc.key, got, tc.want)
		}
	}
}
