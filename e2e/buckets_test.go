package e2e

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"
)

// TestBuckets: through Traefik, cache.paths stores only the paths its patterns match (a path
// outside them reaches the origin on every request, yet a burst on it still costs one
// fetch), and cache.ttls gives answers that state no freshness their path's TTL, the
// origin's max-age coming first.
func TestBuckets(t *testing.T) {
	o := newOrigin(t)
	o.Handle("/bk/static/a.css", answer("", "css"))
	o.Handle("/bk/lib/app.js", answer("", "js"))
	o.Handle("/bk/static/own.css", answer("max-age=30", "own"))
	o.Handle("/bk/page", answer("max-age=60", "page"))
	o.Handle("/bk/slow", func(w http.ResponseWriter, r *http.Request) {
		// Long enough for every client of the burst to join the flight.
		time.Sleep(time.Second)
		w.Header().Set("Cache-Control", "max-age=60")
		io.WriteString(w, "slow")
	})
	conf := specConfig(t)
	cache, _ := conf["cache"].(map[string]interface{})
	if cache == nil {
		cache = map[string]interface{}{}
		conf["cache"] = cache
	}
	cache["paths"] = []interface{}{"/bk/static/", "*.js"}
	// One item holding the list comma-separated, as a label writes it.
	cache["ttls"] = []interface{}{"/bk/static/*=1h,*.js=1d"}
	tr := startTraefik(t, o, cachedRoute("bk", "/bk", "weir-bk", conf))

	steps := []struct {
		desc, path, body string
		hit              bool
		minTTL, maxTTL   int
	}{
		{desc: "a prefix's first GET", path: "/bk/static/a.css", body: "css"},
		{desc: "a prefix's TTL", path: "/bk/static/a.css", body: "css", hit: true, minTTL: 3500, maxTTL: 3600},
		{desc: "a suffix's first GET", path: "/bk/lib/app.js", body: "js"},
		{desc: "a suffix's TTL", path: "/bk/lib/app.js", body: "js", hit: true, minTTL: 86300, maxTTL: 86400},
		{desc: "the origin's max-age, first GET", path: "/bk/static/own.css", body: "own"},
		{desc: "the origin's max-age wins", path: "/bk/static/own.css", body: "own", hit: true, minTTL: 0, maxTTL: 30},
	}
	for _, st := range steps {
		r := get(t, tr, st.path)
		wantReply(t, st.desc, r, http.StatusOK, st.body)
		if !st.hit {
			wantMiss(t, st.desc, r, "uri-miss", true)
			continue
		}
		wantHit(t, st.desc, r)
		if ttl, _ := r.cacheStatus().ttl(); ttl < st.minTTL || ttl > st.maxTTL {
			t.Errorf("%s: ttl = %d, want %d to %d", st.desc, ttl, st.minTTL, st.maxTTL)
		}
	}
	wantCount(t, o, "/bk/static/a.css", 1)
	wantCount(t, o, "/bk/lib/app.js", 1)
	wantCount(t, o, "/bk/static/own.css", 1)

	// Outside cache.paths: never stored, though the origin says max-age=60.
	for i := 0; i < 3; i++ {
		r := get(t, tr, "/bk/page")
		wantReply(t, "GET outside cache.paths", r, http.StatusOK, "page")
		if cs := r.cacheStatus(); cs.hit() || cs.fwd() != "uri-miss" || cs.has("stored") || cs.params["detail"] != "path-not-cached" {
			t.Errorf("GET outside cache.paths: Cache-Status = %q, want \"Weir; fwd=uri-miss; detail=path-not-cached\"", cs)
		}
	}
	wantCount(t, o, "/bk/page", 3)

	// A burst outside cache.paths shares one fetch; the next request fetches again.
	const clients = 20
	results := make(chan reply, clients)
	errs := make(chan error, clients)
	start := make(chan struct{})
	for i := 0; i < clients; i++ {
		go func() {
			<-start
			r, err := fetch(context.Background(), tr.Client(), requestTimeout, http.MethodGet, tr.URL("/bk/slow"), nil)
			if err != nil {
				errs <- err
				return
			}
			results <- r
		}()
	}
	close(start)
	collapsed := 0
	timeout := time.After(30 * time.Second)
	for i := 0; i < clients; i++ {
		select {
		case err := <-errs:
			t.Errorf("client: %v", err)
		case r := <-results:
			wantReply(t, "burst outside cache.paths", r, http.StatusOK, "slow")
			if r.cacheStatus().has("collapsed") {
				collapsed++
			}
		case <-timeout:
			t.Fatalf("burst outside cache.paths hangs: %d of %d clients answered in 30s", i, clients)
		}
	}
	wantCount(t, o, "/bk/slow", 1)
	if collapsed == 0 {
		t.Errorf("no answer of the burst says collapsed, want the followers to")
	}
	wantReply(t, "GET after the burst", get(t, tr, "/bk/slow"), http.StatusOK, "slow")
	wantCount(t, o, "/bk/slow", 2)
}
