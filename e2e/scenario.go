package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// The load scenarios: each runs one of the published load tests (docs/benchmarks.md, "Load
// scenarios") through a real Traefik with Weir as a local plugin, against an origin of its
// own, and returns what it measured. scripts/loadtest.sh runs them at full scale
// (e2e/cmd/loadtest); the e2e tests run them small and assert their shape. They check
// answers, never time: the figures are what they print.

// ScenarioEnv is what every scenario runs with.
type ScenarioEnv struct {
	// Traefik is the Traefik binary (see FindTraefik). Required.
	Traefik string
	// Root is the repository whose plugin source is loaded. Required.
	Root string
	// Dir is where the scenario's Traefik (and Redis) keep their files; it must exist. ""
	// means fresh temporary directories, removed when the scenario ends.
	Dir string
	// Logf reports progress between a scenario's phases; nil reports nothing.
	Logf func(format string, args ...interface{})
}

// Locate fills in a Traefik binary and a plugin source left empty: the repository this
// module is part of, and FindTraefik's binary.
func Locate(traefik, root string) (string, string, error) {
	var err error
	if root == "" {
		if root, err = RepoRoot(); err != nil {
			return "", "", err
		}
	}
	if traefik == "" {
		if traefik, err = FindTraefik(root); err != nil {
			return "", "", err
		}
	}
	return traefik, root, nil
}

func (env ScenarioEnv) logf(format string, args ...interface{}) {
	if env.Logf != nil {
		env.Logf(format, args...)
	}
}

// subDir is a directory of its own under env.Dir for one process, "" when env.Dir is.
func (env ScenarioEnv) subDir(name string) (string, error) {
	if env.Dir == "" {
		return "", nil
	}
	d, err := os.MkdirTemp(env.Dir, name+"-")
	if err != nil {
		return "", fmt.Errorf("scenario: %w", err)
	}
	return d, nil
}

// start runs a Traefik with d in front of o, its log at ERROR (Weir's event lines still
// reach its output), with plugins laid out beside Weir.
func (env ScenarioEnv) start(o *Origin, d Dynamic, plugins ...LocalPlugin) (*Traefik, error) {
	dir, err := env.subDir("traefik")
	if err != nil {
		return nil, err
	}
	began := time.Now()
	tr, err := Start(Options{Binary: env.Traefik, Root: env.Root, Dir: dir, LogLevel: "ERROR", LocalPlugins: plugins}, o.URL, d)
	if err != nil {
		return nil, err
	}
	env.logf("traefik ready in %v", time.Since(began).Round(time.Millisecond))
	return tr, nil
}

// stopped stops tr and keeps err, or the stop's error when err is nil; a failed scenario's
// error carries Traefik's log tail.
func stopped(tr *Traefik, err error) error {
	if err != nil {
		err = fmt.Errorf("%w\ntraefik's log:\n%s", err, tr.LogTail(30))
	}
	if stopErr := tr.Stop(); err == nil {
		err = stopErr
	}
	return err
}

// orDefault sets *n to def when it is 0: the zero fields of a scenario's options take the
// published sizes, which its options' comments give.
func orDefault(n *int, def int) {
	if *n == 0 {
		*n = def
	}
}

// scenarioConf is base, copied (nil: Weir's defaults), with sections set over it.
func scenarioConf(base map[string]interface{}, sections map[string]interface{}) map[string]interface{} {
	conf := make(map[string]interface{}, len(base)+len(sections))
	for k, v := range base {
		conf[k] = v
	}
	for k, v := range sections {
		conf[k] = v
	}
	return conf
}

// scenarioRoute is a Dynamic with one router for prefix through a Weir middleware with conf.
func scenarioRoute(name, prefix string, conf map[string]interface{}) Dynamic {
	mw := "weir-" + name
	return Dynamic{
		Routes:      []Route{{Name: name, Rule: "PathPrefix(`" + prefix + "`)", Middleware: mw}},
		Middlewares: map[string]map[string]interface{}{mw: conf},
	}
}

// refusal names a designed refusal (a 503 or 429 Weir made, with Retry-After and the reason
// in Cache-Status) by its reason; "" for any other answer.
func refusal(r limReply) string {
	if (r.status != http.StatusServiceUnavailable && r.status != http.StatusTooManyRequests) || r.retry == "" {
		return ""
	}
	return r.cs.params["detail"]
}

// warmConnections opens n keep-alive connections to Traefik by sending n concurrent
// requests for a slow path, so that a later burst starts without n TCP handshakes.
func warmConnections(tr *Traefik, path string, n int) {
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

// tally counts answers by outcome (limStatusKey), for a scenario's summary line.
type tally struct {
	// mu guards n.
	mu sync.Mutex
	n  map[string]int
}

func (t *tally) add(key string) {
	t.mu.Lock()
	if t.n == nil {
		t.n = map[string]int{}
	}
	t.n[key]++
	t.mu.Unlock()
}

func (t *tally) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return limStats{statuses: t.n}.tallies()
}

// firstErrors keeps the first few of a scenario's wrong answers.
type firstErrors struct {
	// mu guards n and first.
	mu    sync.Mutex
	n     int
	first []string
}

func (f *firstErrors) add(what string) {
	f.mu.Lock()
	f.n++
	if len(f.first) < 5 {
		f.first = append(f.first, what)
	}
	f.mu.Unlock()
}

func (f *firstErrors) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 {
		return "none"
	}
	return fmt.Sprintf("%d, the first: %s", f.n, strings.Join(f.first, "; "))
}

// waitFor polls cond every 20ms until it holds or d has passed, and reports whether it held.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}
