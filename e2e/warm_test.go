package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// warmLines returns the lines of Traefik's output that hold event=name.
func warmLines(t *testing.T, tr *Traefik, name string) []string {
	t.Helper()
	return outputWith(t, tr, "event="+name+" ")
}

// TestWarm: through real Traefik, warm.paths are fetched on warm.hosts when the middleware
// starts and again after the admin's purge of everything, so that each first visit is a
// hit; a warm path that answers 404 is named in a warm_failed event.
func TestWarm(t *testing.T) {
	o := newOrigin(t)
	o.Handle("/warm/a", answer("max-age=600", "page a"))
	o.Handle("/warm/b", answer("max-age=600", "page b"))
	o.Handle("/warm/missing", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	d := cachedRoute("warm", "/warm", "weir-warm", map[string]interface{}{
		"admin": map[string]interface{}{"path": "/warm/_weir", "token": adminTestToken},
		"warm": map[string]interface{}{
			"paths": []string{"/warm/a", "/warm/b", "/warm/missing"},
			"hosts": []string{"warm.test"},
		},
	})
	tr := startTraefik(t, o, d)
	host := map[string]string{"Host": "warm.test"}
	bearer := map[string]string{"Host": "warm.test", "Authorization": "Bearer " + adminTestToken, "Content-Type": "application/json"}

	for round, what := range []string{"after the start", "after a purge of everything"} {
		want := int64(round + 1)
		// Warming runs beside Traefik's start, on its own goroutine: it is done when its
		// warm_done line is written.
		if !waitFor(10*time.Second, func() bool { return len(warmLines(t, tr, "warm_done")) >= round+1 }) {
			t.Fatalf("%s: no warm_done line within 10s; log:\n%s", what, tr.LogTail(30))
		}
		for _, p := range []string{"/warm/a", "/warm/b"} {
			if n := o.Count(p); n != want {
				t.Errorf("%s: origin saw %s %d times, want %d", what, p, n, want)
			}
			r := send(t, tr, "GET", p, host)
			wantHit(t, what+": first visit of "+p, r)
			if n := o.Count(p); n != want {
				t.Errorf("%s: the visit of %s reached the origin", what, p)
			}
		}
		if round == 0 {
			r, err := fetchBody(context.Background(), tr.Client(), requestTimeout, "POST", tr.URL("/warm/_weir/api/purge"), bearer, `{"all":true}`)
			if err != nil || r.status != http.StatusOK {
				t.Fatalf("purge all: %d %q, %v", r.status, r.body, err)
			}
		}
	}
	failed := warmLines(t, tr, "warm_failed")
	if len(failed) != 2 || !strings.Contains(failed[0], "url=http://warm.test/warm/missing status=404") {
		t.Errorf("warm_failed lines %q, want /warm/missing's 404 named in each run", failed)
	}
	if done := warmLines(t, tr, "warm_done"); len(done) == 2 && !strings.Contains(done[1], "reason=purge stored=2") {
		t.Errorf("second warm_done %q, want the purge's run storing 2", done[1])
	}
}
