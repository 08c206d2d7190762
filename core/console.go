package core

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirproxy/weir/core/console"
	"github.com/weirproxy/weir/core/hostkey"
	"github.com/weirproxy/weir/core/limit"
)

// The operator's console (the admin page's overview, core/console): a ring of one sample a
// second over fifteen minutes, made of the counters the metrics keep anyway, and tables of
// the busiest hosts and partitions, counted off the hit path (the cache's fetches, the
// refusals, the stale answers). A host's requests and hits are sampled: each answer's
// outcome counter (weir_requests_total's, added to anyway) names its request's host to the
// hosts table one time in consoleSample, for consoleSample answers, so that a hit pays one
// remainder and one test, and the table's lock and map only once in consoleSample hits.
//
// One sampler runs for the whole process, not one per engine, and only while there is
// something to see: it starts when an origin fetch, a refusal or an admin request comes,
// reads every engine's counters once a second, and ends after consoleQuiet seconds in which
// no counter of any engine moved and no origin request was in flight. An idle Weir runs no
// timer for it. When it starts again, or when the admin asks between two ticks, the seconds
// it slept are filled from the counters' difference spread evenly over them: a stretch of
// hits alone, which wakes nothing, shows as its average until the next wake.

// consoleQuiet is how many quiet seconds in a row end the sampler: few, since the seconds
// it then sleeps through are filled exactly (nothing moved, or what moved without waking it
// is averaged), and an idle Traefik should spend nothing on it soon after its last request
// (e2e's TestIdleCostsNothing measures from a second after it).
const consoleQuiet = 3

// The console's tables hold consoleRows keys each and show the consoleShown busiest.
const (
	consoleRows  = 128
	consoleShown = 50
)

// The fields the hosts table counts: the first three each time, the last two sampled (one
// answer in consoleSample, counted for consoleSample).
const (
	hostFetches = iota
	hostRefused
	hostStale
	hostHits
	hostOthers
	hostFields
)

// consoleSample is how many answers of one outcome one noted in the hosts table stands for:
// the outcome's counter's every consoleSample-th. A prime, not 64: a load that cycles
// through its hosts in a period sharing a factor with the sampling's (two hosts taking
// turns, four, sixteen) would have every sample land on the same host; with a prime, only a
// period that is a multiple of it does. The hit paths and pass's pass-throughs write it as
// the literal 61, the case of a tagged switch on their counter (TestConsoleSampledHostCounts
// checks that both agree).
const consoleSample = 61

// The fields the partitions table counts.
const (
	pathFetches = iota
	pathRefused
	pathFields
)

// The series' columns before the refusals, one per reason, named "refused:<reason>".
var consoleColumns = []string{"client", "origin", "saved", "hitRatio", "stale", "inFlight", "cap", "p50", "p95"}

// consoleRefusedPrefix starts the name of a refusal reason's column.
const consoleRefusedPrefix = "refused:"

// consoleState is a middleware's console, across reloads (it lives in engineMetrics).
type consoleState struct {
	series *console.Series
	hosts  *console.Table
	paths  *console.Table
	// fetches counts the cache's trips to the origin (fetch.go); with pass-through (the
	// outcome counter), the origin's requests.
	fetches int64

	// started is when the console began counting (Unix seconds).
	started int64

	// mu guards last and lastAt.
	mu sync.Mutex
	// last is the reading of second lastAt (Unix; 0: none yet).
	last   consoleReading
	lastAt int64
}

// consoleReading is what the counters held at one second.
type consoleReading struct {
	client, hits, origin, stale int64
	shed                        []int64
	latency                     []int64
}

func newConsoleState() *consoleState {
	names := append([]string(nil), consoleColumns...)
	for _, r := range reasons {
		names = append(names, consoleRefusedPrefix+r.name)
	}
	return &consoleState{series: console.NewSeries(names), hosts: console.NewTable(hostFields, consoleRows),
		paths: console.NewTable(pathFields, consoleRows), started: time.Now().Unix()}
}

// consoleAwake is 1 while the process's sampler runs.
var consoleAwake int32

// wakeConsole starts the sampler unless it runs: one atomic load when it does.
func wakeConsole() {
	if atomic.LoadInt32(&consoleAwake) == 1 {
		return
	}
	if atomic.CompareAndSwapInt32(&consoleAwake, 0, 1) {
		go runConsole(time.Second)
	}
}

// runConsole samples every engine each tick until consoleQuiet ticks in a row see nothing
// move. A wake that comes between its last tick and its end is lost; the next wake or the
// admin's next request fills the gap.
func runConsole(every time.Duration) {
	defer atomic.StoreInt32(&consoleAwake, 0)
	defer recoverTo(stderrLine, "sampling the admin's series")
	tick := time.NewTicker(every)
	defer tick.Stop()
	quiet := 0
	for quiet < consoleQuiet {
		if _, ok := <-tick.C; !ok {
			return
		}
		if sampleEngines() {
			quiet = 0
		} else {
			quiet++
		}
	}
}

// sampleEngines samples every engine of the process and tells whether any moved.
func sampleEngines() bool {
	registry.mu.Lock()
	es := make([]*engine, 0, len(registry.engines))
	for _, e := range registry.engines {
		es = append(es, e)
	}
	registry.mu.Unlock()
	moved := false
	for _, e := range es {
		if sampleConsole(e, e.now()) {
			moved = true
		}
	}
	return moved
}

// readConsole reads e's counters.
func readConsole(e *engine) consoleReading {
	m := e.metrics
	var r consoleReading
	for _, c := range m.outcomes {
		r.client += atomic.LoadInt64(&c.N)
	}
	r.hits = atomic.LoadInt64(&m.outcomes[outcomeHit].N)
	r.origin = atomic.LoadInt64(&m.console.fetches) + atomic.LoadInt64(&m.outcomes[outcomePass].N)
	for _, c := range m.stale {
		r.stale += atomic.LoadInt64(&c.N)
	}
	r.shed = make([]int64, len(m.shed))
	for i, c := range m.shed {
		r.shed[i] = atomic.LoadInt64(&c.N)
	}
	for _, h := range m.origin {
		b := h.Buckets(nil)
		if r.latency == nil {
			r.latency = b
			continue
		}
		for i := range b {
			r.latency[i] += b[i]
		}
	}
	return r
}

// sampleConsole records e's samples up to now's second, filling the seconds since the last
// evenly, and tells whether anything moved: a counter, or an origin request in flight.
func sampleConsole(e *engine, now time.Time) bool {
	c := e.metrics.console
	r := readConsole(e)
	stats := e.limiter.Stats()
	sec := now.Unix()
	c.mu.Lock()
	prev, at := c.last, c.lastAt
	if at != 0 && sec <= at {
		c.mu.Unlock()
		return false
	}
	c.last, c.lastAt = r, sec
	c.mu.Unlock()
	if at == 0 {
		// The first sample: the counters started at zero when the console did, so what they
		// hold is spread over the time since, and nothing that came before the sampler first
		// woke is lost (a clock behind the console's start, as a test's, takes one second).
		prev = consoleReading{}
		at = c.started
		if at >= sec {
			at = sec - 1
		}
	}
	gap := sec - at
	values := consoleValues(e, prev, r, gap, stats)
	from := at + 1
	if gap > console.SeriesLength {
		from = sec - console.SeriesLength + 1
	}
	for t := from; t <= sec; t++ {
		c.series.Add(t, values)
	}
	return r.client != prev.client || r.origin != prev.origin || stats.Fetch.InFlight+stats.Upload.InFlight > 0
}

// consoleValues is one second's sample, the difference of two readings gap seconds apart
// spread evenly over them, in consoleColumns' order then the reasons'.
func consoleValues(e *engine, prev, r consoleReading, gap int64, stats limit.Stats) []float64 {
	per := float64(gap)
	client := float64(r.client-prev.client) / per
	origin := float64(r.origin-prev.origin) / per
	saved, hitRatio := 0.0, 0.0
	if client > 0 {
		saved = 1 - origin/client
		if saved < 0 {
			saved = 0
		}
		hitRatio = float64(r.hits-prev.hits) / per / client
	}
	var p50, p95 float64
	if len(r.latency) > 0 {
		// A first reading's baseline holds no buckets: zero.
		d := make([]int64, len(r.latency))
		for i := range d {
			d[i] = r.latency[i]
			if i < len(prev.latency) {
				d[i] -= prev.latency[i]
			}
		}
		upper := e.metrics.origin[0].Upper()
		p50 = console.Quantile(upper, d, 0.5) * 1000
		p95 = console.Quantile(upper, d, 0.95) * 1000
	}
	out := []float64{client, origin, saved, hitRatio, float64(r.stale-prev.stale) / per,
		float64(stats.Fetch.InFlight), float64(stats.Fetch.Size), p50, p95}
	for i := range r.shed {
		// A first reading's baseline holds no counts: zero.
		n := r.shed[i]
		if i < len(prev.shed) {
			n -= prev.shed[i]
		}
		out = append(out, float64(n)/per)
	}
	return out
}

// noteFetch counts a cache fetch of key's partition for host, which took took.
func noteFetch(e *engine, partition, host string, at time.Time, took time.Duration) {
	c := e.metrics.console
	atomic.AddInt64(&c.fetches, 1)
	sec := at.Unix()
	console.Add(c.hosts, host, sec, hostFetches, 1, took)
	console.Add(c.paths, partition, sec, pathFetches, 1, -1)
	// wakeConsole's own first test, without its call while the sampler is awake.
	if atomic.LoadInt32(&consoleAwake) == 0 {
		wakeConsole()
	}
}

// noteRefused counts a refusal of r in the tables.
func noteRefused(h *Handler, r *http.Request) {
	c := h.e.metrics.console
	host := hostkey.Canonical(r.Host)
	sec := h.s.Now().Unix()
	console.Add(c.hosts, host, sec, hostRefused, 1, -1)
	console.Add(c.paths, consolePartition(r, host), sec, pathRefused, 1, -1)
	if atomic.LoadInt32(&consoleAwake) == 0 {
		wakeConsole()
	}
}

// sampleHit notes, for the hit path, consoleSample hits on r's host: the hit counter's
// consoleSample-th. Out of line, so that the other hits pay none of its frame; through
// console.Add, a function without defer (about 69,000 instructions under Yaegi, 1,100 a
// hit amortised).
func sampleHit(h *Handler, r *http.Request) {
	console.Add(h.hosts, hostkey.Canonical(r.Host), h.now().Unix(), hostHits, consoleSample, -1)
}

// sampleAnswer notes consoleSample answers of outcome o on r's host: o's counter's
// consoleSample-th.
func sampleAnswer(h *Handler, r *http.Request, o int) {
	field := hostOthers
	if o == outcomeHit {
		field = hostHits
	}
	console.Add(h.hosts, hostkey.Canonical(r.Host), h.now().Unix(), field, consoleSample, -1)
}

// countAnswer counts an answer of outcome o to r, and samples it for the hosts table.
func countAnswer(h *Handler, r *http.Request, o int) {
	if atomic.AddInt64(&h.e.metrics.outcomes[o].N, 1)%consoleSample == 0 {
		sampleAnswer(h, r, o)
	}
}

// noteStale counts a stale answer to r in the hosts table.
func noteStale(h *Handler, r *http.Request) {
	console.Add(h.e.metrics.console.hosts, hostkey.Canonical(r.Host), h.s.Now().Unix(), hostStale, 1, -1)
}

// consolePartition is r's partition as httpcache.PartitionOf writes one: the scheme, the
// canonical host and the path.
func consolePartition(r *http.Request, host string) string {
	scheme := "http://"
	if r.TLS != nil {
		scheme = "https://"
	}
	return scheme + host + r.URL.EscapedPath()
}
