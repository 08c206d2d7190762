package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// providerBlock is the provider plugin's block of these tests: weir-default with its admin
// open to the token from 127.0.0.1 and the extra fields given, weir-api with four origin slots (and its
// admin, on the routers it serves), weir-static empty, and the admin router on the web
// entry point.
func providerBlock(defaultExtra map[string]interface{}) map[string]interface{} {
	def := map[string]interface{}{
		"admin": map[string]interface{}{"path": "/_weir", "token": adminTestToken, "allow": []string{"127.0.0.1/32"}},
	}
	for k, v := range defaultExtra {
		def[k] = v
	}
	return map[string]interface{}{
		"presets": map[string]interface{}{
			"weir-default": def,
			"weir-api": map[string]interface{}{
				"limiter": map[string]interface{}{"maxConcurrent": "4", "maxQueueWait": "20s"},
				"admin":   map[string]interface{}{"path": "/api/_weir", "token": adminTestToken, "allow": []string{"127.0.0.1/32"}},
			},
			"weir-static": map[string]interface{}{},
		},
		"admin": map[string]interface{}{
			"rule":       "PathPrefix(`/_weir`)",
			"entryPoint": "web",
			"preset":     "weir-default",
		},
	}
}

// providerRoutes are routers of the file provider, standing in for containers' labels: they
// reference the provider's presets and define no middleware of their own.
func providerRoutes() Dynamic {
	return Dynamic{Routes: []Route{
		{Name: "api", Rule: "PathPrefix(`/api`)", Middleware: "weir-api@plugin-" + ProviderAlias},
		{Name: "site", Rule: "PathPrefix(`/site`)", Middleware: "weir-default@plugin-" + ProviderAlias},
		{Name: "static", Rule: "PathPrefix(`/static`)", Middleware: "weir-static@plugin-" + ProviderAlias},
	}}
}

// adminState reads the admin API's state through the admin router and returns it whole.
func adminState(t *testing.T, tr *Traefik) string {
	t.Helper()
	return stateAt(t, tr, "/_weir/api/state")
}

// stateAt reads the admin API's state at path.
func stateAt(t *testing.T, tr *Traefik, path string) string {
	t.Helper()
	r := send(t, tr, http.MethodGet, path, map[string]string{"Authorization": "Bearer " + adminTestToken})
	if r.status != http.StatusOK {
		t.Fatalf("GET %s: status %d, body %q", path, r.status, short(r.body))
	}
	return r.body
}

// limiterState is the part of the admin API's state these tests read.
type limiterState struct {
	Middleware string `json:"middleware"`
	Limiter    struct {
		InFlight      int `json:"inFlight"`
		Queued        int `json:"queued"`
		MaxConcurrent int `json:"maxConcurrent"`
	} `json:"limiter"`
}

// TestProviderPresets runs Traefik with Weir's provider plugin and no dynamic configuration
// besides routers that reference its presets: each router is cached and protected by its
// preset, the admin router answers, a preset on the entry point protects a router without
// middlewares, and a change of the block applied by a restart changes the preset.
func TestProviderPresets(t *testing.T) {
	o := newOrigin(t)
	o.Handle("/api/a", answer("max-age=60", "api a"))
	o.Handle("/static/a", answer("max-age=60", "static a"))
	o.Handle("/site/plain", answer("", "no freshness stated"))
	o.Handle("/site/plain2", answer("", "no freshness stated either"))
	o.Handle("/bare/a", answer("max-age=60", "bare a"))

	opts := Options{Provider: providerBlock(map[string]interface{}{"cache": map[string]interface{}{"defaultTTL": "60s"}})}
	tr := startTraefikWith(t, opts, o.URL, providerRoutes())

	t.Run("a router referencing a preset is cached", func(t *testing.T) {
		for _, path := range []string{"/api/a", "/static/a"} {
			wantMiss(t, "GET "+path, get(t, tr, path), "uri-miss", true)
			wantHit(t, "GET "+path+" again", get(t, tr, path))
			wantCount(t, o, path, 1)
		}
	})

	t.Run("a router referencing a preset is protected by its limiter", func(t *testing.T) {
		const requests, slots = 6, 4
		release := make(chan struct{})
		var releaseOnce sync.Once
		// Also when the test fails half way: the origin's handlers must return.
		defer releaseOnce.Do(func() { close(release) })
		for i := 0; i < requests; i++ {
			o.Handle(fmt.Sprintf("/api/slow/%d", i), func(w http.ResponseWriter, r *http.Request) {
				<-release
				answer("max-age=60", "slow")(w, r)
			})
		}
		replies := make(chan reply, requests)
		for i := 0; i < requests; i++ {
			go func(i int) {
				r, err := fetch(context.Background(), tr.Client(), requestTimeout, "GET", tr.URL(fmt.Sprintf("/api/slow/%d", i)), nil)
				if err != nil {
					t.Errorf("GET /api/slow/%d: %v", i, err)
				}
				replies <- r
			}(i)
		}
		// weir-api's own admin, on the router it serves, shows its limiter full and the rest
		// waiting.
		var st limiterState
		full := waitFor(10*time.Second, func() bool {
			st = limiterState{}
			_ = json.Unmarshal([]byte(stateAt(t, tr, "/api/_weir/api/state")), &st)
			return st.Limiter.InFlight == slots && st.Limiter.Queued == requests-slots
		})
		releaseOnce.Do(func() { close(release) })
		if !full {
			t.Errorf("weir-api's limiter = %+v, want %d in flight and %d queued", st.Limiter, slots, requests-slots)
		}
		if st.Middleware != "weir-api@plugin-"+ProviderAlias || st.Limiter.MaxConcurrent != slots {
			t.Errorf("state of %q, maxConcurrent %d; want weir-api@plugin-%s with %d", st.Middleware, st.Limiter.MaxConcurrent, ProviderAlias, slots)
		}
		for i := 0; i < requests; i++ {
			if r := <-replies; r.status != http.StatusOK {
				t.Errorf("a slow request: status %d, want 200", r.status)
			}
		}
		if got := o.MaxInFlight(); got > slots {
			t.Errorf("origin peak in flight = %d, want at most weir-api's %d slots", got, slots)
		}
	})

	t.Run("the preset's settings apply", func(t *testing.T) {
		// weir-default sets cache.defaultTTL: an answer stating no freshness is stored.
		get(t, tr, "/site/plain")
		wantHit(t, "GET /site/plain again", get(t, tr, "/site/plain"))
		wantCount(t, o, "/site/plain", 1)
	})

	t.Run("the admin router answers", func(t *testing.T) {
		state := adminState(t, tr)
		if !strings.Contains(state, `"middleware":"weir-default@plugin-`+ProviderAlias+`"`) {
			t.Errorf("admin state = %s, want weir-default@plugin-%s's", short(state), ProviderAlias)
		}
		if !strings.Contains(state, `"maxConcurrent":64`) {
			t.Errorf("admin state = %s, want weir-default's limiter at the default 64 slots", short(state))
		}
		if r := send(t, tr, http.MethodGet, "/_weir/", map[string]string{"Authorization": "Bearer " + adminTestToken}); r.status != http.StatusOK || !strings.Contains(r.body, "<html") {
			t.Errorf("GET /_weir/: status %d, body %q; want the admin page", r.status, short(r.body))
		}
		// The router's service answers whatever the admin middleware lets through: Traefik's
		// noop@internal, 418, never the origin.
		if r := get(t, tr, "/_weirx"); r.status != http.StatusTeapot {
			t.Errorf("GET /_weirx (the admin rule, not admin.path): status %d, want noop@internal's 418", r.status)
		}
		if n := o.Count("/_weir/api/state") + o.Count("/_weir/") + o.Count("/_weirx"); n != 0 {
			t.Errorf("admin requests reached the origin %d times, want 0", n)
		}
	})

	t.Run("a restart with a changed block changes the preset", func(t *testing.T) {
		if err := tr.Stop(); err != nil {
			t.Fatalf("%v", err)
		}
		changed := Options{Provider: providerBlock(map[string]interface{}{"limiter": map[string]interface{}{"maxConcurrent": "8"}})}
		tr2 := startTraefikWith(t, changed, o.URL, providerRoutes())
		if state := adminState(t, tr2); !strings.Contains(state, `"maxConcurrent":8`) {
			t.Errorf("admin state = %s, want weir-default's limiter at 8 slots", short(state))
		}
		// cache.defaultTTL is gone from weir-default: an answer stating no freshness is not
		// stored any more.
		get(t, tr2, "/site/plain2")
		get(t, tr2, "/site/plain2")
		wantCount(t, o, "/site/plain2", 2)
	})
}

// TestProviderPresetOnEntryPoint: a preset named in entryPoints.web.http.middlewares
// protects a router that names no middleware.
func TestProviderPresetOnEntryPoint(t *testing.T) {
	o := newOrigin(t)
	o.Handle("/bare/a", answer("max-age=60", "bare a"))
	opts := Options{Provider: providerBlock(nil), WebMiddlewares: []string{"weir-api@plugin-" + ProviderAlias}}
	tr := startTraefikWith(t, opts, o.URL, Dynamic{Routes: []Route{{Name: "bare", Rule: "PathPrefix(`/bare`)"}}})
	wantMiss(t, "GET /bare/a", get(t, tr, "/bare/a"), "uri-miss", true)
	wantHit(t, "GET /bare/a again", get(t, tr, "/bare/a"))
	wantCount(t, o, "/bare/a", 1)
}

// TestProviderBadBlock: an error in the block stops Traefik's start, reported once with the
// preset, the field and the value named.
func TestProviderBadBlock(t *testing.T) {
	binary, root := requireTraefik(t)
	o := newOrigin(t)
	block := providerBlock(nil)
	block["presets"].(map[string]interface{})["weir-api"] = map[string]interface{}{"limiter": map[string]interface{}{"maxConcurrent": "lots"}}
	dir := t.TempDir()
	tr, err := Start(Options{Binary: binary, Root: root, Dir: dir, StartTimeout: 30 * time.Second, Provider: block}, o.URL, providerRoutes())
	if err == nil {
		tr.Stop()
		t.Fatalf("Start with a bad preset succeeded, want Traefik to refuse it")
	}
	if !errors.Is(err, errExited) {
		t.Errorf("Start: err = %v, want %v", err, errExited)
	}
	const want = `presets.weir-api: weir: invalid configuration: limiter.maxConcurrent: \"lots\"`
	log := tr2log(t, dir)
	if n := strings.Count(log, want); n != 1 {
		t.Errorf("Traefik's log and output name the preset and field %d times, want once:\n%s", n, log)
	}
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "presets.") {
			t.Logf("reported: %s", line)
		}
	}
}

// tr2log is what Traefik wrote in dir: its log file, then its standard output and error.
func tr2log(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	for _, name := range []string{"traefik.log", "traefik.out"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%v", err)
		}
		b.Write(data)
	}
	return b.String()
}
