package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/traefik/genconf/dynamic"
)

// The limiter's load scenarios: flood fairness and mass expiry.

// Shape of the flood-fairness scenario's origin and limiter.
const (
	fairSlots        = 32
	fairPerPartition = 16
	fairWarmup       = 50
	// fairOtherWorkers send the other paths' requests, each one after the other: the
	// measurement is of waiting for a slot, not of Traefik's own concurrency.
	fairOtherWorkers = 2
	fairSearchDelay  = 100 * time.Millisecond
	fairOtherDelay   = 20 * time.Millisecond
)

// FairnessOptions sizes the flood-fairness scenario. Zero fields take the published sizes.
type FairnessOptions struct {
	// Conf is the middleware's configuration the limiter section is set over; nil: Weir's
	// defaults.
	Conf map[string]interface{}
	// FloodClients flood one path with distinct queries; 0 means 64.
	FloodClients int
	// Samples is how many requests of the other paths each run measures; 0 means 300.
	Samples int
	// Repeats is how many times the other paths are measured without the flood and then
	// with it; 0 means 5.
	Repeats int
	// StopAt ends the repeats once a ratio is at most StopAt; 0: every repeat runs.
	StopAt float64
	// Control adds a run with the partition cap raised to the whole pool, where the flood
	// takes every slot.
	Control bool
	// Controls measures, in the same Traefik and in every repeat beside Weir's runs, the
	// same flood and the same readers through a router without any middleware ("bare
	// Traefik") and, when LimitDir is set, through the weirlimit plugin (the least an
	// interpreted middleware can do: its pass-through counts the request in flight, sets
	// one header and calls the next handler): the ratio the machine and Traefik allow.
	Controls bool
	// LimitDir holds weirlimit's source (go.mod and its .go file), laid out as a local
	// plugin beside Weir; "" leaves that control out.
	LimitDir string
}

// The weirlimit plugin, as its module names it, and the alias it is declared under.
const (
	weirLimitAlias  = "weirlimit"
	weirLimitModule = "github.com/weirceo/weirlimit"
)

// FairnessControl is one control's repeats, measured beside Weir's.
type FairnessControl struct {
	// Name says what the other paths and the flood went through.
	Name    string
	Repeats []FairnessRepeat
}

// Ratios are the control's repeats' p99 ratios, in order.
func (c FairnessControl) Ratios() []float64 { return FairnessFigures{Repeats: c.Repeats}.Ratios() }

// P50Ratios are the control's repeats' ratios of median latencies, in order.
func (c FairnessControl) P50Ratios() []float64 {
	return FairnessFigures{Repeats: c.Repeats}.P50Ratios()
}

// FairnessRepeat is one measurement of the other paths without the flood and with it.
type FairnessRepeat struct {
	base, during limStats
	// baseCPU and duringCPU are Traefik's CPU time over each run's wall time, in cores: on
	// two cores, what the flood costs Traefik is CPU the other paths' requests wait for.
	baseCPU, duringCPU float64
	flood              limFloodStats
	// Peak is the most flood fetches the origin served at once while the repeat's flood ran.
	Peak int64
	// Ratio is the other paths' p99 latency with the flood over their p99 without it.
	Ratio float64
	// P50Ratio is the same for their median latency, which a burst of other work on the
	// machine moves far less than a p99.
	P50Ratio float64
}

// FairnessFigures is what the flood-fairness scenario measured.
type FairnessFigures struct {
	Repeats []FairnessRepeat
	// ControlPeak is the most flood fetches the origin served at once by the control's end;
	// 0 without a control.
	ControlPeak int64
	// ControlRatio is the control run's p99 over the last run without the flood; 0
	// without a control.
	ControlRatio float64
	control      limStats
	controlFlood limFloodStats
	// Controls are the controls' repeats (FairnessOptions.Controls), in the order run.
	Controls []FairnessControl
}

// Ratios are the repeats' ratios, in order.
func (f FairnessFigures) Ratios() []float64 {
	var rs []float64
	for _, r := range f.Repeats {
		rs = append(rs, r.Ratio)
	}
	return rs
}

// P50Ratios are the repeats' ratios of median latencies, in order.
func (f FairnessFigures) P50Ratios() []float64 {
	var rs []float64
	for _, r := range f.Repeats {
		rs = append(rs, r.P50Ratio)
	}
	return rs
}

// Best is the smallest ratio.
func (f FairnessFigures) Best() float64 {
	rs := f.Ratios()
	sort.Float64s(rs)
	if len(rs) == 0 {
		return 0
	}
	return rs[0]
}

func (f FairnessFigures) String() string {
	var b strings.Builder
	for i, r := range f.Repeats {
		fmt.Fprintf(&b, "repeat %d: other paths without the flood: %s; Traefik %.2f cores\n", i+1, r.base, r.baseCPU)
		fmt.Fprintf(&b, "repeat %d: other paths during the flood:  %s; Traefik %.2f cores\n", i+1, r.during, r.duringCPU)
		fmt.Fprintf(&b, "repeat %d: flood: %s; its origin peak in flight %d (maxPerPartition %d); p99 ratio %.2f, p50 ratio %.2f\n", i+1, r.flood, r.Peak, fairPerPartition, r.Ratio, r.P50Ratio)
	}
	for _, c := range f.Controls {
		for i, r := range c.Repeats {
			fmt.Fprintf(&b, "%s, repeat %d: other paths without the flood: %s; Traefik %.2f cores\n", c.Name, i+1, r.base, r.baseCPU)
			fmt.Fprintf(&b, "%s, repeat %d: other paths during the flood:  %s; Traefik %.2f cores\n", c.Name, i+1, r.during, r.duringCPU)
			fmt.Fprintf(&b, "%s, repeat %d: flood: %s; its origin peak in flight %d; p99 ratio %.2f, p50 ratio %.2f\n", c.Name, i+1, r.flood, r.Peak, r.Ratio, r.P50Ratio)
		}
	}
	if f.ControlRatio > 0 {
		fmt.Fprintf(&b, "control, no partition cap: other paths %s (p99 ratio %.2f); flood %s, its origin peak in flight %d\n", f.control, f.ControlRatio, f.controlFlood, f.ControlPeak)
	}
	fmt.Fprintf(&b, "p99 ratios %s, median %.2f; p50 ratios %s, median %.2f", FormatRatios(f.Ratios()), Median(f.Ratios()), FormatRatios(f.P50Ratios()), Median(f.P50Ratios()))
	for _, c := range f.Controls {
		fmt.Fprintf(&b, "\n%s: p99 ratios %s, median %.2f; p50 ratios %s, median %.2f", c.Name, FormatRatios(c.Ratios()), Median(c.Ratios()), FormatRatios(c.P50Ratios()), Median(c.P50Ratios()))
	}
	return b.String()
}

// FormatRatios writes ratios with two decimals, separated by commas.
func FormatRatios(rs []float64) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("%.2f", r))
	}
	return strings.Join(parts, ", ")
}

// RunFairness floods one slow path (100 ms at the origin) with distinct queries from
// o.FloodClients clients while two workers read other paths (20 ms each, every request a
// miss of its own), under limiter.maxConcurrent 32 and maxPerPartition 16, the flood's
// queued requests shed after 200ms (FR-LIM-3). Each repeat measures the other paths' p99
// without the flood, then with it. A wrong answer of the other paths, or a flood answer
// neither 200 nor a designed refusal, is an error.
func RunFairness(env ScenarioEnv, o FairnessOptions) (FairnessFigures, error) {
	orDefault(&o.FloodClients, 64)
	orDefault(&o.Samples, 300)
	orDefault(&o.Repeats, 5)
	origin := NewOrigin()
	defer origin.Close()
	// arrivals tells a slow answer's time before the origin (Traefik, Weir, the limiter's
	// queue) from its time after.
	arrivals := newLimArrivals()
	weir := &fairVariant{name: "Weir", prefix: "/fair/", check: func(r limReply) string { return limWantStatus(r, "uri-miss") }}
	variants := []*fairVariant{weir}
	var plugins []LocalPlugin
	controls := Dynamic{}
	if o.Controls {
		// The other paths and the flood at the origin under each control's prefix: the same
		// handlers, the body still the path the client asked for.
		variants = append(variants, &fairVariant{name: "bare Traefik", prefix: "/bare/fair/", check: fairPlainAnswer})
		controls.Routes = append(controls.Routes, Route{Name: "fair-bare", Rule: "PathPrefix(`/bare/fair/`)"})
		if o.LimitDir != "" {
			// weirlimit passes through only a path holding /ns/; any other it answers itself.
			variants = append(variants, &fairVariant{name: "weirlimit", prefix: "/limit/ns/fair/", check: fairPlainAnswer})
			plugins = append(plugins, LocalPlugin{Alias: weirLimitAlias, ModuleName: weirLimitModule, Dir: o.LimitDir})
			controls.Routes = append(controls.Routes, Route{Name: "fair-limit", Rule: "PathPrefix(`/limit/ns/fair/`)", Middleware: "fair-limit"})
			controls.Builtin = map[string]*dynamic.Middleware{"fair-limit": {Plugin: map[string]dynamic.PluginConf{weirLimitAlias: {}}}}
		}
	}
	// Every request of the other paths is a miss on a path of its own.
	otherPaths := fairWarmup + o.Repeats*2*o.Samples + o.Samples/3
	for _, v := range variants {
		origin.Handle(v.prefix+"search", v.search.count(delayed(fairSearchDelay, searchResults)))
		for i := 0; i < otherPaths; i++ {
			origin.Handle(fmt.Sprintf("%sother/%d", v.prefix, i), func(w http.ResponseWriter, r *http.Request) {
				arrivals.note(r.URL.Path)
				time.Sleep(fairOtherDelay)
				w.Header().Set("Cache-Control", "max-age=60")
				io.WriteString(w, r.URL.Path)
			})
		}
	}
	limiter := func(perPartition int) Dynamic {
		// The flood's queued requests wait at most 200ms: with 64 clients against 16 slots
		// of a 100ms origin, the excess is shed with queue-wait.
		d := scenarioRoute("fair", "/fair/", scenarioConf(o.Conf, map[string]interface{}{
			"limiter": map[string]interface{}{
				"maxConcurrent": strconv.Itoa(fairSlots), "maxPerPartition": strconv.Itoa(perPartition),
				"maxQueueWait": "200ms",
			},
		}))
		d.Routes = append(d.Routes, controls.Routes...)
		d.Builtin = controls.Builtin
		return d
	}
	tr, err := env.start(origin, limiter(fairPerPartition), plugins...)
	if err != nil {
		return FairnessFigures{}, err
	}
	f, err := fairness(env, o, tr, variants, arrivals, func() error { return tr.Apply(limiter(fairSlots)) })
	return f, stopped(tr, err)
}

// fairVariant is what the other paths and the flood of the fairness scenario go through:
// Weir, or a control, each on a prefix of its own.
type fairVariant struct {
	name   string
	prefix string
	// search counts the flood's fetches at the origin.
	search inFlight
	// check returns "" for a right answer of the other paths.
	check func(limReply) string
	// next is the next other path not yet requested.
	next int
}

// others is the variant's next n other paths, each requested once.
func (v *fairVariant) others(n int) []string {
	p := make([]string, n)
	for i := range p {
		p[i] = fmt.Sprintf("%sother/%d", v.prefix, v.next)
		v.next++
	}
	return p
}

// fairPlainAnswer checks an other path's answer through a control, which has no
// Cache-Status of Weir's: 200 and the path as body.
func fairPlainAnswer(r limReply) string {
	if r.status != http.StatusOK || r.body != r.path {
		return fmt.Sprintf("%s: status %d, body %q; want 200 and the path", r.path, r.status, short(r.body))
	}
	return ""
}

func fairness(env ScenarioEnv, o FairnessOptions, tr *Traefik, variants []*fairVariant, arrivals *limArrivals, uncap func() error) (FairnessFigures, error) {
	var f FairnessFigures
	weir := variants[0]
	var cpu float64
	measure := func(v *fairVariant, what string, n int, check func(limReply) string) (limStats, error) {
		before, cpuErr := ProcessCPU(tr.Pid())
		st, err := burst(tr, v.others(n), fairOtherWorkers, 60*time.Second, arrivals, check)
		after, cpuErr2 := ProcessCPU(tr.Pid())
		cpu = 0
		if cpuErr == nil && cpuErr2 == nil && st.elapsed > 0 {
			cpu = float64(after-before) / float64(st.elapsed)
		}
		if err == nil && st.errors > 0 {
			err = fmt.Errorf("%s: other paths %s: %d of %d answers wrong; first: %s", v.name, what, st.errors, st.requests, st.firstError)
		}
		return st, err
	}
	flooded := func(v *fairVariant, slots int) (*limFlood, error) {
		// The peak is each flood's own, read before its clients hang up (repeat).
		v.search.restart()
		fl := startFlood(tr, v.prefix+"search?q=", o.FloodClients)
		if !waitFor(5*time.Second, func() bool { return v.search.now() >= int64(slots) }) {
			fl.end()
			return nil, fmt.Errorf("%s: the flood never held %d slots at the origin (in flight %d)", v.name, slots, v.search.now())
		}
		return fl, nil
	}
	// repeat measures v's other paths without the flood, then with it.
	repeat := func(v *fairVariant) (FairnessRepeat, error) {
		var r FairnessRepeat
		var err error
		if r.base, err = measure(v, "without the flood", o.Samples, v.check); err != nil {
			return r, err
		}
		r.baseCPU = cpu
		fl, err := flooded(v, fairPerPartition)
		if err != nil {
			return r, err
		}
		r.during, err = measure(v, "during the flood", o.Samples, v.check)
		r.duringCPU = cpu
		// Read before the flood's clients hang up: Traefik then drops their pass-through
		// trips (missRate.bypass sends the flood's first asks past the cache) and their slots
		// go back at once, while the origin, which does not watch for it, still finishes
		// them beside the fetches that take the slots next.
		r.Peak = v.search.most()
		fs, endErr := fl.end()
		if err != nil {
			return r, err
		}
		if endErr != nil {
			return r, endErr
		}
		r.flood = fs
		if fs.errors > 0 {
			return r, fmt.Errorf("%s: flood: %d answers neither 200 nor a shed 503 with Retry-After; first: %s", v.name, fs.errors, fs.firstError)
		}
		r.Ratio = float64(r.during.p99) / float64(r.base.p99)
		r.P50Ratio = float64(r.during.p50) / float64(r.base.p50)
		env.logf("%s, repeat: p99 %v without the flood, %v with it: ratio %.2f; flood %s", v.name, r.base.p99, r.during.p99, r.Ratio, fs)
		return r, nil
	}
	// A first round warms Traefik and the connections; it is not measured.
	for _, v := range variants {
		if _, err := measure(v, "warming up", fairWarmup, v.check); err != nil {
			return f, err
		}
	}
	for _, c := range variants[1:] {
		f.Controls = append(f.Controls, FairnessControl{Name: c.name})
	}
	for i := 1; i <= o.Repeats; i++ {
		// The variants take turns at going first, so that none always meets the machine
		// as the one before left it.
		var weirRatio float64
		for k := range variants {
			j := (k + i - 1) % len(variants)
			r, err := repeat(variants[j])
			if err != nil {
				return f, err
			}
			if j == 0 {
				f.Repeats = append(f.Repeats, r)
				weirRatio = r.Ratio
			} else {
				f.Controls[j-1].Repeats = append(f.Controls[j-1].Repeats, r)
			}
		}
		if o.StopAt > 0 && weirRatio <= o.StopAt {
			break
		}
	}
	if !o.Control {
		return f, nil
	}
	// The partition cap raised to the pool's size lets the flood take every slot: the
	// other paths must then be seen to wait, or the runs above could not tell a cap that
	// works from one that does not. A third of the samples: each waits behind the flood.
	if err := uncap(); err != nil {
		return f, err
	}
	fl, err := flooded(weir, fairSlots)
	if err != nil {
		return f, err
	}
	var measureErr error
	f.control, measureErr = measure(weir, "control", o.Samples/3, nil)
	if f.controlFlood, err = fl.end(); err != nil {
		return f, err
	}
	if measureErr != nil {
		return f, measureErr
	}
	f.ControlPeak = weir.search.most()
	f.ControlRatio = float64(f.control.p99) / float64(f.Repeats[len(f.Repeats)-1].base.p99)
	env.logf("control, no partition cap: other paths p99 %v (ratio %.2f); flood %s", f.control.p99, f.ControlRatio, f.controlFlood)
	return f, nil
}

// ExpiryOptions sizes the mass-expiry scenario. Zero fields take the published sizes.
type ExpiryOptions struct {
	// Conf is the middleware's configuration the limiter section is set over; nil: Weir's
	// defaults.
	Conf map[string]interface{}
	// Keys are stored, expire together and are requested again; 0 means 10,000.
	Keys int
	// Clients request them, each its next key once its answer is read; 0 means 200.
	Clients int
	// Queue sets limiter.maxQueue and limiter.maxQueueWait ("" each: the defaults, 1,024
	// and 2s).
	MaxQueue, MaxQueueWait string
}

// Shape of the mass-expiry scenario's origin and limiter.
const (
	expirySlots  = 32
	expiryMaxAge = 3
	// expiryRefetchDelay slows the origin for the refetch, so that the clients keep more
	// than 32 fetches wanted at once and the limiter, not Traefik, is what bounds them.
	expiryRefetchDelay = 20 * time.Millisecond
)

// ExpiryFigures is what the mass-expiry scenario measured.
type ExpiryFigures struct {
	store, refetch *answered
	// StorePeak and Peak are the most fetches the origin served at once while the keys were
	// stored and while they were fetched again.
	StorePeak, Peak int64
	// FreshAfter is the time from the first request after the expiry until every key was
	// fresh again.
	FreshAfter time.Duration
	// Refused counts designed refusals (retried by their client), Errors any other answer
	// but a stored miss, over both phases.
	Refused, Errors int
	// Refetched is how many keys the origin saw exactly twice (stored, fetched again).
	Refetched int
	keys      int
}

func (f ExpiryFigures) String() string {
	if f.store == nil || f.refetch == nil {
		return "mass expiry: not measured"
	}
	return fmt.Sprintf("store: %s; origin peak in flight %d\nrefetch: %s; origin peak in flight %d (limit %d)\n"+
		"every key fresh again %v after the first request (floor %v at 32 slots of a %v origin); designed refusals %d, other errors %d; %d of %d keys fetched exactly twice",
		f.store, f.StorePeak, f.refetch, f.Peak, expirySlots,
		f.FreshAfter.Round(time.Millisecond), time.Duration(f.keys/expirySlots)*expiryRefetchDelay, expiryRefetchDelay,
		f.Refused, f.Errors, f.Refetched, f.keys)
}

// FirstErrors describes the first wrong answers.
func (f ExpiryFigures) FirstErrors() string {
	if f.store == nil || f.refetch == nil {
		return "none"
	}
	return "store: " + f.store.errors.String() + "; refetch: " + f.refetch.errors.String()
}

// RunExpiry stores o.Keys keys with max-age=3 under limiter.maxConcurrent 32, lets them
// expire together and has o.Clients clients request every one again from an origin now
// taking 20ms, until each is answered fresh: a designed refusal is retried after its
// Retry-After, any other answer but a stored miss is an error (FR-LIM-1, FR-LIM-2).
func RunExpiry(env ScenarioEnv, o ExpiryOptions) (ExpiryFigures, error) {
	orDefault(&o.Keys, 10000)
	orDefault(&o.Clients, 200)
	origin := NewOrigin()
	defer origin.Close()
	var slow int32
	handler := func(w http.ResponseWriter, r *http.Request) {
		if atomic.LoadInt32(&slow) == 1 {
			time.Sleep(expiryRefetchDelay)
		}
		w.Header().Set("Cache-Control", "max-age="+strconv.Itoa(expiryMaxAge))
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, r.URL.Path)
	}
	paths := make([]string, o.Keys)
	for i := range paths {
		paths[i] = fmt.Sprintf("/mx/%d", i)
		origin.Handle(paths[i], handler)
	}
	limiter := map[string]interface{}{"maxConcurrent": strconv.Itoa(expirySlots), "maxPerPartition": strconv.Itoa(expirySlots)}
	if o.MaxQueue != "" {
		limiter["maxQueue"] = o.MaxQueue
	}
	if o.MaxQueueWait != "" {
		limiter["maxQueueWait"] = o.MaxQueueWait
	}
	tr, err := env.start(origin, scenarioRoute("mx", "/mx/", scenarioConf(o.Conf, map[string]interface{}{"limiter": limiter})))
	if err != nil {
		return ExpiryFigures{}, err
	}
	f := ExpiryFigures{keys: o.Keys}
	err = func() error {
		// An entry with neither validators nor stale-* directives is not kept past its
		// freshness, so the refetch reads as a miss too.
		check := func(r limReply) string { return limWantStatus(r, "uri-miss") }
		origin.ResetMaxInFlight()
		f.store = untilAnswered(tr, paths, o.Clients, 5*time.Minute, check)
		f.StorePeak = origin.MaxInFlight()
		env.logf("stored: %s", f.store)
		// Every entry is stale maxAge seconds after it was stored at the latest (the Date
		// field counts whole seconds, which can only make the age larger).
		time.Sleep(time.Until(f.store.end.Add(expiryMaxAge*time.Second + 500*time.Millisecond)))
		atomic.StoreInt32(&slow, 1)
		origin.ResetMaxInFlight()
		f.refetch = untilAnswered(tr, paths, o.Clients, 5*time.Minute, check)
		f.Peak = origin.MaxInFlight()
		f.FreshAfter = f.refetch.elapsed
		f.Refused = f.store.refused.total() + f.refetch.refused.total()
		f.Errors = f.store.errors.n + f.refetch.errors.n
		for _, p := range paths {
			if origin.Count(p) == 2 {
				f.Refetched++
			}
		}
		if f.refetch.unanswered > 0 || f.store.unanswered > 0 {
			return fmt.Errorf("keys left unanswered after 5 minutes: %d while storing, %d while refetching", f.store.unanswered, f.refetch.unanswered)
		}
		return nil
	}()
	return f, stopped(tr, err)
}

// answered is what untilAnswered saw.
type answered struct {
	requests   int64
	unanswered int
	refused    tally
	errors     firstErrors
	elapsed    time.Duration
	end        time.Time
	// p50 and p99 are of the answers that ended a path's requests.
	p50, p99 time.Duration
}

func (a *answered) String() string {
	return fmt.Sprintf("%d requests in %v (%.0f/s), latency p50 %v p99 %v; designed refusals: %s; other errors: %s",
		a.requests, a.elapsed.Round(time.Millisecond), float64(a.requests)/a.elapsed.Seconds(),
		a.p50.Round(10*time.Microsecond), a.p99.Round(10*time.Microsecond), a.refused.orNone(), a.errors.String())
}

// maxRetryAfter caps the pause of a client told to retry later.
const maxRetryAfter = 5 * time.Second

// untilAnswered requests every path with GET from clients concurrent workers until each is
// answered with something else than a designed refusal, or bound passes. A refused path is
// requested again after the refusal's Retry-After (at most maxRetryAfter) by the worker that
// got it. check returns "" for a right answer, otherwise what is wrong.
func untilAnswered(tr *Traefik, paths []string, clients int, bound time.Duration, check func(limReply) string) *answered {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	a := &answered{}
	took := make([]time.Duration, len(paths))
	var requests, finished int64
	began := time.Now()
	eachIndex(ctx, clients, len(paths), func(i int) {
		for ctx.Err() == nil {
			r, err := limGet(ctx, tr, paths[i])
			atomic.AddInt64(&requests, 1)
			if err != nil {
				if ctx.Err() == nil {
					a.errors.add(fmt.Sprintf("%s: %v", paths[i], err))
					atomic.AddInt64(&finished, 1)
				}
				return
			}
			if why := refusal(r); why != "" {
				a.refused.add(why)
				wait, _ := strconv.Atoi(r.retry)
				pause := time.Duration(wait) * time.Second
				if pause > maxRetryAfter {
					pause = maxRetryAfter
				}
				select {
				case <-time.After(pause):
				case <-ctx.Done():
				}
				continue
			}
			took[i] = r.took
			atomic.AddInt64(&finished, 1)
			if problem := check(r); problem != "" {
				a.errors.add(problem)
			}
			return
		}
	})
	a.end = time.Now()
	a.elapsed = a.end.Sub(began)
	a.requests = atomic.LoadInt64(&requests)
	var done []time.Duration
	for _, d := range took {
		if d > 0 {
			done = append(done, d)
		}
	}
	a.unanswered = len(paths) - int(atomic.LoadInt64(&finished))
	sort.Slice(done, func(i, j int) bool { return done[i] < done[j] })
	a.p50, a.p99 = limPercentile(done, 50), limPercentile(done, 99)
	return a
}

// total is the count over every outcome.
func (t *tally) total() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, c := range t.n {
		n += c
	}
	return n
}

// orNone is the tally, or "none".
func (t *tally) orNone() string {
	if t.total() == 0 {
		return "none"
	}
	return t.String()
}
