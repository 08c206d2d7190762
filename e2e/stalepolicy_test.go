package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirproxy/weir/internal/await"
)

// The operator's stale policy (stale.ifError, stale.whileRevalidate) through a real Traefik:
// a page whose origin sent nothing but max-age=1 is served stale, with a stale answer's
// Cache-Status and Age, when its origin fails or a protection keeps the request from it; and
// the origin sees only what the policy lets through.

// adminAction posts one action of the admin API under adminPath with adminTestToken, failing
// the test unless it was done.
func adminAction(t *testing.T, tr *Traefik, adminPath, action, body string) {
	t.Helper()
	header := map[string]string{"Authorization": "Bearer " + adminTestToken, "Content-Type": "application/json"}
	if r := sendBody(t, tr, "POST", adminPath+"/api/"+action, header, body); r.status != http.StatusOK {
		t.Fatalf("POST %s/api/%s %s: %d %q", adminPath, action, body, r.status, r.body)
	}
}

// adminMetric reads one sample of the metrics under adminPath, as written ("" when the
// metrics lack it).
func adminMetric(t *testing.T, tr *Traefik, adminPath, sample string) string {
	t.Helper()
	r := send(t, tr, "GET", adminPath+"/metrics", map[string]string{"Authorization": "Bearer " + adminTestToken})
	if r.status != http.StatusOK {
		t.Fatalf("GET %s/metrics: %d %q", adminPath, r.status, short(r.body))
	}
	return metricValue(r.body, sample)
}

// wantStale fails unless r is the stored answer body served stale for detail, with an Age
// that counts from when it was stored: between the whole seconds from storedBy (when the
// storing request was answered) to sent (when r was sent), and from fetchedFrom (when the
// storing request was sent) to received (when r came back).
func wantStale(t *testing.T, what string, r reply, body, detail string, fetchedFrom, storedBy, sent, received time.Time) {
	t.Helper()
	wantReply(t, what, r, http.StatusOK, body)
	cs := r.cacheStatus()
	ttl, ok := cs.ttl()
	if !cs.hit() || !ok || ttl >= 0 || cs.params["detail"] != detail {
		t.Errorf("%s: Cache-Status = %q, want \"Weir; hit; ttl=-N; detail=%s\"", what, cs, detail)
	}
	age, err := strconv.Atoi(r.header.Get("Age"))
	least := int(sent.Sub(storedBy) / time.Second)
	most := int(received.Sub(fetchedFrom)/time.Second) + 1
	if err != nil || age < least || age > most {
		t.Errorf("%s: Age = %q, want %d to %d: the seconds since the answer was stored", what, r.header.Get("Age"), least, most)
		return
	}
	// max-age=1: the answer went stale a second after it was stored, so the ttl's magnitude
	// is Age less one, or one more for the rounding of each (Age down, ttl up).
	if ok && ttl < 0 && (-ttl < age-1 || -ttl > age) {
		t.Errorf("%s: ttl = %d with Age %d, want -%d or -%d (stale since a second after storing)", what, ttl, age, age-1, age)
	}
}

// wantFetches fails unless the origin saw n requests for path, or n+1 when the last may have
// been resent (retried).
func wantFetches(t *testing.T, o *Origin, path string, n int64, retried bool) {
	t.Helper()
	if got := o.Count(path); got != n && (!retried || got != n+1) {
		if retried {
			t.Errorf("origin requests for %s = %d, want %d (%d if the transport resent the last)", path, got, n, n+1)
			return
		}
		t.Errorf("origin requests for %s = %d, want %d", path, got, n)
	}
}

// TestStalePolicyOriginDown: with stale.ifError 1h, a page its origin stored with max-age=1
// alone is served stale once expired whichever way the origin fails: a 503, a connection it
// drops without answering (Traefik's 502), an answer slower than timeouts.origin (1s), or a
// breaker an operator opened. Each stale answer carries its Age, a negative ttl and why; the
// origin sees the storing fetch and the failing one (none through the open breaker). The same
// middleware without the policy gives the client the failure.
func TestStalePolicyOriginDown(t *testing.T) {
	o := newOrigin(t)
	middleware := func(prefix string, policy bool) map[string]interface{} {
		conf := specConfig(t)
		conf["timeouts"] = map[string]interface{}{"origin": "1s", "store": "50ms"}
		conf["admin"] = map[string]interface{}{"path": prefix + "/_weir", "token": adminTestToken}
		if policy {
			conf["stale"] = map[string]interface{}{"ifError": "1h"}
		}
		return conf
	}
	tr := startTraefik(t, o, Dynamic{
		Routes: []Route{
			{Name: "sp", Rule: "PathPrefix(`/sp`)", Middleware: "weir-sp"},
			{Name: "sn", Rule: "PathPrefix(`/sn`)", Middleware: "weir-sn"},
		},
		Middlewares: map[string]map[string]interface{}{
			"weir-sp": middleware("/sp", true),
			"weir-sn": middleware("/sn", false),
		},
	})

	tests := []struct {
		desc string
		// name is the subtest's path under each route, and its host's first label: each
		// subtest has a breaker of its own (breaker.scope host), so no failures add up.
		name string
		// fail is how the origin answers once the page is stored; nil: the breaker is opened
		// by hand, and the origin is not asked again.
		fail http.HandlerFunc
		// detail is the stale answer's Cache-Status detail.
		detail string
		// status is what a client gets without the policy.
		status int
		// failing is how many origin requests the failure takes after the storing fetch: one,
		// none through the open breaker.
		failing int64
		// retried: Traefik's transport (net/http) resends an idempotent request once when a
		// reused connection closes before any answer, so the origin may see one more.
		retried bool
		// slow: the failure takes timeouts.origin to be known.
		slow bool
	}{
		{desc: "origin answers 503", name: "unavailable", fail: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "down")
		}, detail: "stale-if-error", status: http.StatusServiceUnavailable, failing: 1},
		{desc: "origin drops the connection", name: "dropped", fail: func(w http.ResponseWriter, r *http.Request) {
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
		}, detail: "stale-if-error", status: http.StatusBadGateway, failing: 1, retried: true},
		{desc: "origin slower than timeouts.origin", name: "hung", fail: func(w http.ResponseWriter, r *http.Request) {
			// Until Weir gives up (its fetch's context ends, and the proxy closes the
			// connection), or long after.
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		}, detail: "stale-if-error", status: http.StatusGatewayTimeout, failing: 1, slow: true},
		{desc: "breaker opened by hand", name: "open", detail: "circuit-open", status: http.StatusServiceUnavailable},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			host := map[string]string{"Host": tc.name + ".stale.test"}
			page := "stored page " + tc.name
			for _, prefix := range []string{"/sp", "/sn"} {
				var n int64
				fail := tc.fail
				o.Handle(prefix+"/"+tc.name, func(w http.ResponseWriter, r *http.Request) {
					if atomic.AddInt64(&n, 1) == 1 || fail == nil {
						w.Header().Set("Cache-Control", "max-age=1")
						io.WriteString(w, page)
						return
					}
					fail(w, r)
				})
			}
			withPolicy, without := "/sp/"+tc.name, "/sn/"+tc.name

			fetchedFrom := time.Now()
			first := send(t, tr, "GET", withPolicy, host)
			storedBy := time.Now()
			wantReply(t, "first GET", first, http.StatusOK, page)
			wantMiss(t, "first GET", first, "uri-miss", true)
			wantReply(t, "first GET without the policy", send(t, tr, "GET", without, host), http.StatusOK, page)
			if tc.fail == nil {
				for _, prefix := range []string{"/sp", "/sn"} {
					adminAction(t, tr, prefix+"/_weir", "breakers/open", `{"key":"`+host["Host"]+`","for":"60s"}`)
				}
			}
			time.Sleep(staleAfter)

			sent := time.Now()
			r := send(t, tr, "GET", withPolicy, host)
			received := time.Now()
			t.Logf("with the policy: %d in %v, Cache-Status %q, Age %s", r.status, r.took.Round(time.Millisecond), r.cacheStatus(), r.header.Get("Age"))
			wantStale(t, "GET once expired, the origin failing", r, page, tc.detail, fetchedFrom, storedBy, sent, received)
			if tc.slow && r.took < 900*time.Millisecond {
				t.Errorf("GET once expired took %v, want about timeouts.origin (1s): the stale answer stands in for the fetch Weir gave up on", r.took)
			}
			wantFetches(t, o, withPolicy, 1+tc.failing, tc.retried)

			c := send(t, tr, "GET", without, host)
			t.Logf("without the policy: %d in %v, Cache-Status %q", c.status, c.took.Round(time.Millisecond), c.cacheStatus())
			if c.status != tc.status || c.cacheStatus().hit() || c.body == page {
				t.Errorf("GET without the policy: %d, Cache-Status %q, body %q; want the failure's %d", c.status, c.cacheStatus(), short(c.body), tc.status)
			}
			if tc.fail == nil && c.cacheStatus().params["detail"] != "circuit-open" {
				t.Errorf("GET without the policy: Cache-Status %q, want detail=circuit-open", c.cacheStatus())
			}
			wantFetches(t, o, without, 1+tc.failing, tc.retried)
		})
	}

	// Each stale answer counted once, by why: three failures of the origin and one refusal.
	for sample, want := range map[string]string{
		`weir_requests_total{outcome="stale"}`:      "4",
		`weir_stale_total{reason="stale-if-error"}`: "3",
		`weir_stale_total{reason="circuit-open"}`:   "1",
	} {
		if got := adminMetric(t, tr, "/sp/_weir", sample); got != want {
			t.Errorf("metrics with the policy: %s = %q, want %s", sample, got, want)
		}
	}
	if got := adminMetric(t, tr, "/sn/_weir", `weir_requests_total{outcome="stale"}`); got != "" && got != "0" {
		t.Errorf("metrics without the policy: weir_requests_total{outcome=\"stale\"} = %s, want 0", got)
	}
}

// TestStalePolicyWhileRevalidate: with stale.whileRevalidate 30s, a page its origin stored
// with max-age=1 alone is answered at once once expired, to every client of a burst, while
// exactly one refresh (slow: 1s) reaches the origin; the refreshed page is then served fresh.
// An answer with must-revalidate keeps no such window: its client waits for the refresh.
func TestStalePolicyWhileRevalidate(t *testing.T) {
	const (
		burst = 8
		// refreshTakes is how slow the origin's refresh is: a client that waited for it
		// would take that long.
		refreshTakes = time.Second
		// atOnce bounds a stale answer's time, well under refreshTakes.
		atOnce = 700 * time.Millisecond
	)
	o := newOrigin(t)
	conf := specConfig(t)
	conf["stale"] = map[string]interface{}{"whileRevalidate": "30s"}
	tr := startTraefik(t, o, cachedRoute("swp", "/swp", "weir-swp", conf))

	tests := []struct {
		desc         string
		path         string
		cacheControl string
		// stale: the policy applies, and the burst is answered from the stored page.
		stale bool
	}{
		{desc: "max-age alone", path: "/swp/plain", cacheControl: "max-age=1", stale: true},
		{desc: "must-revalidate turns the policy off", path: "/swp/strict", cacheControl: "max-age=1, must-revalidate"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			var n int64
			cacheControl := tc.cacheControl
			o.Handle(tc.path, func(w http.ResponseWriter, r *http.Request) {
				if atomic.AddInt64(&n, 1) == 1 {
					w.Header().Set("Cache-Control", cacheControl)
					io.WriteString(w, "v1")
					return
				}
				time.Sleep(refreshTakes)
				w.Header().Set("Cache-Control", "max-age=60")
				io.WriteString(w, "v2")
			})
			fetchedFrom := time.Now()
			wantReply(t, "first GET", get(t, tr, tc.path), http.StatusOK, "v1")
			storedBy := time.Now()
			time.Sleep(staleAfter)

			replies := make([]reply, burst)
			sent := time.Now()
			await.Goroutines(t, burst, 2*requestTimeout, "the burst", func(i int) {
				r, err := fetch(context.Background(), tr.Client(), requestTimeout, http.MethodGet, tr.URL(tc.path), nil)
				if err != nil {
					t.Errorf("request %d of the burst: %v", i+1, err)
				}
				replies[i] = r
			})
			received := time.Now()
			for i, r := range replies {
				what := fmt.Sprintf("request %d of the burst", i+1)
				if !tc.stale {
					wantReply(t, what, r, http.StatusOK, "v2")
					if r.took < refreshTakes-100*time.Millisecond {
						t.Errorf("%s took %v, want it to wait for the %v refresh: must-revalidate forbids a stale answer", what, r.took, refreshTakes)
					}
					continue
				}
				wantStale(t, what, r, "v1", "stale-while-revalidate", fetchedFrom, storedBy, sent, received)
				if r.took > atOnce {
					t.Errorf("%s took %v, want at once (under %v): it waited for the %v refresh", what, r.took, atOnce, refreshTakes)
				}
			}
			// The refresh (or, without the window, the burst's one fetch) reaches the origin
			// once, however many asked.
			if !waitFor(5*time.Second, func() bool { return o.Count(tc.path) >= 2 }) {
				t.Fatalf("no refresh reached the origin within 5s (origin requests %d)", o.Count(tc.path))
			}
			var fresh reply
			if !waitFor(5*time.Second, func() bool {
				fresh = get(t, tr, tc.path)
				return fresh.body == "v2"
			}) {
				t.Fatalf("the refreshed page was not served within 5s: last body %q, Cache-Status %q", fresh.body, fresh.cacheStatus())
			}
			wantHit(t, "GET after the refresh", fresh)
			wantCount(t, o, tc.path, 2)
		})
	}
}
