// Command weirbench measures what Weir costs and saves inside a real Traefik: requests per
// second through bare Traefik, through Traefik + Weir serving hits (on a URL without a query
// and on one with a query string), and through Traefik + Weir passing uncacheable answers to
// the origin, each as a ratio to bare Traefik.
//
// Beside them, when its source is at hand (-limit), the same three kinds of request go
// through a reference plugin, weirlimit: the least an interpreted middleware can do (a hit
// writes a stored 1 KiB answer with no lookup; a pass-through, a path holding /ns/, counts
// the request, sets one header and calls the next handler). Weir's figures are also printed
// as a ratio to it.
//
// One Traefik process serves the routers side by side against one local origin; runs are
// interleaved (bare, hit, hitq, pass, then the limit's, bare, hit, ...) so drift on the
// machine falls on all of them alike, and the medians are reported. The load comes from wrk
// when it is installed, else from a built-in closed-loop generator. scripts/bench.sh runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/traefik/genconf/dynamic"
	"github.com/weirproxy/weir/e2e"
)

// target is one router under measurement.
type target struct {
	name  string // short name in the round lines
	label string // what it measures, in the summary
	path  string // the URL path requested
	hit   bool   // answered from Weir's cache once warm
}

var targets = []target{
	{name: "bare", label: "bare Traefik (no middleware)", path: "/bare/item"},
	{name: "hit", label: "Traefik + Weir, cache hits", path: "/hit/item", hit: true},
	// Real traffic is full of URLs with a query (?page=2, ?v=hash). Two parameters, in the
	// order Weir's key keeps them (sorted by name).
	{name: "hitq", label: "Traefik + Weir, cache hits, query string", path: "/hitq/item?page=2&v=5f3c9a", hit: true},
	{name: "pass", label: "Traefik + Weir, pass-through (no-store)", path: "/pass/item"},
}

// The reference plugin, laid out beside Weir as a second local plugin.
const (
	limitAlias  = "weirlimit"
	limitModule = "github.com/weirceo/weirlimit"
	// limitDefault is where its source is looked for, from the repository's root.
	limitDefault = "../shared/bench/weirlimit"
	// limitStatus is the Cache-Status it sets on every answer.
	limitStatus = "Limit; hit"
	// limitSize is the length of the answer it stores, whatever -size says.
	limitSize = 1024
)

// limitTargets are the limit plugin's routers, measured in the same rounds as targets. Its
// hits need no origin; its pass-through path holds /ns/ and reaches the same origin, with the
// same answer, as Weir's.
var limitTargets = []target{
	{name: "limit", label: "Traefik + limit plugin, hits", path: "/limit/item"},
	{name: "limitq", label: "Traefik + limit plugin, hits, query string", path: "/limitq/item?page=2&v=5f3c9a"},
	{name: "limitpass", label: "Traefik + limit plugin, pass-through", path: "/limitpass/ns/item"},
}

// pairs sets each kind of request through Weir beside the same kind through the limit plugin.
var pairs = []struct{ kind, weir, limit string }{
	{kind: "hit", weir: "hit", limit: "limit"},
	{kind: "hit with a query", weir: "hitq", limit: "limitq"},
	{kind: "pass-through", weir: "pass", limit: "limitpass"},
}

type options struct {
	traefik     string
	pluginRoot  string
	duration    time.Duration
	warmup      time.Duration
	rounds      int
	connections int
	threads     int
	loadgen     string
	size        int
	limit       string
}

func main() {
	os.Exit(run())
}

func run() int {
	var o options
	flag.StringVar(&o.traefik, "traefik", os.Getenv("WEIR_TRAEFIK"), "Traefik binary (default: $WEIR_TRAEFIK, else scripts/build-traefik.sh)")
	flag.StringVar(&o.pluginRoot, "plugin-root", "", "directory holding the plugin source (default: this repository)")
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "length of one measured run")
	flag.DurationVar(&o.warmup, "warmup", 2*time.Second, "unmeasured load on each router before the rounds")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds of (bare, hit, hitq, pass, limit, limitq, limitpass) runs; the medians are reported")
	flag.IntVar(&o.connections, "connections", 32, "keep-alive connections")
	flag.IntVar(&o.threads, "threads", 2, "wrk threads")
	flag.StringVar(&o.loadgen, "loadgen", "auto", "load generator: wrk, go, or auto (wrk if installed)")
	flag.IntVar(&o.size, "size", 1024, "answer body size in bytes")
	flag.StringVar(&o.limit, "limit", "", "directory holding the limit plugin's source (go.mod, .traefik.yml, limit.go); its routes are skipped when it is absent (default "+limitDefault+" from the repository's root)")
	flag.Parse()
	if o.rounds < 1 || o.connections < 1 || o.threads < 1 || o.duration <= 0 || o.size < 0 {
		fmt.Fprintln(os.Stderr, "weirbench: -rounds, -connections and -threads must be positive, -duration too")
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := bench(ctx, o); err != nil {
		fmt.Fprintf(os.Stderr, "weirbench: %v\n", err)
		return 1
	}
	return 0
}

func bench(ctx context.Context, o options) error {
	root, err := e2e.RepoRoot()
	if err != nil {
		return err
	}
	if o.traefik, o.pluginRoot, err = e2e.Locate(o.traefik, o.pluginRoot); err != nil {
		return err
	}
	if o.limit == "" {
		o.limit = filepath.Join(root, filepath.FromSlash(limitDefault))
	}
	withLimit := false
	if st, err := os.Stat(o.limit); err == nil && st.IsDir() {
		withLimit = true
	}
	gen, err := pickLoadgen(o)
	if err != nil {
		return err
	}

	origin := e2e.NewOrigin()
	defer origin.Close()
	body := strings.Repeat("w", o.size)
	origin.Handle("/bare/item", answer("max-age=3600", body))
	origin.Handle("/hit/item", answer("max-age=3600", body))
	origin.Handle("/hitq/item", answer("max-age=3600", body))
	origin.Handle("/pass/item", answer("no-store", body))
	origin.Handle("/limitpass/ns/item", answer("no-store", body))

	conf := map[string]interface{}{
		"cache": map[string]interface{}{"maxSize": "64MiB", "maxEntrySize": "2MiB"},
	}
	dyn := e2e.Dynamic{
		Routes: []e2e.Route{
			{Name: "bare", Rule: "PathPrefix(`/bare`)"},
			{Name: "hit", Rule: "PathPrefix(`/hit/`)", Middleware: "weir-bench"},
			{Name: "hitq", Rule: "PathPrefix(`/hitq/`)", Middleware: "weir-bench"},
			{Name: "pass", Rule: "PathPrefix(`/pass`)", Middleware: "weir-bench"},
		},
		Middlewares: map[string]map[string]interface{}{"weir-bench": conf},
	}
	opts := e2e.Options{Binary: o.traefik, Root: o.pluginRoot, LogLevel: "ERROR"}
	all := targets
	if withLimit {
		all = append(append([]target(nil), targets...), limitTargets...)
		opts.LocalPlugins = []e2e.LocalPlugin{{Alias: limitAlias, ModuleName: limitModule, Dir: o.limit}}
		dyn.Routes = append(dyn.Routes,
			e2e.Route{Name: "limit", Rule: "PathPrefix(`/limit/`)", Middleware: "limit-bench"},
			e2e.Route{Name: "limitq", Rule: "PathPrefix(`/limitq/`)", Middleware: "limit-bench"},
			e2e.Route{Name: "limitpass", Rule: "PathPrefix(`/limitpass/`)", Middleware: "limit-bench"},
		)
		dyn.Builtin = map[string]*dynamic.Middleware{
			"limit-bench": {Plugin: map[string]dynamic.PluginConf{limitAlias: {}}},
		}
	}
	began := time.Now()
	tr, err := e2e.Start(opts, origin.URL, dyn)
	if err != nil {
		return err
	}
	defer func() {
		if err := tr.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "weirbench: %v\n", err)
		}
	}()
	fmt.Printf("traefik %s ready in %v; load: %s, %d connections, %v per run, %d rounds, %d-byte answers\n",
		o.traefik, time.Since(began).Round(time.Millisecond), gen.describe(), o.connections, o.duration, o.rounds, o.size)
	if withLimit {
		if err := checkLimit(tr, origin, body); err != nil {
			return fmt.Errorf("limit plugin from %s: %w\n%s", o.limit, err, tr.LogTail(20))
		}
		note := ""
		if o.size != limitSize {
			note = fmt.Sprintf(" (its hits are %d bytes, not -size's %d)", limitSize, o.size)
		}
		fmt.Printf("limit plugin %s from %s: routes limit, limitq, limitpass%s\n", limitModule, o.limit, note)
	} else {
		fmt.Printf("no limit plugin at %s: its routes are skipped (-limit DIR names its source)\n", o.limit)
	}

	for _, t := range targets {
		if !t.hit {
			continue
		}
		if err := checkHit(tr, t.path); err != nil {
			fmt.Printf("warning: %v: the %s figures measure something else than Weir's hits\n", err, t.name)
		}
	}
	for _, t := range all {
		if _, err := gen.run(ctx, tr.URL(t.path), o.warmup); err != nil {
			return fmt.Errorf("warm-up %s: %w", t.name, err)
		}
	}

	rates := make(map[string][]float64)
	// cpus holds Traefik's CPU time per answer in microseconds: other work on a shared
	// machine moves it less than the rate.
	cpus := make(map[string][]float64)
	for r := 1; r <= o.rounds; r++ {
		line := fmt.Sprintf("round %d:", r)
		for _, t := range all {
			cpuBefore, cpuErr := e2e.ProcessCPU(tr.Pid())
			rate, err := gen.run(ctx, tr.URL(t.path), o.duration)
			if err != nil {
				return fmt.Errorf("round %d %s: %w\nTraefik's log:\n%s", r, t.name, err, tr.LogTail(40))
			}
			cpuAfter, err := e2e.ProcessCPU(tr.Pid())
			cpu := 0.0
			if cpuErr == nil && err == nil && rate > 0 {
				cpu = float64(cpuAfter-cpuBefore) / float64(time.Microsecond) / (rate * o.duration.Seconds())
			}
			rates[t.name] = append(rates[t.name], rate)
			cpus[t.name] = append(cpus[t.name], cpu)
			line += fmt.Sprintf("  %s %.0f req/s (%.0fµs CPU each)", t.name, rate, cpu)
		}
		fmt.Println(line)
	}

	bare := e2e.Median(rates["bare"])
	fmt.Printf("median of %d rounds:\n", o.rounds)
	for _, t := range all {
		m := e2e.Median(rates[t.name])
		fmt.Printf("  %-42s %10.0f req/s  %5.2fx bare  Traefik CPU %4.0fµs per answer\n", t.label, m, ratio(m, bare), e2e.Median(cpus[t.name]))
	}
	if withLimit {
		fmt.Println("Weir against the limit plugin (medians):")
		for _, p := range pairs {
			weir, limit := e2e.Median(rates[p.weir]), e2e.Median(rates[p.limit])
			fmt.Printf("  %s: weir %.2fx bare, limit %.2fx bare, weir/limit %.2f; Traefik CPU per answer weir %.0fµs, limit %.0fµs\n",
				p.kind, ratio(weir, bare), ratio(limit, bare), ratio(weir, limit), e2e.Median(cpus[p.weir]), e2e.Median(cpus[p.limit]))
		}
	}
	counts := fmt.Sprintf("origin requests: bare %d, hit %d, hitq %d, pass %d",
		origin.Count("/bare/item"), origin.Count("/hit/item"), origin.Count("/hitq/item"), origin.Count("/pass/item"))
	if withLimit {
		counts += fmt.Sprintf(", limit %d, limitq %d, limitpass %d",
			origin.Count("/limit/item"), origin.Count("/limitq/item"), origin.Count("/limitpass/ns/item"))
	}
	fmt.Println(counts)
	return nil
}

// ratio is a / b, zero when b is.
func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// checkLimit checks the limit plugin loaded and serves its routes: its hits answer 200 with
// its Cache-Status and its stored answer, without the origin; its pass-through answers with
// the origin's body, and the origin sees the request.
func checkLimit(tr *e2e.Traefik, origin *e2e.Origin, body string) error {
	for _, t := range limitTargets {
		passes := strings.Contains(t.path, "/ns/")
		path := t.path
		if i := strings.IndexByte(path, '?'); i >= 0 {
			path = path[:i]
		}
		before := origin.Count(path)
		resp, err := tr.Client().Get(tr.URL(t.path))
		if err != nil {
			return err
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("GET %s: %w", t.path, err)
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s answered %d: %.200q", t.path, resp.StatusCode, got)
		}
		if cs := resp.Header.Get("Cache-Status"); cs != limitStatus {
			return fmt.Errorf("GET %s: Cache-Status %q, want %q", t.path, cs, limitStatus)
		}
		reached := origin.Count(path) - before
		switch {
		case passes && string(got) != body:
			return fmt.Errorf("GET %s: a %d-byte body, not the origin's", t.path, len(got))
		case passes && reached != 1:
			return fmt.Errorf("GET %s: the origin saw %d requests, want 1", t.path, reached)
		case !passes && len(got) != limitSize:
			return fmt.Errorf("GET %s: a %d-byte body, want the stored %d", t.path, len(got), limitSize)
		case !passes && reached != 0:
			return fmt.Errorf("GET %s: the origin saw %d requests, want none", t.path, reached)
		}
	}
	return nil
}

// checkHit fetches path twice and checks the second answer came from Weir's cache.
func checkHit(tr *e2e.Traefik, path string) error {
	var status string
	for i := 0; i < 2; i++ {
		resp, err := tr.Client().Get(tr.URL(path))
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s answered %d", path, resp.StatusCode)
		}
		status = resp.Header.Get("Cache-Status")
	}
	for _, param := range strings.Split(status, ";") {
		if strings.TrimSpace(param) == "hit" {
			return nil
		}
	}
	return fmt.Errorf("the warmed %s is not a hit (Cache-Status %q)", path, status)
}

func answer(cacheControl, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Cache-Control", cacheControl)
		io.WriteString(w, body)
	}
}

// loadgen runs one measured load and returns successful requests per second.
type loadgen interface {
	run(ctx context.Context, url string, d time.Duration) (float64, error)
	describe() string
}

func pickLoadgen(o options) (loadgen, error) {
	wrk, lookErr := exec.LookPath("wrk")
	switch o.loadgen {
	case "wrk":
		if lookErr != nil {
			return nil, fmt.Errorf("-loadgen wrk: %w", lookErr)
		}
		return wrkGen{bin: wrk, threads: o.threads, connections: o.connections}, nil
	case "go":
		return goGen{connections: o.connections}, nil
	case "auto":
		if lookErr == nil {
			return wrkGen{bin: wrk, threads: o.threads, connections: o.connections}, nil
		}
		return goGen{connections: o.connections}, nil
	default:
		return nil, fmt.Errorf("-loadgen %q: want wrk, go or auto", o.loadgen)
	}
}

// goGen is the built-in generator, for machines without wrk. It costs more CPU per request
// than wrk, so its figures are lower; the ratios are what compare.
type goGen struct{ connections int }

func (g goGen) describe() string { return "built-in Go generator" }

func (g goGen) run(ctx context.Context, url string, d time.Duration) (float64, error) {
	res := e2e.Load{URL: url, Connections: g.connections, Duration: d}.Run(ctx)
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if res.Failures > 0 {
		return 0, fmt.Errorf("%d of %d requests failed, the first with: %s", res.Failures, res.Failures+res.Requests, res.FirstFailure)
	}
	return res.PerSecond(), nil
}
