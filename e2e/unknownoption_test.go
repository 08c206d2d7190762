package e2e

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

// TestUnknownOptionRefused: Traefik, running Weir in Yaegi, decodes a misspelt option into
// Weir's Unknown fields (mapstructure's ",remain"), and New refuses it: the router is
// disabled, and Traefik's log names the option in full with the closest Weir knows. A
// name differing in case alone is the option itself.
func TestUnknownOptionRefused(t *testing.T) {
	o := newOrigin(t)
	o.Handle("/u/page", answer("max-age=60", "origin /u/page"))
	good := cachedRoute("u", "/u", "weir-u", map[string]interface{}{
		"cache": map[string]interface{}{"maxsize": "8MiB"},
	})
	tr := startTraefik(t, o, good)
	wantReply(t, "GET /u/page, cache.maxsize", get(t, tr, "/u/page"), http.StatusOK, "origin /u/page")

	bad := cachedRoute("u", "/u", "weir-u", map[string]interface{}{
		"breaker": map[string]interface{}{"minrequest": "5"},
	})
	err := tr.Apply(bad)
	if !errors.Is(err, errRouter) {
		t.Fatalf("Apply with breaker.minrequest: err = %v, want %v", err, errRouter)
	}
	if r := get(t, tr, "/u/page"); r.status != http.StatusNotFound {
		t.Errorf("GET /u/page, its router disabled: %d, want 404", r.status)
	}
	log := tr.LogTail(200)
	for _, want := range []string{
		"breaker.minrequest: not an option of Weir's; did you mean breaker.minRequests?",
		"routerName=u@file",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("Traefik's log lacks %q:\n%s", want, log)
		}
	}
}
