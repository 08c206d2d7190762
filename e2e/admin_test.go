package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/weirproxy/weir/internal/await"
)

const adminTestToken = "e2e-operator-token-of-24-chars"

// adminRoutes: /adm through a middleware whose admin takes the token, /adn through one
// whose admin takes it from 10.0.0.0/8 only, which the test's loopback connection is not in.
func adminRoutes() Dynamic {
	return Dynamic{
		Routes: []Route{
			{Name: "adm", Rule: "PathPrefix(`/adm`)", Middleware: "weir-adm"},
			{Name: "adn", Rule: "PathPrefix(`/adn`)", Middleware: "weir-adn"},
		},
		Middlewares: map[string]map[string]interface{}{
			"weir-adm": {
				"admin":   map[string]interface{}{"path": "/adm/_weir", "token": adminTestToken},
				"cache":   map[string]interface{}{"allowPurge": "true"},
				"breaker": map[string]interface{}{"minRequests": "3"},
			},
			"weir-adn": {
				"admin": map[string]interface{}{"path": "/adn/_weir", "token": adminTestToken, "allow": []string{"10.0.0.0/8"}},
			},
		},
	}
}

// TestAdminAccess: through real Traefik, the admin answers 403 to a missing or wrong token
// and to an address outside admin.allow (a forwarded header does not help), PURGE needs the
// token, and nothing under admin.path reaches the origin.
func TestAdminAccess(t *testing.T) {
	o := newOrigin(t)
	o.Handle("/adm/page", answer("max-age=60", "page"))
	tr := startTraefik(t, o, adminRoutes())
	bearer := map[string]string{"Authorization": "Bearer " + adminTestToken}

	tests := []struct {
		desc, method, path string
		header             map[string]string
		want               int
	}{
		{desc: "no token", method: "GET", path: "/adm/_weir/api/state", want: 403},
		{desc: "a wrong token", method: "GET", path: "/adm/_weir/api/state",
			header: map[string]string{"Authorization": "Bearer wrong"}, want: 403},
		{desc: "the token", method: "GET", path: "/adm/_weir/api/state", header: bearer, want: 200},
		{desc: "metrics with the token", method: "GET", path: "/adm/_weir/metrics", header: bearer, want: 200},
		{desc: "the page with the token", method: "GET", path: "/adm/_weir/", header: bearer, want: 200},
		{desc: "an address outside admin.allow", method: "GET", path: "/adn/_weir/api/state", want: 403},
		{desc: "an address outside admin.allow, with the token", method: "GET", path: "/adn/_weir/api/state", header: bearer, want: 403},
		{desc: "a forwarded address inside admin.allow", method: "GET", path: "/adn/_weir/api/state",
			header: map[string]string{"X-Forwarded-For": "10.1.2.3", "X-Real-Ip": "10.1.2.3"}, want: 403},
		{desc: "an action without the token", method: "POST", path: "/adm/_weir/api/breakers/close", want: 403},
	}
	for _, tt := range tests {
		r := send(t, tr, tt.method, tt.path, tt.header)
		if r.status != tt.want {
			t.Errorf("%s: %s %s: status %d, want %d (%q)", tt.desc, tt.method, tt.path, r.status, tt.want, r.body)
		}
	}
	if r := send(t, tr, "GET", "/adm/_weir/api/state", bearer); r.status == 200 {
		var st struct {
			Middleware string `json:"middleware"`
		}
		if err := json.Unmarshal([]byte(r.body), &st); err != nil || !strings.HasPrefix(st.Middleware, "weir-adm") {
			t.Errorf("state %q: middleware %q, %v; want weir-adm", r.body, st.Middleware, err)
		}
	}

	wantReply(t, "GET /adm/page", get(t, tr, "/adm/page"), http.StatusOK, "page")
	for _, h := range []map[string]string{nil, {"Authorization": "Bearer wrong"}} {
		r := send(t, tr, "PURGE", "/adm/page", h)
		if r.status != http.StatusForbidden {
			t.Errorf("PURGE with %v: status %d, want 403", h, r.status)
		}
	}
	wantHit(t, "GET /adm/page after refused purges", get(t, tr, "/adm/page"))
	wantReply(t, "PURGE with the token", send(t, tr, "PURGE", "/adm/page", bearer), http.StatusOK, "purged\n")
	wantMiss(t, "GET /adm/page after the purge", get(t, tr, "/adm/page"), "uri-miss", true)
	wantCount(t, o, "/adm/page", 2)
	for _, p := range []string{"/adm/_weir/", "/adm/_weir/api/state", "/adm/_weir/metrics", "/adn/_weir/api/state", "/adm/_weir/api/breakers/close"} {
		if n := o.Count(p); n != 0 {
			t.Errorf("%s reached the origin %d times, want 0", p, n)
		}
	}
}

// TestAdminBreakerByHand: an operator opens a host's breaker through the API, clients get
// 503 with Retry-After and circuit-open without the origin being called, and closing it
// lets them through again.
func TestAdminBreakerByHand(t *testing.T) {
	o := newOrigin(t)
	o.Handle("/adm/live", answer("no-store", "live"))
	tr := startTraefik(t, o, adminRoutes())
	post := map[string]string{"Authorization": "Bearer " + adminTestToken, "Content-Type": "application/json"}
	host := strings.TrimPrefix(tr.URL(""), "http://")
	if i := strings.LastIndexByte(host, ':'); i >= 0 {
		host = host[:i]
	}

	wantReply(t, "GET before", get(t, tr, "/adm/live"), http.StatusOK, "live")
	r := sendBody(t, tr, "POST", "/adm/_weir/api/breakers/open", post, `{"key":"`+host+`","for":"60s"}`)
	if r.status != http.StatusOK {
		t.Fatalf("open: %d %q", r.status, r.body)
	}
	r = get(t, tr, "/adm/live")
	if r.status != http.StatusServiceUnavailable || r.cacheStatus().params["detail"] != "circuit-open" || r.header.Get("Retry-After") == "" {
		t.Errorf("GET while open: %d, Cache-Status %q, Retry-After %q; want 503 circuit-open with Retry-After",
			r.status, r.cacheStatus(), r.header.Get("Retry-After"))
	}
	wantCount(t, o, "/adm/live", 1)
	r = sendBody(t, tr, "POST", "/adm/_weir/api/breakers/close", post, `{"key":"`+host+`"}`)
	if r.status != http.StatusOK {
		t.Fatalf("close: %d %q", r.status, r.body)
	}
	wantReply(t, "GET after close", get(t, tr, "/adm/live"), http.StatusOK, "live")
	wantCount(t, o, "/adm/live", 2)
}

// TestAdminFleet: with a shared store, a breaker opened, closed or tuned, and a pace set or
// cleared, through one Traefik's admin reaches the other Traefik within a second (each reads the
// operators' control record every half second).
func TestAdminFleet(t *testing.T) {
	requireE2ERedis(t)
	rd := startRedis(t, 0)
	o := newOrigin(t)
	o.Handle("/f/live", answer("no-store", "live"))
	conf := redisConfig(rd.URL(0))
	conf["admin"] = map[string]interface{}{"path": "/f/_weir", "token": adminTestToken}
	a, b := startPair(t, o, cachedRoute("fleet", "/f", "weir-fleet", conf))
	post := map[string]string{"Authorization": "Bearer " + adminTestToken, "Content-Type": "application/json"}
	act := func(action, body string) {
		t.Helper()
		if r := sendBody(t, a, "POST", "/f/_weir/api/"+action, post, body); r.status != http.StatusOK {
			t.Fatalf("%s on A: %d %q", action, r.status, r.body)
		}
	}
	// seen waits until B shows what A did, and logs how long that took.
	seen := func(what string, cond func() bool) {
		t.Helper()
		began := time.Now()
		if !waitFor(10*time.Second, cond) {
			t.Fatalf("B never showed %s", what)
		}
		t.Logf("B showed %s %v after A", what, time.Since(began).Round(10*time.Millisecond))
	}
	wantReply(t, "GET on B", callT(t, b, "GET", "/f/live"), http.StatusOK, "live")

	act("breakers/open", `{"key":"`+sharedHost+`","for":"60s"}`)
	seen("the open breaker", func() bool {
		r := callT(t, b, "GET", "/f/live")
		return r.status == http.StatusServiceUnavailable && r.cacheStatus().params["detail"] == "circuit-open"
	})
	act("breakers/close", `{"key":"`+sharedHost+`"}`)
	seen("the closed breaker", func() bool { return callT(t, b, "GET", "/f/live").status == http.StatusOK })
	act("breakers/override", `{"key":"`+sharedHost+`","params":"window=30s"}`)
	seen("the override", func() bool {
		r := send(t, b, "GET", "/f/_weir/api/state", map[string]string{"Authorization": "Bearer " + adminTestToken})
		return strings.Contains(r.body, `{"name":"window","value":"30s","override":true}`)
	})
	act("pacing", `{"name":"feeds.example.com","rate":"2/1s"}`)
	seen("the pace", func() bool {
		r := send(t, b, "GET", "/f/_weir/api/state", map[string]string{"Authorization": "Bearer " + adminTestToken})
		return strings.Contains(r.body, `"pacing":[{"name":"feeds.example.com","rate":"2/1s","origin":"operator"}]`)
	})
	act("pacing", `{"name":"feeds.example.com","rate":"off"}`)
	seen("the pace cleared", func() bool {
		r := send(t, b, "GET", "/f/_weir/api/state", map[string]string{"Authorization": "Bearer " + adminTestToken})
		return strings.Contains(r.body, `"pacing":null`)
	})
}

// TestAdminPacing: with no pacing configured, a pace of 2/1s set for a host through the
// admin spaces that host's requests at the origin at least half a second apart, misses and
// pass-through requests alike; cleared, they flow freely again.
func TestAdminPacing(t *testing.T) {
	const (
		n    = 4
		host = "feeds.example.com"
	)
	o := newOrigin(t)
	var arrivals arrivalLog
	for i := 0; i < n; i++ {
		o.Handle(fmt.Sprintf("/adp/feed/%d", i), arrivals.handler())
	}
	conf := map[string]interface{}{
		"admin":   map[string]interface{}{"path": "/adp/_weir", "token": adminTestToken},
		"limiter": map[string]interface{}{"maxQueueWait": "15s"},
	}
	tr := startTraefik(t, o, cachedRoute("adp", "/adp/", "weir-adp", conf))
	post := map[string]string{"Authorization": "Bearer " + adminTestToken, "Content-Type": "application/json"}
	// round sends n requests for host at once, and returns the gaps between their arrivals;
	// detail is the Cache-Status detail each must carry ("": any).
	round := func(what, detail string) []time.Duration {
		t.Helper()
		arrivals.take()
		// Each request waits at most 30s: a round is over within 40s, or hangs.
		await.Goroutines(t, n, 40*time.Second, what, func(i int) {
			r, err := fetch(context.Background(), tr.Client(), 30*time.Second, http.MethodGet,
				tr.URL(fmt.Sprintf("/adp/feed/%d", i)), map[string]string{"Host": host})
			if err != nil || r.status != http.StatusOK {
				t.Errorf("%s, request %d: %d (Cache-Status %q) %v, want 200", what, i, r.status, r.header.Get("Cache-Status"), err)
			}
			if got := r.cacheStatus().params["detail"]; detail != "" && got != detail {
				t.Errorf("%s, request %d: Cache-Status %q, want detail=%s", what, i, r.header.Get("Cache-Status"), detail)
			}
		})
		at := arrivals.take()
		if len(at) != n {
			t.Fatalf("%s: %d requests reached the origin, want %d", what, len(at), n)
		}
		gaps := gapsBetween(at)
		t.Logf("%s: gaps between arrivals %v", what, gaps)
		return gaps
	}

	round("before, misses", "")
	if r := sendBody(t, tr, "POST", "/adp/_weir/api/pacing", post, `{"name":"`+host+`","rate":"2/1s"}`); r.status != http.StatusOK {
		t.Fatalf("set the pace: %d %q", r.status, r.body)
	}
	r := send(t, tr, "GET", "/adp/_weir/api/state", map[string]string{"Authorization": "Bearer " + adminTestToken})
	if want := `{"name":"` + host + `","rate":"2/1s","origin":"operator"}`; !strings.Contains(r.body, want) {
		t.Errorf("api/state %q lacks %s", r.body, want)
	}
	// The first round's answers marked their keys hit-for-pass: these are pass-through, whose
	// Cache-Status says uncacheable.
	for _, what := range []string{"paced, pass-through", "paced again"} {
		for i, gap := range round(what, "uncacheable") {
			// 2/1s: one every 500ms; a little less for the clocks' and the scheduler's slack.
			if gap < 450*time.Millisecond {
				t.Errorf("%s: arrivals %d and %d at the origin %v apart, want at least 500ms (2/1s)", what, i, i+1, gap)
			}
		}
	}
	if r := sendBody(t, tr, "POST", "/adp/_weir/api/pacing", post, `{"name":"`+host+`","rate":""}`); r.status != http.StatusOK {
		t.Fatalf("clear the pace: %d %q", r.status, r.body)
	}
	var spread time.Duration
	for _, gap := range round("cleared", "uncacheable") {
		spread += gap
	}
	if spread >= 450*time.Millisecond {
		t.Errorf("cleared: the arrivals spread over %v, want them together (under 450ms)", spread)
	}
}
