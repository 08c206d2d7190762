package e2e

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Losing the shared store costs hit ratio, not the cache (store.Fallback): while Redis is
// down each instance keeps caching in its own memory, and once Redis is back, what was kept
// meanwhile is dropped and answers are shared through Redis again.

// outageRequests is how many GETs of one URL each instance serves during the outage.
const outageRequests = 10

// outageAdmin is the admin path of the outage test's instances, under their route.
const outageAdmin = "/outage/_weir"

// eventWithin bounds the wait for an instance to log an event of the shared store.
const eventWithin = 45 * time.Second

// waitLogged waits until tr has logged event at least n times, calling poke between looks
// (requests that make the store fail, for the breaker to open), and fails the test after
// eventWithin.
func waitLogged(t *testing.T, tr *Traefik, name, event string, n int, poke func()) {
	t.Helper()
	began := time.Now()
	for strings.Count(tr.LogTail(2000), "event="+event) < n {
		if time.Since(began) > eventWithin {
			t.Fatalf("hangs: traefik %s logged %s fewer than %d times within %v", name, event, n, eventWithin)
		}
		if poke != nil {
			poke()
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRedisOutageKeepsCaching: two Traefik processes share a Redis that is stopped. With the
// near cache on, the loss of tracking starts local caching at once; with it off, the store
// breaker opening does. Then a URL fetched once through an instance is a hit there
// (the origin counts one request per instance for outageRequests each), and each such hit
// counts in weir_store_fallback_hits_total; a PURGE drops the
// local copy (and answers 503: the shared store was not purged). Once Redis is back (and, with
// the near cache, tracking too), nothing kept during the outage is served: the next GET is a
// miss stored in Redis, and a hit on the other instance.
func TestRedisOutageKeepsCaching(t *testing.T) {
	requireE2ERedis(t)
	tests := []struct {
		desc string
		near bool
	}{
		{desc: "near cache on", near: true},
		{desc: "near cache off", near: false},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			rd := startRedis(t, 0)
			o := newOrigin(t)
			const path = "/outage/a"
			o.Handle(path, versioned())
			o.Handle("/outage/poke", answer("max-age=60", "poke"))
			o.Handle("/outage/recover", answer("max-age=60", "recovered"))
			conf := redisConfig(rd.URL(0))
			if !tc.near {
				conf = noNearCache(conf)
			}
			conf["admin"].(map[string]interface{})["path"] = outageAdmin
			a, b := startPair(t, o, cachedRoute("outage", "/outage", "weir-outage", conf))
			trs := []*Traefik{a, b}
			names := []string{"A", "B"}
			if tc.near {
				for i, tr := range trs {
					waitLogged(t, tr, names[i], "near_cache_back", 1, nil)
				}
			}
			took, _ := waitShared(t, a, b, "/outage/recover")
			t.Logf("shared store in use %v after start", took.Round(time.Millisecond))

			if err := rd.Stop(); err != nil {
				t.Fatalf("stop redis: %v", err)
			}
			stopped := time.Now()
			for i, tr := range trs {
				tr := tr
				if tc.near {
					waitLogged(t, tr, names[i], "near_cache_lost", 1, nil)
					continue
				}
				poke := 0
				waitLogged(t, tr, names[i], "store_breaker_opened", 1, func() {
					poke++
					callT(t, tr, http.MethodGet, fmt.Sprintf("/outage/poke?%d", poke))
				})
			}
			t.Logf("redis stopped; local caching on both instances %v later", time.Since(stopped).Round(time.Millisecond))

			var fetched int64
			for i, tr := range trs {
				for n := 1; n <= outageRequests; n++ {
					r := callT(t, tr, http.MethodGet, path)
					what := fmt.Sprintf("GET %d on %s with redis stopped", n, names[i])
					if r.status != http.StatusOK {
						t.Fatalf("%s: status %d, want 200", what, r.status)
					}
					if n == 1 {
						wantMiss(t, what, r, "uri-miss", true)
						continue
					}
					wantHit(t, what, r)
				}
				fetched++
				wantCount(t, o, path, fetched)
			}

			purge := callT(t, a, "PURGE", path)
			if purge.status != http.StatusServiceUnavailable {
				t.Errorf("PURGE on A with redis stopped: status %d %q, want 503 (the shared store was not purged)",
					purge.status, strings.TrimSpace(purge.body))
			}
			afterPurge := callT(t, a, http.MethodGet, path)
			wantMiss(t, "GET on A after PURGE with redis stopped", afterPurge, "uri-miss", true)
			fetched++
			wantCount(t, o, path, fetched)
			wantHit(t, "GET on B after PURGE on A with redis stopped (B's own copy)", callT(t, b, http.MethodGet, path))
			// Every hit above was the local fallback's: A's outageRequests-1, B's one more.
			for i, tr := range trs {
				want := strconv.Itoa(outageRequests - 1 + i)
				if got := adminMetric(t, tr, outageAdmin, "weir_store_fallback_hits_total"); got != want {
					t.Errorf("%s with redis stopped: weir_store_fallback_hits_total %q, want %s (its hits, all from what it kept)", names[i], got, want)
				}
			}

			if err := rd.Restart(); err != nil {
				t.Fatalf("restart redis: %v", err)
			}
			restarted := time.Now()
			took, tries := waitShared(t, a, b, "/outage/recover")
			if tc.near {
				for i, tr := range trs {
					waitLogged(t, tr, names[i], "near_cache_back", 2, nil)
				}
			}
			t.Logf("redis restarted; shared again %v later (%d tries), tracking back on both %v later",
				took.Round(time.Millisecond), tries, time.Since(restarted).Round(time.Millisecond))

			onA := callT(t, a, http.MethodGet, path)
			wantMiss(t, "GET on A once redis is back (the outage's copy dropped)", onA, "uri-miss", true)
			fetched++
			wantCount(t, o, path, fetched)
			onB := callT(t, b, http.MethodGet, path)
			wantHit(t, "GET on B once redis is back (shared through redis)", onB)
			if onB.body != onA.body {
				t.Errorf("GET on B once redis is back: body %q, want A's %q (shared, not B's outage copy)", onB.body, onA.body)
			}
			wantCount(t, o, path, fetched)
			t.Logf("origin GETs of %s: %d for %d requests", path, o.Count(path), 2*outageRequests+4)
		})
	}
}
