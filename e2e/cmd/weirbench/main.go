// Command weirbench measures what Weir costs and saves inside a real Traefik: requests per
// second through bare Traefik, through Traefik + Weir serving hits (on a URL without a query
// and on one with a query string), and through Traefik + Weir passing uncacheable answers to
// the origin, each as a ratio to bare Traefik.
//
// One Traefik process serves four routers side by side against one local origin; runs are
// interleaved (bare, hit, hitq, pass, bare, hit, hitq, pass, ...) so drift on the machine
// falls on all of them alike, and the medians are reported. The load comes from wrk when it
// is installed, else from a built-in closed-loop generator. scripts/bench.sh runs it.
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
	"strings"
	"syscall"
	"time"

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
	flag.IntVar(&o.rounds, "rounds", 3, "rounds of (bare, hit, hitq, pass) runs; the medians are reported")
	flag.IntVar(&o.connections, "connections", 32, "keep-alive connections")
	flag.IntVar(&o.threads, "threads", 2, "wrk threads")
	flag.StringVar(&o.loadgen, "loadgen", "auto", "load generator: wrk, go, or auto (wrk if installed)")
	flag.IntVar(&o.size, "size", 1024, "answer body size in bytes")
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
	if o.traefik == "" {
		if o.traefik, err = e2e.FindTraefik(root); err != nil {
			return err
		}
	}
	if o.pluginRoot == "" {
		o.pluginRoot = root
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
	began := time.Now()
	tr, err := e2e.Start(e2e.Options{Binary: o.traefik, Root: o.pluginRoot, LogLevel: "ERROR"}, origin.URL, dyn)
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

	for _, t := range targets {
		if !t.hit {
			continue
		}
		if err := checkHit(tr, t.path); err != nil {
			fmt.Printf("warning: %v: the %s figures measure something else than Weir's hits\n", err, t.name)
		}
	}
	for _, t := range targets {
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
		for _, t := range targets {
			cpuBefore, cpuErr := e2e.ProcessCPU(tr.Pid())
			rate, err := gen.run(ctx, tr.URL(t.path), o.duration)
			if err != nil {
				return fmt.Errorf("round %d %s: %w", r, t.name, err)
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
	for _, t := range targets {
		m := e2e.Median(rates[t.name])
		ratio := 0.0
		if bare > 0 {
			ratio = m / bare
		}
		fmt.Printf("  %-42s %10.0f req/s  %5.2fx bare  Traefik CPU %4.0fµs per answer\n", t.label, m, ratio, e2e.Median(cpus[t.name]))
	}
	fmt.Printf("origin requests: bare %d, hit %d, hitq %d, pass %d\n",
		origin.Count("/bare/item"), origin.Count("/hit/item"), origin.Count("/hitq/item"), origin.Count("/pass/item"))
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
