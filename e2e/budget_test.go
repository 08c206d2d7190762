package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// Request budgets (budgets.*) and origin pacing (pacing) through a real Traefik. The
// harness's connections all come from 127.0.0.1, so clients are told apart by X-Real-IP
// (budgets.clientSource: header:X-Real-IP), which the web entry point is told to trust
// from 127.0.0.1 (Options.TrustForwarded), as a Traefik behind a proxy would be.

// budgetConf is a middleware configuration with a client budget of 5 requests per 10s,
// saved up whole (a burst of 10s), clients read from X-Real-IP.
func budgetConf() map[string]interface{} {
	return map[string]interface{}{
		"budgets": map[string]interface{}{
			"client": "5/10s", "burst": "10s", "clientSource": "header:X-Real-IP",
		},
	}
}

// budgetGet sends a GET of path as client (an X-Real-IP address).
func budgetGet(t *testing.T, tr *Traefik, path, client string) reply {
	t.Helper()
	return send(t, tr, http.MethodGet, path, map[string]string{"X-Real-IP": client})
}

// wantOverBudget checks a 429 of Weir's budgets: Retry-After and the over-budget detail.
func wantOverBudget(t *testing.T, what string, r reply) {
	t.Helper()
	if r.status != http.StatusTooManyRequests {
		t.Errorf("%s: status %d (Cache-Status %q), want 429", what, r.status, r.header.Get("Cache-Status"))
		return
	}
	if got := r.cacheStatus().params["detail"]; got != "over-budget" {
		t.Errorf("%s: Cache-Status %q, want detail=over-budget", what, r.header.Get("Cache-Status"))
	}
	if r.header.Get("Retry-After") == "" {
		t.Errorf("%s: 429 without Retry-After", what)
	}
}

// TestBudgetClientOverBudget: a client over its budget gets 429 with Retry-After, fresh
// hits included, while another client keeps getting 200.
func TestBudgetClientOverBudget(t *testing.T) {
	o := newOrigin(t)
	o.Handle("/budget/page", answer("max-age=60", "page"))
	tr := startTraefikWith(t, Options{TrustForwarded: true}, o.URL, cachedRoute("budget", "/budget/", "weir-budget", budgetConf()))

	for i := 1; i <= 5; i++ {
		r := budgetGet(t, tr, "/budget/page", "198.51.100.1")
		wantReply(t, fmt.Sprintf("client A, request %d", i), r, 200, "page")
	}
	for i := 6; i <= 8; i++ {
		wantOverBudget(t, fmt.Sprintf("client A, request %d", i), budgetGet(t, tr, "/budget/page", "198.51.100.1"))
	}
	for i := 1; i <= 5; i++ {
		r := budgetGet(t, tr, "/budget/page", "198.51.100.2")
		wantReply(t, fmt.Sprintf("client B, request %d", i), r, 200, "page")
		wantOverBudget(t, fmt.Sprintf("client A while B is served, %d", i), budgetGet(t, tr, "/budget/page", "198.51.100.1"))
	}
	wantCount(t, o, "/budget/page", 1)
}

// TestBudgetIPv6Slash64: the addresses of one IPv6 /64 share one bucket; another /64 has
// its own.
func TestBudgetIPv6Slash64(t *testing.T) {
	o := newOrigin(t)
	o.Handle("/budget6/page", answer("max-age=60", "page"))
	tr := startTraefikWith(t, Options{TrustForwarded: true}, o.URL, cachedRoute("budget6", "/budget6/", "weir-budget6", budgetConf()))

	for i := 1; i <= 5; i++ {
		addr := fmt.Sprintf("2001:db8:1:2::%x", i)
		wantReply(t, "request from "+addr, budgetGet(t, tr, "/budget6/page", addr), 200, "page")
	}
	wantOverBudget(t, "sixth request of the /64, another address", budgetGet(t, tr, "/budget6/page", "2001:db8:1:2:ffff:ffff:ffff:ffff"))
	wantReply(t, "another /64", budgetGet(t, tr, "/budget6/page", "2001:db8:1:3::1"), 200, "page")
}

// TestPacingSpacesRequests: with pacing at 3/10s, requests sent at once reach the origin one
// every 3.33s, never together, while another host's requests go through at once.
func TestPacingSpacesRequests(t *testing.T) {
	const (
		n        = 4
		interval = 10 * time.Second / 3
	)
	o := newOrigin(t)
	var arrivals arrivalLog
	for i := 0; i < n; i++ {
		o.Handle(fmt.Sprintf("/paced/%d", i), arrivals.handler())
	}
	o.Handle("/paced/other", answer("no-store", "other"))
	conf := map[string]interface{}{
		"pacing":  []string{"feeds.example.com=3/10s"},
		"limiter": map[string]interface{}{"maxQueueWait": "15s"},
	}
	tr := startTraefik(t, o, cachedRoute("paced", "/paced/", "weir-paced", conf))

	began := time.Now()
	replies := make(chan reply, n)
	for i := 0; i < n; i++ {
		go func(i int) {
			r, err := fetch(context.Background(), tr.Client(), 30*time.Second, http.MethodGet,
				tr.URL(fmt.Sprintf("/paced/%d", i)), map[string]string{"Host": "feeds.example.com"})
			if err != nil {
				t.Errorf("paced request %d: %v", i, err)
			}
			replies <- r
		}(i)
	}
	// Another host, while the paced requests wait: at once.
	other := send(t, tr, http.MethodGet, "/paced/other", map[string]string{"Host": "www.example.org"})
	wantReply(t, "another host", other, 200, "other")
	if other.took > interval {
		t.Errorf("another host's request took %v, want it unpaced (under %v)", other.took, interval)
	}
	for i := 0; i < n; i++ {
		select {
		case r := <-replies:
			if r.status != 200 {
				t.Errorf("paced request: status %d (Cache-Status %q), want 200", r.status, r.header.Get("Cache-Status"))
			}
		case <-time.After(40 * time.Second):
			t.Fatal("hangs: paced requests never answered")
		}
	}
	at := arrivals.take()
	if len(at) != n {
		t.Fatalf("%d paced requests reached the origin, want %d", len(at), n)
	}
	for i, gap := range gapsBetween(at) {
		t.Logf("arrival %d at %v, %v after the one before", i+1, at[i+1].Sub(began).Round(time.Millisecond), gap.Round(time.Millisecond))
		if gap < 3300*time.Millisecond {
			t.Errorf("arrivals %d and %d at the origin %v apart, want at least 3.3s (3/10s)", i, i+1, gap)
		}
	}
}

// TestBudgetShared: two Traefik processes share one Redis and budgets.shared. A client that
// spent its budget through A is refused by B once B has shared its counts (within 200ms and
// a request), where B alone would have allowed it a whole burst; another client is served.
func TestBudgetShared(t *testing.T) {
	requireE2ERedis(t)
	rd := startRedis(t, 0)
	o := newOrigin(t)
	o.Handle("/bshared/page", answer("max-age=60", "page"))
	conf := budgetConf()
	conf["budgets"].(map[string]interface{})["shared"] = "true"
	conf["store"] = map[string]interface{}{"url": rd.URL(0)}
	a, b := startPairWith(t, Options{TrustForwarded: true}, o, cachedRoute("bshared", "/bshared/", "weir-bshared", conf))

	for i := 1; i <= 5; i++ {
		wantReply(t, fmt.Sprintf("client X through A, request %d", i), budgetGet(t, a, "/bshared/page", "198.51.100.9"), 200, "page")
	}
	// Another client's request on A, once a share is due, sends X's counts to Redis.
	time.Sleep(300 * time.Millisecond)
	wantReply(t, "client Y through A", budgetGet(t, a, "/bshared/page", "198.51.100.10"), 200, "page")
	time.Sleep(300 * time.Millisecond)

	allowed := 0
	for i := 1; i <= 5; i++ {
		r := budgetGet(t, b, "/bshared/page", "198.51.100.9")
		switch r.status {
		case 200:
			allowed++
		default:
			wantOverBudget(t, fmt.Sprintf("client X through B, request %d", i), r)
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Logf("client X, its burst of 5 spent through A: B allowed %d of 5", allowed)
	if allowed > 1 {
		t.Errorf("B allowed client X %d requests of 5 after A had spent X's burst, want at most 1 (the one that shares B's counts)", allowed)
	}
	wantReply(t, "client Y through B", budgetGet(t, b, "/bshared/page", "198.51.100.10"), 200, "page")
}
