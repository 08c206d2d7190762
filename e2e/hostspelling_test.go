package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// Spellings of one host through a real Traefik: its router matches EXAMPLE.com,
// example.com., example.com:1 and Example.COM:8080 as example.com, so Weir's protections
// count them as the one host (core/hostkey), while its cache keeps each spelling's answers
// apart. And a client address field that holds no address counts as the connection's.

// hostSpellings are spellings of example.com that Traefik's Host(`example.com`) matches.
var hostSpellings = []string{"EXAMPLE.com", "example.com.", "example.com:1", "Example.COM:8080"}

// hostRoutes is a Dynamic with routers for Host(`example.com`) and Host(`other.example`)
// under prefix, both through the Weir middleware mw.
func hostRoutes(name, prefix, mw string, conf map[string]interface{}) Dynamic {
	return Dynamic{
		Routes: []Route{
			{Name: name, Rule: "Host(`example.com`) && PathPrefix(`" + prefix + "`)", Middleware: mw},
			{Name: name + "-other", Rule: "Host(`other.example`) && PathPrefix(`" + prefix + "`)", Middleware: mw},
		},
		Middlewares: map[string]map[string]interface{}{mw: conf},
	}
}

// TestHostSpellingsShareHostBudget: with budgets.host at 4 a minute, saved up whole, a flood
// that varies the spelling of the host is counted as the one host: its first 4 requests
// pass, whatever their spelling, and every one after them is refused, while another host
// keeps its own budget. Counted per spelling, each would have had 4.
func TestHostSpellingsShareHostBudget(t *testing.T) {
	o := newOrigin(t)
	o.Handle("/hs/page", answer("no-store", "page"))
	conf := map[string]interface{}{"budgets": map[string]interface{}{"host": "4/1m", "burst": "1m"}}
	tr := startTraefik(t, o, hostRoutes("hs", "/hs/", "weir-hs", conf))

	for _, host := range hostSpellings {
		r := send(t, tr, http.MethodGet, "/hs/page", map[string]string{"Host": host})
		wantReply(t, "first request as "+host, r, 200, "page")
	}
	for round := 0; round < 3; round++ {
		for _, host := range append([]string{"example.com"}, hostSpellings...) {
			r := send(t, tr, http.MethodGet, "/hs/page", map[string]string{"Host": host})
			wantOverBudget(t, fmt.Sprintf("round %d as %s", round+1, host), r)
		}
	}
	wantReply(t, "another host", send(t, tr, http.MethodGet, "/hs/page", map[string]string{"Host": "other.example"}), 200, "page")
	wantCount(t, o, "/hs/page", 5)
}

// TestClientSourceJunkValues: with budgets.clientSource header:X-Client-IP, a field Traefik
// leaves as the client wrote it, and a client budget of one a minute, forty requests with
// forty values that are no address pass the budget once: each counts as the connection's
// address, and each is counted in weir_client_address_invalid_total. A client whose field
// holds an address has its own bucket.
func TestClientSourceJunkValues(t *testing.T) {
	const adminPath = "/cj/_weir"
	o := newOrigin(t)
	o.Handle("/cj/page", answer("no-store", "page"))
	conf := map[string]interface{}{
		"budgets": map[string]interface{}{"client": "1/1m", "burst": "1m", "clientSource": "header:X-Client-IP"},
		"admin":   map[string]interface{}{"path": adminPath, "token": adminTestToken},
	}
	tr := startTraefik(t, o, cachedRoute("cj", "/cj/", "weir-cj", conf))

	passed := 0
	for i := 0; i < 40; i++ {
		r := send(t, tr, http.MethodGet, "/cj/page", map[string]string{"X-Client-IP": fmt.Sprintf("junk-%d", i)})
		switch r.status {
		case http.StatusOK:
			passed++
		default:
			wantOverBudget(t, fmt.Sprintf("junk value %d", i), r)
		}
	}
	if passed != 1 {
		t.Errorf("%d of 40 requests with junk client addresses passed a budget of one, want 1", passed)
	}
	wantCount(t, o, "/cj/page", 1)
	wantReply(t, "a client with an address", send(t, tr, http.MethodGet, "/cj/page", map[string]string{"X-Client-IP": "192.0.2.7:4711"}), 200, "page")
	wantOverBudget(t, "the same address again", send(t, tr, http.MethodGet, "/cj/page", map[string]string{"X-Client-IP": "192.0.2.7"}))
	// Read with an address of its own: the connection's bucket is spent.
	r := send(t, tr, http.MethodGet, adminPath+"/metrics", map[string]string{"Authorization": "Bearer " + adminTestToken, "X-Client-IP": "192.0.2.200"})
	if r.status != http.StatusOK {
		t.Fatalf("GET %s/metrics: %d %q", adminPath, r.status, short(r.body))
	}
	if !strings.Contains(r.body, "\nweir_client_address_invalid_total 40\n") {
		t.Errorf("metrics: no weir_client_address_invalid_total 40 in\n%s", r.body)
	}
}

// TestCacheKeyKeepsHostAsSent: an answer fetched as example.com:1 is stored under that
// spelling and never served to example.com, which Traefik routes to the same router: the
// origin is asked again. Each spelling then hits its own entry.
func TestCacheKeyKeepsHostAsSent(t *testing.T) {
	o := newOrigin(t)
	o.Handle("/hk/page", answer("max-age=60", "page"))
	tr := startTraefik(t, o, hostRoutes("hk", "/hk/", "weir-hk", map[string]interface{}{}))

	get := func(host string) reply {
		t.Helper()
		return send(t, tr, http.MethodGet, "/hk/page", map[string]string{"Host": host})
	}
	wantReply(t, "as example.com:1", get("example.com:1"), 200, "page")
	wantCount(t, o, "/hk/page", 1)
	r := get("example.com")
	wantReply(t, "as example.com", r, 200, "page")
	if r.cacheStatus().hit() {
		t.Errorf("example.com after example.com:1: Cache-Status %q, want a miss", r.header.Get("Cache-Status"))
	}
	wantCount(t, o, "/hk/page", 2)
	for _, host := range []string{"example.com:1", "example.com"} {
		r := get(host)
		if !r.cacheStatus().hit() {
			t.Errorf("%s again: Cache-Status %q, want a hit", host, r.header.Get("Cache-Status"))
		}
	}
	wantCount(t, o, "/hk/page", 2)
}
