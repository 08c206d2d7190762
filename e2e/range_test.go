package e2e

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRange: through Traefik, a Range request is served from a stored complete answer (RFC
// 9110 §14), a Range miss has the whole answer fetched and stored, and a Range request for
// an answer over cache.maxEntrySize gets the origin's own 206 rather than waiting for the
// whole answer: Weir's fetch gives up on it (Traefik's proxy ends that copy with a panic of
// http.ErrAbortHandler, which Weir recovers) and the request goes to the origin with its
// Range, as do later ones while the key is marked hit-for-pass.
func TestRange(t *testing.T) {
	o := newOrigin(t)
	small := body1K("range")
	large := strings.Repeat(body1K("large"), 3<<10) // 3 MiB, over specConfig's 2MiB
	var mu sync.Mutex
	seen := map[string][]string{}
	serve := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen[r.URL.Path] = append(seen[r.URL.Path], r.Header.Get("Range"))
			mu.Unlock()
			w.Header().Set("Cache-Control", "max-age=60")
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			http.ServeContent(w, r, "", time.Time{}, strings.NewReader(body))
		}
	}
	o.Handle("/range/small", serve(small))
	o.Handle("/range/large", serve(large))
	tr := startTraefik(t, o, cachedRoute("range", "/range", "weir-range", specConfig(t)))
	wantSeen := func(path string, want ...string) {
		t.Helper()
		mu.Lock()
		got := strings.Join(seen[path], ",")
		mu.Unlock()
		if got != strings.Join(want, ",") {
			t.Errorf("origin saw Range %q for %s, want %q", got, path, strings.Join(want, ","))
		}
	}
	wantPart := func(what string, r reply, status int, contentRange, body string) {
		t.Helper()
		wantReply(t, what, r, status, body)
		if got := r.header.Get("Content-Range"); got != contentRange {
			t.Errorf("%s: Content-Range = %q, want %q", what, got, contentRange)
		}
	}

	miss := send(t, tr, http.MethodGet, "/range/small", map[string]string{"Range": "bytes=0-9"})
	wantPart("Range miss", miss, http.StatusPartialContent, "bytes 0-9/1024", small[:10])
	wantMiss(t, "Range miss", miss, "uri-miss", true)
	hit := send(t, tr, http.MethodGet, "/range/small", map[string]string{"Range": "bytes=-10"})
	wantPart("Range hit", hit, http.StatusPartialContent, "bytes 1014-1023/1024", small[1014:])
	wantHit(t, "Range hit", hit)
	past := send(t, tr, http.MethodGet, "/range/small", map[string]string{"Range": "bytes=5000-"})
	wantPart("Range past the end", past, http.StatusRequestedRangeNotSatisfiable, "bytes */1024", "")
	wantHit(t, "Range past the end", past)
	whole := get(t, tr, "/range/small")
	wantPart("GET", whole, http.StatusOK, "", small)
	wantHit(t, "GET", whole)
	wantSeen("/range/small", "")

	for _, what := range []string{"Range over the size limit", "Range once the key passes"} {
		r := send(t, tr, http.MethodGet, "/range/large", map[string]string{"Range": "bytes=100-199"})
		wantPart(what, r, http.StatusPartialContent, "bytes 100-199/3145728", large[100:200])
		if cs := r.cacheStatus(); cs.hit() || cs.fwd() != "uri-miss" {
			t.Errorf("%s: Cache-Status = %q, want a forward", what, cs)
		}
	}
	wantSeen("/range/large", "", "bytes=100-199", "bytes=100-199")
	if log := tr.LogTail(200); strings.Contains(log, "panicked") {
		t.Errorf("traefik log has a panicked fetch:\n%s", log)
	}
}
