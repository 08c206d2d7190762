// Command soak runs a day of production in an hour: one Traefik v3.6.12 with Weir as a local
// plugin in front of an origin it controls, Weir's store on a throwaway redis-server, under a
// steady mix of hits, misses, pass-through, uploads and clients that hang up mid-answer, a
// flood burst every few minutes, and the faults of a long day: a configuration reload every
// 10 s (one in five changing Weir's own options), Redis killed and restarted every 5 minutes
// and once stopped for a minute, the origin failing for 30 s every 10 minutes (503, then
// dropped connections). A shorter -duration scales the faults' schedule (schedule.go).
//
// Every 10 s it samples Traefik's heap, goroutines and open file descriptors, Weir's cache
// bytes against cache.maxSize, and the clients' answers by kind; it writes them to
// soak.csv, draws each series as an SVG chart and judges the run (verdict.go): it exits 1,
// with the reasons, when goroutines or descriptors grow without bound, the heap outgrows
// its budget, Traefik's log tells of a panic, or a client got an answer no designed refusal
// explains (traffic.go, classify). scripts/soak.sh runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/weirproxy/weir/e2e"
)

const (
	// router and middleware serve every path under /s/ through Weir.
	routerPrefix = "/s/"
	middleware   = "weir-soak"
	adminPath    = "/s/_weir"
	adminToken   = "soak-operator-token-of-24-chars"
	// warmupFor is the steady traffic before the clock starts: Weir's code interpreted once
	// on every path, the hit keys stored.
	warmupFor = 10 * time.Second
)

// optionSets are Weir's options in turn: every optionsEvery-th reload moves to the next. The
// first is in force at the start. Each changes one thing an operator tunes live; the cache
// budget of each is in maxSizes.
var optionSets = []struct {
	name    string
	maxSize int64
	change  func(conf map[string]interface{})
}{
	{name: "base", maxSize: 8 << 20, change: func(map[string]interface{}) {}},
	{name: "limiter.maxConcurrent 24", maxSize: 8 << 20, change: func(c map[string]interface{}) {
		c["limiter"].(map[string]interface{})["maxConcurrent"] = "24"
	}},
	{name: "cache.maxSize 12MiB", maxSize: 12 << 20, change: func(c map[string]interface{}) {
		c["cache"].(map[string]interface{})["maxSize"] = "12MiB"
	}},
	{name: "negative.ttl 3s, stale.ifError 5m", maxSize: 8 << 20, change: func(c map[string]interface{}) {
		c["negative"] = map[string]interface{}{"ttl": "3s"}
		c["stale"].(map[string]interface{})["ifError"] = "5m"
	}},
}

// weirConf is Weir's configuration for option set i, with its store on storeURL.
func weirConf(i int, storeURL string) map[string]interface{} {
	conf := map[string]interface{}{
		"cache":   map[string]interface{}{"maxSize": "8MiB"},
		"store":   map[string]interface{}{"url": storeURL},
		"limiter": map[string]interface{}{"maxConcurrent": "16", "maxUpload": "8", "maxQueueWait": "1s"},
		"stale":   map[string]interface{}{"ifError": "2m"},
		"admin":   map[string]interface{}{"path": adminPath, "token": adminToken},
	}
	optionSets[i].change(conf)
	return conf
}

// dynamicFor is Traefik's dynamic configuration with option set i.
func dynamicFor(i int, storeURL string) e2e.Dynamic {
	return e2e.Dynamic{
		Routes:      []e2e.Route{{Name: "soak", Rule: "PathPrefix(`" + routerPrefix + "`)", Middleware: middleware}},
		Middlewares: map[string]map[string]interface{}{middleware: weirConf(i, storeURL)},
	}
}

// largestBudget is the largest cache.maxSize of the option sets.
func largestBudget() int64 {
	var m int64
	for _, o := range optionSets {
		if o.maxSize > m {
			m = o.maxSize
		}
	}
	return m
}

type options struct {
	traefik    string
	pluginRoot string
	duration   time.Duration
	rate       int
	out        string
}

func main() {
	os.Exit(run())
}

func run() int {
	var o options
	flag.StringVar(&o.traefik, "traefik", os.Getenv("WEIR_TRAEFIK"), "Traefik binary (default: $WEIR_TRAEFIK, else scripts/build-traefik.sh)")
	flag.StringVar(&o.pluginRoot, "plugin-root", "", "directory holding the plugin source (default: this repository)")
	flag.DurationVar(&o.duration, "duration", time.Hour, "length of the run (at least 1m); the faults' schedule scales with it")
	flag.IntVar(&o.rate, "rate", 150, "steady requests started a second (the flood bursts come on top)")
	flag.StringVar(&o.out, "out", "", "directory for soak.csv, the charts, the verdict and Traefik's and Redis's logs (default: a new temporary directory)")
	flag.Parse()
	if o.duration < minimumRunDuration || o.rate < 1 {
		fmt.Fprintf(os.Stderr, "soak: -duration must be at least %v and -rate positive\n", minimumRunDuration)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	v, err := soak(ctx, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "soak: %v\n", err)
		return 1
	}
	if len(v.failures) > 0 {
		return 1
	}
	return 0
}

func soak(ctx context.Context, o options) (verdict, error) {
	root, err := e2e.RepoRoot()
	if err != nil {
		return verdict{}, err
	}
	if o.traefik == "" {
		if o.traefik, err = e2e.FindTraefik(root); err != nil {
			return verdict{}, err
		}
	}
	if o.pluginRoot == "" {
		o.pluginRoot = root
	}
	if o.out == "" {
		if o.out, err = os.MkdirTemp("", "weir-soak-"); err != nil {
			return verdict{}, err
		}
	}
	traefikDir, redisDir := filepath.Join(o.out, "traefik"), filepath.Join(o.out, "redis")
	for _, d := range []string{traefikDir, redisDir} {
		if err := os.RemoveAll(d); err != nil {
			return verdict{}, err
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return verdict{}, err
		}
	}

	sched := newSchedule(o.duration)
	fmt.Printf("soak: %v at %d requests a second (%s), output in %s\n", o.duration, o.rate, mixString(), o.out)
	fmt.Print(sched)

	origin := newOrigin()
	defer origin.Close()
	redis, err := e2e.StartRedis(e2e.RedisOptions{Dir: redisDir})
	if err != nil {
		return verdict{}, err
	}
	defer redis.Close()
	storeURL := redis.URL(0)
	tr, err := e2e.Start(e2e.Options{Binary: o.traefik, Root: o.pluginRoot, Dir: traefikDir}, origin.URL, dynamicFor(0, storeURL))
	if err != nil {
		return verdict{}, err
	}
	traefikStopped := false
	defer func() {
		if !traefikStopped {
			tr.Stop()
		}
	}()
	// Traefik inherits this process's environment, GOGC with it.
	smp := sampler{tr: tr, metricsURL: tr.URL(adminPath + "/metrics"), token: adminToken, gogc: gogcOf(os.Getenv("GOGC"))}
	if _, err := smp.metrics(); err != nil {
		return verdict{}, fmt.Errorf("Weir's metrics: %w\n%s", err, tr.LogTail(20))
	}

	warm, cancelWarm := context.WithTimeout(ctx, warmupFor)
	// The warm-up meets no fault: every answer it gets is one of the schedule-free kinds.
	warmClients := newClients(tr.WebURL, time.Now(), schedule{})
	warmClients.steady(warm, o.rate)
	cancelWarm()
	warmed := warmClients.tally.snapshot()
	fmt.Printf("warmed up for %v: %d answers, %d undesigned; the clock starts\n", warmupFor, warmed.sent, warmed.undesigned())

	began := time.Now()
	cl := newClients(tr.WebURL, began, sched)
	runCtx, cancel := context.WithDeadline(ctx, began.Add(o.duration))
	defer cancel()

	var harnessErr struct {
		sync.Mutex
		errs []string
	}
	report := func(format string, args ...interface{}) {
		line := fmt.Sprintf(format, args...)
		fmt.Printf("%s  %s\n", clock(time.Since(began)), line)
		harnessErr.Lock()
		harnessErr.errs = append(harnessErr.errs, line)
		harnessErr.Unlock()
	}
	var setMu sync.Mutex
	set := 0
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); cl.steady(runCtx, o.rate) }()
	go func() {
		defer wg.Done()
		reloads(runCtx, tr, storeURL, began, func(i int) { setMu.Lock(); set = i; setMu.Unlock() }, report)
	}()
	go func() { defer wg.Done(); faults(runCtx, sched, began, redis, origin, cl, report) }()

	var samples []sample
	tick := time.NewTicker(sampleEvery)
	for done := false; !done; {
		select {
		case <-runCtx.Done():
			done = true
		case <-tick.C:
		}
		at := time.Since(began)
		setMu.Lock()
		budget := optionSets[set].maxSize
		setMu.Unlock()
		s := smp.take(at, budget, cl.tally.snapshot(), stateAt(sched, at))
		samples = append(samples, s)
		fmt.Printf("%s  heap live %.1f MiB, in use %.1f MiB, goroutines %d, fds %d, cache %.1f/%.0f MiB, sent %d, undesigned %d  %s\n",
			clock(at), mib(s.heapLive), mib(s.heapInuse), s.goroutines, s.fds, mib(s.cacheBytes), mib(s.cacheMax), s.counts.sent, s.counts.undesigned(), s.state)
		if tr.Exited() {
			report("Traefik exited\n%s", tr.LogTail(40))
			done = true
		}
	}
	tick.Stop()
	ran := time.Since(began)
	cancel()
	wg.Wait()
	last := cl.tally.snapshot()
	if ctx.Err() != nil {
		fmt.Printf("interrupted after %v\n", ran.Round(time.Second))
	}

	traefikStopped = true
	if err := tr.Stop(); err != nil {
		report("%v", err)
	}
	panics, err := panicLines(tr.LogPath, tr.OutPath)
	if err != nil {
		report("reading Traefik's log: %v", err)
	}
	if err := writeCSV(filepath.Join(o.out, "soak.csv"), samples); err != nil {
		return verdict{}, err
	}
	if err := writeCharts(o.out, samples, sched, largestBudget()); err != nil {
		return verdict{}, err
	}
	cl.tally.mu.Lock()
	examples := append([]string(nil), cl.tally.examples...)
	cl.tally.mu.Unlock()
	v := judge(samples, o.duration.Minutes(), largestBudget(), last, examples, panics)
	if n := warmed.undesigned(); n > 0 {
		v.fail("%d answers of the warm-up no designed refusal explains:\n    %s", n, strings.Join(warmClients.tally.examples, "\n    "))
	}
	for _, e := range harnessErr.errs {
		v.fail("%s", e)
	}
	if ran < o.duration-sampleEvery {
		v.fail("the run lasted %v of %v", ran.Round(time.Second), o.duration)
	}
	summary := summarize(o, ran, sched, last, origin, v)
	fmt.Print(summary)
	if err := os.WriteFile(filepath.Join(o.out, "verdict.txt"), []byte(summary), 0o644); err != nil {
		return verdict{}, err
	}
	return v, nil
}

// reloads applies a configuration every reloadEvery until ctx ends; every optionsEvery-th
// moves Weir to the next option set, and setTo is told which is in force.
func reloads(ctx context.Context, tr *e2e.Traefik, storeURL string, began time.Time, setTo func(int), report func(string, ...interface{})) {
	tick := time.NewTicker(reloadEvery)
	defer tick.Stop()
	set := 0
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if n%optionsEvery == 0 {
			set = (set + 1) % len(optionSets)
			fmt.Printf("%s  reload %d: Weir's options now %s\n", clock(time.Since(began)), n, optionSets[set].name)
		}
		if err := tr.Apply(dynamicFor(set, storeURL)); err != nil {
			report("reload %d: %v", n, err)
			return
		}
		setTo(set)
	}
}

// faults drives the schedule's Redis, origin and flood steps until ctx ends.
func faults(ctx context.Context, s schedule, began time.Time, redis *e2e.Redis, origin *faultyOrigin, cl *clients, report func(string, ...interface{})) {
	var steps []step
	for _, t := range s.redisRestarts {
		steps = append(steps, step{at: t, what: "Redis killed and restarted", do: redis.Restart})
	}
	if s.redisStop.to > 0 {
		steps = append(steps,
			step{at: s.redisStop.from, what: "Redis stopped", do: redis.Stop},
			step{at: s.redisStop.to, what: "Redis started", do: redis.Restart})
	}
	mode := func(m int32) func() error { return func() error { origin.setMode(m); return nil } }
	for _, w := range s.originFaults {
		steps = append(steps,
			step{at: w.from, what: "origin answers 503", do: mode(originFailing)},
			step{at: dropFrom(w), what: "origin drops connections", do: mode(originDropping)},
			step{at: w.to, what: "origin answers again", do: mode(originUp)})
	}
	var floods sync.WaitGroup
	defer floods.Wait()
	for _, w := range s.floods {
		w := w
		steps = append(steps, step{at: w.from, what: "flood burst", do: func() error {
			fctx, cancel := context.WithDeadline(ctx, began.Add(w.to))
			floods.Add(1)
			go func() { defer floods.Done(); defer cancel(); cl.flood(fctx) }()
			return nil
		}})
	}
	sortSteps(steps)
	for _, st := range steps {
		t := time.NewTimer(time.Until(began.Add(st.at)))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		fmt.Printf("%s  %s\n", clock(time.Since(began)), st.what)
		if err := st.do(); err != nil {
			report("%s: %v", st.what, err)
		}
	}
}

// stateAt names the faults on at offset t.
func stateAt(s schedule, t time.Duration) string {
	var on []string
	if t >= s.redisStop.from && t < s.redisStop.to {
		on = append(on, "redis-down")
	}
	for _, w := range s.originFaults {
		if t >= w.from && t < w.to {
			if t < dropFrom(w) {
				on = append(on, "origin-503")
			} else {
				on = append(on, "origin-drop")
			}
		}
	}
	for _, w := range s.floods {
		if t >= w.from && t < w.to {
			on = append(on, "flood")
		}
	}
	return strings.Join(on, " ")
}

func mixString() string {
	var parts []string
	for _, m := range mix {
		parts = append(parts, fmt.Sprintf("%s %d%%", m.kind, m.weight))
	}
	return strings.Join(parts, ", ")
}

// summarize writes the run's figures and verdict, as printed and kept in verdict.txt.
func summarize(o options, ran time.Duration, s schedule, last snapshot, origin *faultyOrigin, v verdict) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ran %v of %v; %d answers, %d hang-ups mid-answer, %d starts skipped (all %d clients busy)\n",
		ran.Round(time.Second), o.duration, last.sent, last.hangups, last.behind, maxInFlight)
	fmt.Fprintf(&b, "origin requests: hit %d, miss %d, pass %d, upload %d, flood %d, big %d\n",
		origin.Count(pathHit), origin.Count(pathMiss), origin.Count(pathPass), origin.Count(pathUp), origin.Count(pathFlood), origin.Count(pathBig))
	b.WriteString("answers by kind:")
	for _, k := range append(append([]string(nil), designedKinds...), undesignedKinds...) {
		if n := last.counts[k]; n > 0 {
			fmt.Fprintf(&b, " %s %d", k, n)
		}
	}
	b.WriteString("\n")
	for _, n := range v.notes {
		fmt.Fprintf(&b, "%s\n", n)
	}
	if len(v.failures) == 0 {
		b.WriteString("verdict: PASS\n")
	} else {
		b.WriteString("verdict: FAIL\n")
		for _, f := range v.failures {
			fmt.Fprintf(&b, "  - %s\n", f)
		}
	}
	return b.String()
}
