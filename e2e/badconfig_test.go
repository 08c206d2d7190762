package e2e

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestBadConfigurationDisablesItsRouter: a Weir middleware whose configuration New refuses
// disables the routers that use it, and only those. Traefik's log names the field and the
// value, and clients of the disabled router get what they would get without it: Traefik's
// 404, or the answer of another router that matches. Fixing the configuration brings the
// router back without a restart. docs/configuration.md and the README say so.
func TestBadConfigurationDisablesItsRouter(t *testing.T) {
	o := newOrigin(t)
	for _, p := range []string{"/good/page", "/bad/page", "/other/bad/page"} {
		p := p
		o.Handle(p, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Cache-Control", "max-age=60")
			fmt.Fprintf(w, "origin %s", p)
		})
	}
	good := Dynamic{
		Routes: []Route{
			{Name: "good", Rule: "PathPrefix(`/good`)", Middleware: "weir-good"},
			{Name: "bad", Rule: "PathPrefix(`/bad`)", Middleware: "weir-bad"},
			// A shorter rule, so a lower priority: /other/bad/page is the bad router's
			// when it serves, and this one's when it does not.
			{Name: "other", Rule: "PathPrefix(`/other`)"},
			{Name: "otherbad", Rule: "PathPrefix(`/other/bad`)", Middleware: "weir-bad"},
		},
		Middlewares: map[string]map[string]interface{}{
			"weir-good": nil,
			"weir-bad":  nil,
		},
	}
	tr := startTraefik(t, o, good)
	wantReply(t, "GET /bad/page, configuration good", get(t, tr, "/bad/page"), http.StatusOK, "origin /bad/page")

	broken := good
	broken.Middlewares = map[string]map[string]interface{}{
		"weir-good": nil,
		"weir-bad":  {"limiter": map[string]interface{}{"maxQueueWait": "soon"}},
	}
	err := tr.Apply(broken)
	if !errors.Is(err, errRouter) {
		t.Fatalf("Apply with limiter.maxQueueWait \"soon\": err = %v, want %v", err, errRouter)
	}
	t.Logf("Traefik's API: %v", err)

	r := get(t, tr, "/bad/page")
	if r.status != http.StatusNotFound || r.header.Get("Cache-Status") != "" || strings.TrimSpace(r.body) != "404 page not found" {
		t.Errorf("GET /bad/page, its router disabled: %d %q (Cache-Status %q), want Traefik's 404 page not found", r.status, short(r.body), r.header.Get("Cache-Status"))
	}
	wantReply(t, "GET /other/bad/page, its router disabled", get(t, tr, "/other/bad/page"), http.StatusOK, "origin /other/bad/page")
	if cs := get(t, tr, "/other/bad/page").header.Get("Cache-Status"); cs != "" {
		t.Errorf("GET /other/bad/page: Cache-Status %q, want none: the router without Weir answered", cs)
	}
	wantReply(t, "GET /good/page, another Weir middleware", get(t, tr, "/good/page"), http.StatusOK, "origin /good/page")

	log := tr.LogTail(200)
	for _, want := range []string{
		`limiter.maxQueueWait: \"soon\" is not a duration`, // Traefik's ERROR line, quoted
		"routerName=bad@file",                              // one such line per disabled router
		"routerName=otherbad@file",
		"level=error event=config_rejected middleware=weir-bad@file", // Weir's own event line
	} {
		if !strings.Contains(log, want) {
			t.Errorf("Traefik's log lacks %q:\n%s", want, log)
		}
	}
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, "is not a duration") {
			continue
		}
		t.Logf("Traefik logs: %s", line)
		if strings.Contains(line, "routerName=") && !strings.Contains(line, "routerName=bad@file") && !strings.Contains(line, "routerName=otherbad@file") {
			t.Errorf("Traefik's log blames a router that does not use the bad middleware: %s", line)
		}
	}

	apply(t, tr, good)
	wantReply(t, "GET /bad/page, configuration fixed", get(t, tr, "/bad/page"), http.StatusOK, "origin /bad/page")
}
