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
}

// FairnessRepeat is one measurement of the other paths without the flood and with it.
type FairnessRepeat struct {
	base, during limStats
	// baseCPU and duringCPU are Traefik's CPU time over each run's wall time, in cores: on
	// two cores, what the flood costs Traefik is CPU the other paths' requests wait for.
	baseCPU, duringCPU float64
	flood              limFloodStats
	// Peak is the most flood fetches the origin had served at once by the repeat's end.
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
	if f.ControlRatio > 0 {
		fmt.Fprintf(&b, "control, no partition cap: other paths %s (p99 ratio %.2f); flood %s, its origin peak in flight %d\n", f.control, f.ControlRatio, f.controlFlood, f.ControlPeak)
	}
	fmt.Fprintf(&b, "p99 ratios %s, median %.2f; p50 ratios %s, median %.2f", FormatRatios(f.Ratios()), Median(f.Ratios()), FormatRatios(f.P50Ratios()), Median(f.P50Ratios()))
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
	var search inFlight
	origin.Handle("/fair/search", search.count(delayed(fairSearchDelay, searchResults)))
	// arrivals tells a slow answer's time before the origin (Traefik, Weir, the limiter's
	// queue) from its time after.
	arrivals := newLimArrivals()
	// Every request of the other paths is a miss on a path of its own.
	otherPaths := fairWarmup + o.Repeats*2*o.Samples + o.Samples/3
	for i := 0; i < otherPaths; i++ {
		origin.Handle(fmt.Sprintf("/fair/other/%d", i), func(w http.ResponseWriter, r *http.Request) {
			arrivals.note(r.URL.Path)
			time.Sleep(fairOtherDelay)
			w.Header().Set("Cache-Control", "max-age=60")
			io.WriteString(w, r.URL.Path)
		})
	}
	limiter := func(perPartition int) Dynamic {
		// The flood's queued requests wait at most 200ms: with 64 clients against 16 slots
		// of a 100ms origin, the excess is shed with queue-wait.
		return scenarioRoute("fair", "/fair/", scenarioConf(o.Conf, map[string]interface{}{
			"limiter": map[string]interface{}{
				"maxConcurrent": strconv.Itoa(fairSlots), "maxPerPartition": strconv.Itoa(perPartition),
				"maxQueueWait": "200ms",
			},
		}))
	}
	tr, err := env.start(origin, limiter(fairPerPartition))
	if err != nil {
		return FairnessFigures{}, err
	}
	f, err := fairness(env, o, tr, &search, arrivals, func() error { return tr.Apply(limiter(fairSlots)) })
	return f, stopped(tr, err)
}

func fairness(env ScenarioEnv, o FairnessOptions, tr *Traefik, search *inFlight, arrivals *limArrivals, uncap func() error) (FairnessFigures, error) {
	var f FairnessFigures
	next := 0
	others := func(n int) []string {
		p := make([]string, n)
		for i := range p {
			p[i] = fmt.Sprintf("/fair/other/%d", next)
			next++
		}
		return p
	}
	check := func(r limReply) string { return limWantStatus(r, "uri-miss") }
	var cpu float64
	measure := func(what string, n int, check func(limReply) string) (limStats, error) {
		before, cpuErr := ProcessCPU(tr.Pid())
		st, err := burst(tr, others(n), fairOtherWorkers, 60*time.Second, arrivals, check)
		after, cpuErr2 := ProcessCPU(tr.Pid())
		cpu = 0
		if cpuErr == nil && cpuErr2 == nil && st.elapsed > 0 {
			cpu = float64(after-before) / float64(st.elapsed)
		}
		if err == nil && st.errors > 0 {
			err = fmt.Errorf("other paths %s: %d of %d answers wrong; first: %s", what, st.errors, st.requests, st.firstError)
		}
		return st, err
	}
	flooded := func(slots int) (*limFlood, error) {
		fl := startFlood(tr, "/fair/search?q=", o.FloodClients)
		if !waitFor(5*time.Second, func() bool { return search.now() >= int64(slots) }) {
			fl.end()
			return nil, fmt.Errorf("the flood never held %d slots at the origin (in flight %d)", slots, search.now())
		}
		return fl, nil
	}
	// A first round warms Traefik and the connections; it is not measured.
	if _, err := measure("warming up", fairWarmup, check); err != nil {
		return f, err
	}
	for i := 1; i <= o.Repeats; i++ {
		var r FairnessRepeat
		var err error
		if r.base, err = measure("without the flood", o.Samples, check); err != nil {
			return f, err
		}
		r.baseCPU = cpu
		fl, err := flooded(fairPerPartition)
		if err != nil {
			return f, err
		}
		r.during, err = measure("during the flood", o.Samples, check)
		r.duringCPU = cpu
		fs, endErr := fl.end()
		if err != nil {
			return f, err
		}
		if endErr != nil {
			return f, endErr
		}
		r.flood = fs
		if fs.errors > 0 {
			return f, fmt.Errorf("flood: %d answers neither 200 nor a shed 503 with Retry-After; first: %s", fs.errors, fs.firstError)
		}
		r.Ratio = float64(r.during.p99) / float64(r.base.p99)
		r.P50Ratio = float64(r.during.p50) / float64(r.base.p50)
		r.Peak = search.most()
		f.Repeats = append(f.Repeats, r)
		env.logf("repeat %d: p99 %v without the flood, %v with it: ratio %.2f; flood %s", i, r.base.p99, r.during.p99, r.Ratio, fs)
		if o.StopAt > 0 && r.Ratio <= o.StopAt {
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
	fl, err := flooded(fairSlots)
	if err != nil {
		return f, err
	}
	var measureErr error
	f.control, measureErr = measure("control", o.Samples/3, nil)
	if f.controlFlood, err = fl.end(); err != nil {
		return f, err
	}
	if measureErr != nil {
		return f, measureErr
	}
	f.ControlPeak = search.most()
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
