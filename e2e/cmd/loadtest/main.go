// Command loadtest runs Weir's published load scenarios through a real Traefik, with Weir as
// a local plugin, and prints what each measured beside its target (docs/benchmarks.md, "Load
// scenarios"):
//
//	fairness   one path flooded by 64 clients with distinct queries while other paths are
//	           read: the other paths' p99 with the flood over their p99 without it (target
//	           at most 1.2); -controls measures the same through bare Traefik and the
//	           weirlimit plugin (-limit) beside Weir, interleaved, as the machine's bound
//	expiry     10,000 keys expiring together under limiter.maxConcurrent 32 with the default
//	           queue: client errors besides designed refusals (target 0), the time until
//	           every key is fresh again, the origin's peak concurrency (target at most 32)
//	sickstore  Redis failing half its calls through a fault proxy for -requests requests:
//	           client errors (target 0), the store breaker's trips
//	hotkey     1,000 concurrent requests on a hot key that just expired: origin fetches
//	           (target exactly 1), the followers' p99 wait
//	rounds     -rounds rounds of concurrent requests for a cold key: origin fetches per round
//	all        each of them in turn
//
// The scenarios themselves are the e2e package's (scenario*.go), which the e2e tests run
// small. It exits 1 when a scenario fails or misses a target. scripts/loadtest.sh runs it.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/weirproxy/weir/e2e"
)

type options struct {
	requests int
	rounds   int
	repeats  int
	controls bool
	limit    string
}

// limitDefault is where weirlimit's source is looked for, from the repository's root (as
// scripts/bench.sh's -limit).
const limitDefault = "../shared/bench/weirlimit"

// scenario runs one scenario and returns the targets it missed.
type scenario struct {
	name string
	run  func(env e2e.ScenarioEnv, o options) (missed []string, err error)
}

var scenarios = []scenario{
	{name: "fairness", run: fairness},
	{name: "expiry", run: expiry},
	{name: "sickstore", run: sickStore},
	{name: "hotkey", run: hotKey},
	{name: "rounds", run: rounds},
}

func main() {
	os.Exit(run())
}

func run() int {
	var traefik, root, dir string
	var o options
	flag.StringVar(&traefik, "traefik", os.Getenv("WEIR_TRAEFIK"), "Traefik binary (default: $WEIR_TRAEFIK, else scripts/build-traefik.sh)")
	flag.StringVar(&root, "plugin-root", "", "directory holding the plugin source (default: this repository)")
	flag.StringVar(&dir, "dir", "", "keep Traefik's and Redis's files (configuration, logs) under this directory, made if missing (default: temporary, removed)")
	flag.IntVar(&o.requests, "requests", 1000000, "sickstore: requests while the store fails half its calls")
	flag.IntVar(&o.rounds, "rounds", 10000, "rounds: rounds of concurrent cold requests")
	flag.IntVar(&o.repeats, "repeats", 5, "fairness: measurements without and with the flood; the median ratio is the figure")
	flag.BoolVar(&o.controls, "controls", false, "fairness: measure the same flood and readers through bare Traefik and the weirlimit plugin too, interleaved with Weir's runs")
	flag.StringVar(&o.limit, "limit", "", "fairness -controls: weirlimit's source directory (default "+limitDefault+" from the repository's root; its control is left out when absent)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: loadtest [flags] %s|all\n", strings.Join(names(), "|"))
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 || o.requests < 1 || o.rounds < 1 || o.repeats < 1 {
		flag.Usage()
		return 2
	}
	var chosen []scenario
	for _, s := range scenarios {
		if flag.Arg(0) == "all" || flag.Arg(0) == s.name {
			chosen = append(chosen, s)
		}
	}
	if len(chosen) == 0 {
		flag.Usage()
		return 2
	}
	traefik, root, err := e2e.Locate(traefik, root)
	if err != nil {
		fmt.Fprintf(os.Stderr, "loadtest: %v\n", err)
		return 1
	}
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			fmt.Fprintf(os.Stderr, "loadtest: %v\n", err)
			return 1
		}
	}
	env := e2e.ScenarioEnv{Traefik: traefik, Root: root, Dir: dir, Logf: func(format string, args ...interface{}) {
		fmt.Printf("  "+format+"\n", args...)
	}}
	if o.controls && o.limit == "" {
		o.limit = filepath.Join(root, filepath.FromSlash(limitDefault))
	}
	if o.limit != "" {
		if st, err := os.Stat(o.limit); err != nil || !st.IsDir() {
			fmt.Printf("weirlimit's source not found at %s: its control is left out\n", o.limit)
			o.limit = ""
		}
	}
	fmt.Printf("traefik %s, plugin %s; %d CPUs, load average %s\n", traefik, root, runtime.NumCPU(), loadAverage())
	status := 0
	for _, s := range chosen {
		began := time.Now()
		fmt.Printf("== %s (%s)\n", s.name, began.UTC().Format(time.RFC3339))
		missed, err := s.run(env, o)
		fmt.Printf("== %s took %v; load average %s\n", s.name, time.Since(began).Round(time.Second), loadAverage())
		switch {
		case err != nil:
			fmt.Printf("== %s FAILED: %v\n", s.name, err)
			status = 1
		case len(missed) > 0:
			fmt.Printf("== %s MISSED: %s\n", s.name, strings.Join(missed, "; "))
			status = 1
		default:
			fmt.Printf("== %s: every target met\n", s.name)
		}
	}
	return status
}

func names() []string {
	var ns []string
	for _, s := range scenarios {
		ns = append(ns, s.name)
	}
	return ns
}

// loadAverage is the machine's 1, 5 and 15 minute load averages: the machine may be shared.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// fairnessTarget is the published bound on the p99 ratio (the reference figure is 1.11).
const fairnessTarget = 1.2

func fairness(env e2e.ScenarioEnv, o options) ([]string, error) {
	f, err := e2e.RunFairness(env, e2e.FairnessOptions{Repeats: o.repeats, Control: true, Controls: o.controls, LimitDir: o.limit})
	fmt.Println(f)
	if err != nil {
		return nil, err
	}
	median := e2e.Median(f.Ratios())
	fmt.Printf("FIGURE fairness: other paths' p99 with the flood / without it: median %.2f over %d repeats (%s), best %.2f; target <= %.1f; their median latency's ratio: median %.2f (%s)\n",
		median, len(f.Repeats), e2e.FormatRatios(f.Ratios()), f.Best(), fairnessTarget, e2e.Median(f.P50Ratios()), e2e.FormatRatios(f.P50Ratios()))
	for _, c := range f.Controls {
		fmt.Printf("FIGURE fairness control, %s: the same p99 ratio: median %.2f (%s); median latency's ratio: median %.2f (%s)\n",
			c.Name, e2e.Median(c.Ratios()), e2e.FormatRatios(c.Ratios()), e2e.Median(c.P50Ratios()), e2e.FormatRatios(c.P50Ratios()))
	}
	var missed []string
	if median > fairnessTarget {
		missed = append(missed, fmt.Sprintf("median p99 ratio %.2f > %.1f", median, fairnessTarget))
	}
	return missed, nil
}

// expirySlots is the scenario's limiter.maxConcurrent.
const expirySlots = 32

func expiry(env e2e.ScenarioEnv, o options) ([]string, error) {
	f, err := e2e.RunExpiry(env, e2e.ExpiryOptions{})
	fmt.Println(f)
	if err != nil {
		return nil, err
	}
	fmt.Printf("FIGURE expiry: client errors besides designed refusals %d (designed refusals %d); every key fresh again in %v; origin peak concurrency %d (limit %d)\n",
		f.Errors, f.Refused, f.FreshAfter.Round(time.Millisecond), f.Peak, expirySlots)
	var missed []string
	if f.Errors > 0 {
		missed = append(missed, fmt.Sprintf("%d client errors: %s", f.Errors, f.FirstErrors()))
	}
	if f.Peak > expirySlots || f.StorePeak > expirySlots {
		missed = append(missed, fmt.Sprintf("origin peak concurrency %d (storing %d) > %d", f.Peak, f.StorePeak, expirySlots))
	}
	return missed, nil
}

func sickStore(env e2e.ScenarioEnv, o options) ([]string, error) {
	f, err := e2e.RunSickStore(env, e2e.SickStoreOptions{Requests: o.requests})
	fmt.Println(f)
	if err != nil {
		return nil, err
	}
	fmt.Printf("FIGURE sickstore: %d requests, client errors %d; store breaker trips %d; hits %d, %d of them the local fallback's (weir_store_fallback_hits_total)\n",
		f.Requests, f.Errors(), f.Trips, f.Hits, f.FallbackHits)
	var missed []string
	if f.Errors() > 0 {
		missed = append(missed, fmt.Sprintf("%d client errors", f.Errors()))
	}
	if f.FallbackHits < 0 {
		missed = append(missed, "the local fallback's hits were not counted (weir_store_fallback_hits_total unread)")
	}
	return missed, nil
}

func hotKey(env e2e.ScenarioEnv, o options) ([]string, error) {
	f, err := e2e.RunHotKey(env, e2e.HotKeyOptions{})
	fmt.Println(f)
	if err != nil {
		return nil, err
	}
	fmt.Printf("FIGURE hotkey: %d concurrent requests on the expired key cost the origin %d fetch(es); followers' p99 wait %v (the origin takes %v)\n",
		f.Clients, f.Fetches, f.FollowersP99.Round(time.Millisecond), f.OriginDelay)
	var missed []string
	if f.Fetches != 1 {
		missed = append(missed, fmt.Sprintf("%d origin fetches, want exactly 1", f.Fetches))
	}
	if f.Errors() > 0 {
		missed = append(missed, fmt.Sprintf("%d wrong answers", f.Errors()))
	}
	return missed, nil
}

func rounds(env e2e.ScenarioEnv, o options) ([]string, error) {
	f, err := e2e.RunRounds(env, e2e.RoundsOptions{Rounds: o.rounds})
	fmt.Println(f)
	if err != nil {
		return nil, err
	}
	fmt.Printf("FIGURE rounds: %.4f origin calls per round over %d rounds of %d concurrent cold requests (%d rounds with more than one)\n",
		f.PerRound(), f.Rounds, f.Clients, f.Extra)
	var missed []string
	if f.Errors() > 0 {
		missed = append(missed, fmt.Sprintf("%d wrong answers", f.Errors()))
	}
	return missed, nil
}
