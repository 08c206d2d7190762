package e2e

import (
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestCoalescing: a burst of requests for one cold key costs the origin one request; the
// others wait for that answer and say so with Cache-Status "collapsed" (RFC 9211 §2.5).
func TestCoalescing(t *testing.T) {
	const clients = 100
	o := newOrigin(t)
	body := body1K("coalesced")
	o.Handle("/co/a", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(500 * time.Millisecond)
		w.Header().Set("Cache-Control", "max-age=60")
		io.WriteString(w, body)
	})
	o.Handle("/warm", func(w http.ResponseWriter, r *http.Request) { time.Sleep(200 * time.Millisecond) })
	d := cachedRoute("co", "/co", "weir-co", specConfig(t))
	d.Routes = append(d.Routes, Route{Name: "warm", Rule: "Path(`/warm`)"})
	tr := startTraefik(t, o, d)
	warmConnections(t, tr, "/warm", clients)

	type result struct {
		status    int
		body      string
		collapsed bool
		err       error
	}
	start := make(chan struct{})
	results := make(chan result, clients)
	for i := 0; i < clients; i++ {
		go func() {
			<-start
			r, err := fetch(context.Background(), tr.Client(), requestTimeout, http.MethodGet, tr.URL("/co/a"), nil)
			results <- result{status: r.status, body: r.body, collapsed: r.cacheStatus().has("collapsed"), err: err}
		}()
	}
	close(start)

	collapsed := 0
	timeout := time.After(30 * time.Second)
	for i := 0; i < clients; i++ {
		select {
		case r := <-results:
			switch {
			case r.err != nil:
				t.Errorf("client: %v", r.err)
			case r.status != http.StatusOK || r.body != body:
				t.Errorf("client: status %d body %q, want 200 and the origin's body", r.status, short(r.body))
			case r.collapsed:
				collapsed++
			}
		case <-timeout:
			t.Fatalf("coalescing hangs: %d of %d clients answered in 30s", i, clients)
		}
	}
	wantCount(t, o, "/co/a", 1)
	if collapsed <= clients/2 {
		t.Errorf("%d of %d answers carry Cache-Status collapsed, want most", collapsed, clients)
	}
	t.Logf("%d of %d answers collapsed; origin peak in flight %d", collapsed, clients, o.MaxInFlight())
}

// warmConnections opens n keep-alive connections to Traefik by sending n concurrent
// requests for a slow uncached path, so a later burst starts without n TCP handshakes.
func warmConnections(t *testing.T, tr *Traefik, path string, n int) {
	t.Helper()
	url := tr.URL(path)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := tr.Client().Get(url)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
}
