package e2e

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"
)

// Bounds of TestReloadsDoNotLeak, overridable for a slow machine or a longer soak.
const (
	// defaultReloads is how many configuration reloads the leak test makes
	// (WEIR_E2E_RELOADS overrides).
	defaultReloads = 1000
	// defaultReloadBudget bounds the reloads' wall time (WEIR_E2E_RELOAD_BUDGET overrides,
	// a Go duration); when it runs out the test checks the reloads made so far and says so.
	defaultReloadBudget = 5 * time.Minute
	// goroutineSlack is how many more goroutines Traefik may have after the reloads than
	// before: idle connections and timers come and go.
	goroutineSlack = 50
)

// TestReloadKeepsCache: Traefik calls New again on every configuration change; a change
// that leaves the middleware's settings alone keeps its cache, one that changes how keys
// are made starts it empty.
func TestReloadKeepsCache(t *testing.T) {
	o := newOrigin(t)
	o.Handle("/reload/a", versioned())
	o.Handle("/other/a", answer("", "other"))
	base := cachedRoute("reload", "/reload", "weir-reload", specConfig(t))
	tr := startTraefik(t, o, base)

	wantMiss(t, "first GET", get(t, tr, "/reload/a"), "uri-miss", true)
	wantHit(t, "second GET", get(t, tr, "/reload/a"))
	dropped := get(t, tr, "/reload/a?utm_source=news")
	wantReply(t, "GET with a dropped query parameter", dropped, http.StatusOK, "v1")
	wantHit(t, "GET with a dropped query parameter", dropped)

	unrelated := base
	unrelated.Routes = append(append([]Route(nil), base.Routes...), Route{Name: "other", Rule: "PathPrefix(`/other`)"})
	apply(t, tr, unrelated)
	wantReply(t, "GET on the added router", get(t, tr, "/other/a"), http.StatusOK, "other")
	kept := get(t, tr, "/reload/a")
	wantReply(t, "GET after an unrelated reload", kept, http.StatusOK, "v1")
	wantHit(t, "GET after an unrelated reload", kept)
	wantCount(t, o, "/reload/a", 1)

	rekeyed := unrelated
	conf := specConfig(t)
	conf["key"] = map[string]interface{}{"queryDrop": []interface{}{"utm_source", "utm_medium"}}
	rekeyed.Middlewares = map[string]map[string]interface{}{"weir-reload": conf}
	apply(t, tr, rekeyed)
	emptied := get(t, tr, "/reload/a")
	wantReply(t, "GET after key.queryDrop changed", emptied, http.StatusOK, "v2")
	if cs := emptied.cacheStatus(); cs.hit() {
		t.Errorf("GET after key.queryDrop changed: Cache-Status = %q, want a miss", cs)
	}
	wantHit(t, "GET after the new key's miss", get(t, tr, "/reload/a"))
	wantCount(t, o, "/reload/a", 2)
}

// TestReloadsDoNotLeak: a thousand configuration reloads leave Traefik with as many
// goroutines as before; each reload builds the middleware anew and nothing of the old
// one may keep running.
func TestReloadsDoNotLeak(t *testing.T) {
	reloads := envInt(t, "WEIR_E2E_RELOADS", defaultReloads)
	budget := envDuration(t, "WEIR_E2E_RELOAD_BUDGET", defaultReloadBudget)
	o := newOrigin(t)
	body := body1K("leak")
	o.Handle("/leak/a", answer("max-age=3600", body))
	o.Handle("/leak/pass", answer("no-store", body))
	d := cachedRoute("leak", "/leak", "weir-leak", specConfig(t))
	tr := startTraefik(t, o, d)

	exercise := func(what string) {
		t.Helper()
		wantReply(t, what, get(t, tr, "/leak/a"), http.StatusOK, body)
		wantReply(t, what, get(t, tr, "/leak/pass"), http.StatusOK, body)
	}
	exercise("GET before the reloads")
	apply(t, tr, d)
	exercise("GET after the first reload")
	before := settledGoroutines(t, tr)

	began := time.Now()
	done := 0
	for done < reloads && time.Since(began) < budget {
		apply(t, tr, d)
		done++
		if done%100 == 0 {
			exercise(fmt.Sprintf("GET after %d reloads", done))
		}
	}
	took := time.Since(began)
	perReload := took / time.Duration(done)
	t.Logf("%d reloads in %v, %v each", done, took.Round(time.Millisecond), perReload.Round(time.Millisecond))
	if done < reloads {
		t.Logf("the %v budget ran out after %d of %d reloads; at %v each, %d take about %v",
			budget, done, reloads, perReload.Round(time.Millisecond), reloads, (perReload * time.Duration(reloads)).Round(time.Second))
	}
	exercise("GET after the reloads")

	var after int
	if !waitFor(15*time.Second, func() bool {
		after = goroutines(t, tr)
		return after <= before+goroutineSlack
	}) {
		t.Errorf("goroutines: %d before %d reloads, %d after (slack %d): the reloads leak", before, done, after, goroutineSlack)
	}
	t.Logf("goroutines: %d before, %d after", before, after)
}

// settledGoroutines reads the goroutine count once two readings 200ms apart agree, or
// after 5s, so connection churn from the warm-up does not inflate the baseline.
func settledGoroutines(t *testing.T, tr *Traefik) int {
	t.Helper()
	prev := goroutines(t, tr)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		n := goroutines(t, tr)
		if n == prev {
			return n
		}
		prev = n
	}
	return prev
}

func goroutines(t *testing.T, tr *Traefik) int {
	t.Helper()
	n, err := tr.Goroutines()
	if err != nil {
		t.Fatalf("%v", err)
	}
	return n
}

// TestMiddlewaresIsolated: two middlewares with different names are two caches; the same
// request through each is stored twice.
func TestMiddlewaresIsolated(t *testing.T) {
	o := newOrigin(t)
	o.Handle("/iso/a", versioned())
	// Both routers match the same URI on the same host, so only the middleware tells the
	// requests apart.
	d := Dynamic{
		Routes: []Route{
			{Name: "iso-a", Rule: "PathPrefix(`/iso`) && Header(`X-Route`, `a`)", Middleware: "weir-a"},
			{Name: "iso-b", Rule: "PathPrefix(`/iso`) && Header(`X-Route`, `b`)", Middleware: "weir-b"},
		},
		Middlewares: map[string]map[string]interface{}{"weir-a": specConfig(t), "weir-b": specConfig(t)},
	}
	tr := startTraefik(t, o, d)
	via := func(route string) reply {
		t.Helper()
		return send(t, tr, http.MethodGet, "/iso/a", map[string]string{"X-Route": route})
	}

	wantReply(t, "first GET via weir-a", via("a"), http.StatusOK, "v1")
	b := via("b")
	wantReply(t, "first GET via weir-b", b, http.StatusOK, "v2")
	if cs := b.cacheStatus(); cs.hit() {
		t.Errorf("first GET via weir-b: Cache-Status = %q, want a miss: weir-a's entry leaked", cs)
	}
	a := via("a")
	wantReply(t, "second GET via weir-a", a, http.StatusOK, "v1")
	wantHit(t, "second GET via weir-a", a)
	b = via("b")
	wantReply(t, "second GET via weir-b", b, http.StatusOK, "v2")
	wantHit(t, "second GET via weir-b", b)
	wantCount(t, o, "/iso/a", 2)
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a positive Go duration", name, v)
	}
	return d
}
