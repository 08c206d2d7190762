package e2e

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestHarness proves the harness against whatever plugin.go holds: Traefik starts with Weir
// as a local plugin, a router through the middleware reaches the origin, reloads are
// detected, a broken configuration is reported with Traefik's reason, pprof is readable,
// and Stop ends the process.
func TestHarness(t *testing.T) {
	o := newOrigin(t)
	o.Handle("/h/echo", answer("", "hello"))
	o.Handle("/bare/echo", answer("", "bare"))
	base := Dynamic{
		Routes: []Route{
			{Name: "h", Rule: "PathPrefix(`/h`)", Middleware: "weir-h"},
			{Name: "empty", Rule: "PathPrefix(`/e`)", Middleware: "weir-empty"},
			{Name: "bare", Rule: "PathPrefix(`/bare`)"},
		},
		Middlewares: map[string]map[string]interface{}{
			"weir-h":     specConfig(t),
			"weir-empty": nil,
		},
	}
	tr := startTraefik(t, o, base)

	t.Run("proxies through the middleware", func(t *testing.T) {
		wantReply(t, "GET /h/echo", get(t, tr, "/h/echo"), http.StatusOK, "hello")
		wantReply(t, "GET /bare/echo", get(t, tr, "/bare/echo"), http.StatusOK, "bare")
		wantCount(t, o, "/h/echo", 1)
		if r := get(t, tr, "/nowhere"); r.status != http.StatusNotFound || r.header.Get("X-Origin-Unknown-Path") != "" {
			t.Errorf("GET /nowhere: status %d from the origin=%v, want Traefik's 404", r.status, r.header.Get("X-Origin-Unknown-Path") != "")
		}
	})

	t.Run("goroutine count", func(t *testing.T) {
		n, err := tr.Goroutines()
		if err != nil {
			t.Fatalf("%v", err)
		}
		if n < 10 {
			t.Errorf("goroutines = %d, want a running Traefik's dozens", n)
		}
		t.Logf("traefik goroutines: %d", n)
	})

	t.Run("reload adds a router", func(t *testing.T) {
		o.Handle("/h2/echo", answer("", "hello again"))
		next := base
		next.Routes = append(append([]Route(nil), base.Routes...), Route{Name: "h2", Rule: "PathPrefix(`/h2`)", Middleware: "weir-h"})
		began := time.Now()
		apply(t, tr, next)
		t.Logf("reload served in %v", time.Since(began).Round(time.Millisecond))
		wantReply(t, "GET /h2/echo", get(t, tr, "/h2/echo"), http.StatusOK, "hello again")
		if tr.Generation() != 2 {
			t.Errorf("generation = %d, want 2", tr.Generation())
		}
	})

	t.Run("reload time", func(t *testing.T) {
		const n = 20
		began := time.Now()
		for i := 0; i < n; i++ {
			apply(t, tr, base)
		}
		t.Logf("%d reloads, %v each", n, (time.Since(began) / n).Round(time.Millisecond))
	})

	t.Run("a router Traefik disables is reported", func(t *testing.T) {
		broken := base
		broken.Routes = append(append([]Route(nil), base.Routes...), Route{Name: "broken", Rule: "PathPrefix(`/broken`)", Middleware: "no-such-middleware"})
		err := tr.Apply(broken)
		if !errors.Is(err, errRouter) {
			t.Fatalf("Apply with an unknown middleware: err = %v, want %v", err, errRouter)
		}
		t.Logf("reported: %v", err)
		apply(t, tr, base)
		wantReply(t, "GET /h/echo after recovery", get(t, tr, "/h/echo"), http.StatusOK, "hello")
	})

	t.Run("stop", func(t *testing.T) {
		if err := tr.Stop(); err != nil {
			t.Fatalf("%v", err)
		}
		if !tr.Exited() {
			t.Errorf("process still running after Stop")
		}
		if err := tr.Stop(); err != nil {
			t.Errorf("second Stop: %v", err)
		}
	})
}

// TestHarnessBrokenPlugin checks that a plugin Traefik cannot interpret stops the start,
// with Traefik's log in the error.
func TestHarnessBrokenPlugin(t *testing.T) {
	binary, _ := requireTraefik(t)
	root := t.TempDir()
	files := map[string]string{
		"go.mod":    "module " + ModuleName + "\n\ngo 1.21\n",
		"plugin.go": "package weir\n\nfunc CreateConfig( {\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatalf("%v", err)
		}
	}
	o := newOrigin(t)
	tr, err := Start(Options{Binary: binary, Root: root, Dir: t.TempDir(), StartTimeout: 30 * time.Second}, o.URL, cachedRoute("h", "/h", "weir-h", nil))
	if err == nil {
		tr.Stop()
		t.Fatalf("Start with a broken plugin succeeded, want an error")
	}
	if !errors.Is(err, errExited) {
		t.Errorf("Start with a broken plugin: err = %v, want %v", err, errExited)
	}
	if !strings.Contains(err.Error(), "failed to import plugin code") {
		t.Errorf("Start with a broken plugin: error lacks Traefik's reason from its log: %v", err)
	}
	t.Logf("reported: %v", err)
}

func TestHarnessParseGoroutines(t *testing.T) {
	tests := []struct {
		desc    string
		profile string
		want    int
		wantErr bool
	}{
		{desc: "pprof debug=1 header", profile: "goroutine profile: total 123\n45 @ 0x1\n", want: 123},
		{desc: "header only", profile: "goroutine profile: total 7", want: 7},
		{desc: "not a profile", profile: "404 page not found\n", wantErr: true},
		{desc: "bad number", profile: "goroutine profile: total many\n", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := parseGoroutineTotal(tc.profile)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("parseGoroutineTotal(%q) = %d, %v; want %d, error %v", tc.profile, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestHarnessParseCacheStatus(t *testing.T) {
	tests := []struct {
		desc   string
		values []string
		hit    bool
		fwd    string
		ttl    int
		hasTTL bool
	}{
		{desc: "fresh hit", values: []string{"Weir; hit; ttl=59"}, hit: true, ttl: 59, hasTTL: true},
		{desc: "stale hit", values: []string{"Weir; hit; ttl=-3"}, hit: true, ttl: -3, hasTTL: true},
		{desc: "stored miss", values: []string{"Weir; fwd=uri-miss; stored"}, fwd: "uri-miss"},
		{desc: "behind another cache", values: []string{"Weir; fwd=stale, CDN; hit"}, fwd: "stale"},
		{desc: "absent", values: nil},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			cs := parseCacheStatus(tc.values)
			ttl, hasTTL := cs.ttl()
			if cs.hit() != tc.hit || cs.fwd() != tc.fwd || ttl != tc.ttl || hasTTL != tc.hasTTL {
				t.Errorf("parseCacheStatus(%q) = hit %v fwd %q ttl %d,%v; want hit %v fwd %q ttl %d,%v",
					tc.values, cs.hit(), cs.fwd(), ttl, hasTTL, tc.hit, tc.fwd, tc.ttl, tc.hasTTL)
			}
		})
	}
}

func TestHarnessOrigin(t *testing.T) {
	o := newOrigin(t)
	release := make(chan struct{})
	arrived := make(chan struct{}, 3)
	o.Handle("/slow", func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
	})
	client := newClient()
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := client.Get(o.URL + "/slow")
			if err == nil {
				resp.Body.Close()
			}
		}()
	}
	for i := 0; i < 3; i++ {
		select {
		case <-arrived:
		case <-time.After(5 * time.Second):
			t.Fatalf("origin hangs: %d of 3 requests arrived", i)
		}
	}
	close(release)
	wg.Wait()
	if got := o.MaxInFlight(); got != 3 {
		t.Errorf("MaxInFlight = %d, want 3", got)
	}
	if got := o.CountMethod(http.MethodGet, "/slow"); got != 3 {
		t.Errorf("CountMethod(GET, /slow) = %d, want 3", got)
	}
	resp, err := client.Get(o.URL + "/unknown")
	if err != nil {
		t.Fatalf("%v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || resp.Header.Get("X-Origin-Unknown-Path") == "" {
		t.Errorf("unknown path: status %d, header %q; want 404 marked as the origin's", resp.StatusCode, resp.Header.Get("X-Origin-Unknown-Path"))
	}
}
