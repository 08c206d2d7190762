package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirproxy/weir/internal/fixture"
)

// The Traefik binary and repository are found once for the whole package.
var (
	binaryOnce sync.Once
	binaryPath string
	pluginRoot string
	binaryErr  error
)

// requireTraefik returns the Traefik binary and the plugin source root: $WEIR_PLUGIN_ROOT
// when set (another checkout, a stand-in plugin), else this repository. Without a binary the
// test skips, or fails when WEIR_E2E=required (as in CI); -short skips unless required.
func requireTraefik(t *testing.T) (binary, root string) {
	t.Helper()
	required := os.Getenv("WEIR_E2E") == "required"
	if testing.Short() && !required {
		t.Skip("end-to-end test: skipped in -short mode")
	}
	binaryOnce.Do(func() {
		var repo string
		repo, binaryErr = RepoRoot()
		if binaryErr == nil {
			binaryPath, binaryErr = FindTraefik(repo)
		}
		pluginRoot = repo
		if p := os.Getenv("WEIR_PLUGIN_ROOT"); p != "" {
			pluginRoot = p
		}
	})
	if binaryErr != nil {
		Unavailable(t, fmt.Sprintf("no Traefik for the end-to-end tests: %v\n"+
			"set WEIR_TRAEFIK to a Traefik v3.6.12 binary or run scripts/build-traefik.sh", binaryErr))
	}
	return binaryPath, pluginRoot
}

// newOrigin starts an origin closed when the test ends.
func newOrigin(t *testing.T) *Origin {
	t.Helper()
	o := NewOrigin()
	t.Cleanup(o.Close)
	return o
}

// startTraefik starts Traefik for the test with the dynamic configuration d in front of
// the origin o, stopping it when the test ends and printing its log's tail if the test
// failed.
func startTraefik(t *testing.T, o *Origin, d Dynamic) *Traefik {
	t.Helper()
	return startTraefikWith(t, Options{}, o.URL, d)
}

// startTraefikWith is startTraefik with opts (its Binary, Root and Dir filled in), in front
// of the origin at originURL.
func startTraefikWith(t *testing.T, opts Options, originURL string, d Dynamic) *Traefik {
	t.Helper()
	opts.Binary, opts.Root = requireTraefik(t)
	opts.Dir = t.TempDir()
	began := time.Now()
	tr, err := Start(opts, originURL, d)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Logf("traefik ready in %v", time.Since(began).Round(time.Millisecond))
	stopAtEnd(t, "traefik", func() string { return tr.LogTail(60) }, tr.Stop)
	return tr
}

// scenarioEnv is what a load scenario (scenario*.go) runs with in a test: its files in the
// test's temporary directory, its progress in the test's log.
func scenarioEnv(t *testing.T) ScenarioEnv {
	t.Helper()
	binary, root := requireTraefik(t)
	return ScenarioEnv{Traefik: binary, Root: root, Dir: t.TempDir(), Logf: t.Logf}
}

// stopAtEnd stops a process the test started when the test ends, first printing its log's
// tail if the test failed.
func stopAtEnd(t *testing.T, name string, logTail func() string, stop func() error) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s log on failure:\n%s", name, logTail())
		}
		if err := stop(); err != nil {
			t.Errorf("%v", err)
		}
	})
}

// apply reloads Traefik with d, failing the test if the new configuration is not served.
func apply(t *testing.T, tr *Traefik, d Dynamic) {
	t.Helper()
	if err := tr.Apply(d); err != nil {
		t.Fatalf("%v", err)
	}
}

// specConfig is the middleware configuration of Weir's documentation, every section set
// but the store: weir-spec of testdata/dynamic/spec.yml.
func specConfig(t *testing.T) map[string]interface{} {
	t.Helper()
	return fixtureMiddleware(t, "spec.yml", "weir-spec")
}

// fixtureMiddleware is Weir's configuration of the middleware mw in the dynamic
// configuration file of testdata/dynamic, read afresh for the caller to change.
func fixtureMiddleware(t *testing.T, file, mw string) map[string]interface{} {
	t.Helper()
	mws, err := fixture.Middlewares("dynamic/"+file, PluginName)
	if err != nil {
		t.Fatalf("%v", err)
	}
	conf, ok := mws[mw]
	if !ok {
		t.Fatalf("dynamic/%s has no Weir middleware %s", file, mw)
	}
	return conf
}

// cachedRoute is a Dynamic with one router for prefix through a Weir middleware named mw.
func cachedRoute(name, prefix, mw string, conf map[string]interface{}) Dynamic {
	return Dynamic{
		Routes:      []Route{{Name: name, Rule: "PathPrefix(`" + prefix + "`)", Middleware: mw}},
		Middlewares: map[string]map[string]interface{}{mw: conf},
	}
}

// send makes one request through Traefik's web entry point.
func send(t *testing.T, tr *Traefik, method, path string, header map[string]string) reply {
	t.Helper()
	return sendBody(t, tr, method, path, header, "")
}

// sendBody is send with a request body ("": none).
func sendBody(t *testing.T, tr *Traefik, method, path string, header map[string]string, body string) reply {
	t.Helper()
	r, err := fetchBody(context.Background(), tr.Client(), requestTimeout, method, tr.URL(path), header, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

func get(t *testing.T, tr *Traefik, path string) reply {
	t.Helper()
	return send(t, tr, http.MethodGet, path, nil)
}

// wantMiss fails unless r was forwarded for reason fwd (RFC 9211 §2.2) and, if stored, kept.
func wantMiss(t *testing.T, what string, r reply, fwd string, stored bool) {
	t.Helper()
	cs := r.cacheStatus()
	if cs.hit() || cs.fwd() != fwd || (stored && !cs.has("stored")) {
		want := "Weir; fwd=" + fwd
		if stored {
			want += "; stored"
		}
		t.Errorf("%s: Cache-Status = %q, want %q", what, cs, want)
	}
}

// wantHit fails unless r was served from the cache while fresh.
func wantHit(t *testing.T, what string, r reply) {
	t.Helper()
	cs := r.cacheStatus()
	ttl, ok := cs.ttl()
	if !cs.hit() || !ok || ttl < 0 {
		t.Errorf("%s: Cache-Status = %q, want \"Weir; hit; ttl=N\" with N >= 0", what, cs)
	}
}

// wantReply fails unless r has the status and body.
func wantReply(t *testing.T, what string, r reply, status int, body string) {
	t.Helper()
	if r.status != status {
		t.Errorf("%s: status = %d, want %d", what, r.status, status)
	}
	if r.body != body {
		t.Errorf("%s: body = %q, want %q", what, short(r.body), short(body))
	}
}

// wantCount fails unless the origin saw n requests for path.
func wantCount(t *testing.T, o *Origin, path string, n int64) {
	t.Helper()
	if got := o.Count(path); got != n {
		t.Errorf("origin requests for %s = %d, want %d", path, got, n)
	}
}

// body1K is a 1 KiB body that names tag, so answers are told apart.
func body1K(tag string) string {
	line := tag + " " + strings.Repeat("x", 63-len(tag)) + "\n"
	return strings.Repeat(line, 1024/len(line)+1)[:1024]
}

// outputWith returns the lines of Traefik's standard output and error (where Weir's event
// lines go) that contain s.
func outputWith(t *testing.T, tr *Traefik, s string) []string {
	t.Helper()
	lines, err := readLines(tr.OutPath)
	if err != nil {
		t.Fatalf("read Traefik's output: %v", err)
	}
	var out []string
	for _, l := range lines {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return out
}
