package core

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirproxy/weir/core/breaker"
	"github.com/weirproxy/weir/core/events"
	"github.com/weirproxy/weir/core/limit"
	"github.com/weirproxy/weir/core/metrics"
)

// The outcomes of weir_requests_total, as indexes of engineMetrics.outcomes.
const (
	outcomeHit = iota
	outcomeStale
	outcomeMiss
	outcomePass
	outcomeNegative
	outcomeShed
	outcomeError
)

var outcomeNames = []string{"hit", "stale", "miss", "pass", "negative", "shed", "error"}

// engineMetrics are one middleware's metrics (ARCHITECTURE.md, "Metrics"). They outlive
// reloads, as counters must: a reload that reset them would read as a counter reset.
// Counters on the request path are added to with atomic.AddInt64 written out at the call
// (core/metrics: a third of a call to metrics.Inc under Yaegi); what the mechanisms hold is
// read when the metrics are written, by collect functions.
type engineMetrics struct {
	reg      *metrics.Registry
	outcomes []*metrics.Counter
	shed     []*metrics.Counter
	// stale counts stale answers by why they were served (staleCauses); staleAt finds a
	// cause's counter by name.
	stale     []*metrics.Counter
	staleAt   map[string]int
	coalesced *metrics.Counter
	// coalesceTimeouts counts followers that gave up on their leader, by fallback
	// (coalesceFallbacks).
	coalesceTimeouts []*metrics.Counter
	// shortCircuits counts requests an open breaker refused, by the breaker's scope key.
	shortCircuits *scopeCounts
	anomalies     *metrics.Counter
	// bodyIdle counts clients cut for pausing their request body (clients.bodyIdle).
	bodyIdle *metrics.Counter
	// clientAddrInvalid counts requests whose budgets.clientSource field held no address,
	// counted as their connection's address.
	clientAddrInvalid *metrics.Counter
	// warm counts warm URLs by result (warmResults).
	warm []*metrics.Counter
	// origin is the origin's time to answer, by the state of the breaker that let the
	// request through (originStates).
	origin []*metrics.Histogram
	store  *metrics.Histogram
	// fallbackHits counts the hits answered by copies the shared store's local fallback
	// kept while the store was lost (Entry.Fallback).
	fallbackHits *metrics.Counter
	// console is what the admin's overview draws (console.go).
	console *consoleState
}

// newEngineMetrics registers the families of the middleware name; the collect functions
// read whatever engine the registry holds for name when the metrics are written.
func newEngineMetrics(name string) (*engineMetrics, error) {
	m := &engineMetrics{reg: &metrics.Registry{}, console: newConsoleState()}
	r := m.reg
	var err error
	one := func(values []string) [][]string {
		out := make([][]string, len(values))
		for i, v := range values {
			out[i] = []string{v}
		}
		return out
	}
	if m.outcomes, err = r.CounterFamily("weir_requests_total", "Requests answered, by what Weir did: hit, stale, miss (fetched), pass (passed through), negative, shed (refused by a protection), error (502 of Weir's).",
		[]string{"outcome"}, one(outcomeNames)); err != nil {
		return nil, err
	}
	if m.shed, err = r.CounterFamily("weir_shed_total", "Requests kept from the origin by a protection, by the reason their Cache-Status names.",
		[]string{"reason"}, one(reasonNames())); err != nil {
		return nil, err
	}
	causes := staleCauses()
	if m.stale, err = r.CounterFamily("weir_stale_total", "Stale answers served, by why: stale-while-revalidate (a refresh under way), stale-if-error (the origin failed), coalesce-timeout, or the reason of the refusal they answered.",
		[]string{"reason"}, one(causes)); err != nil {
		return nil, err
	}
	m.staleAt = make(map[string]int, len(causes))
	for i, c := range causes {
		m.staleAt[c] = i
	}
	if m.coalesced, err = r.Counter("weir_coalesced_total", "Requests answered by another request's origin fetch (followers of a flight)."); err != nil {
		return nil, err
	}
	if m.coalesceTimeouts, err = r.CounterFamily("weir_coalesce_timeouts_total", "Followers that waited coalesce.followerMaxWait for their leader's fetch, by what they did then: stale (a stale answer) or pass (a fetch of their own).",
		[]string{"fallback"}, one(coalesceFallbacks)); err != nil {
		return nil, err
	}
	m.shortCircuits = &scopeCounts{n: map[string]int64{}}
	if m.anomalies, err = r.Counter("weir_missrate_anomalies_total", "Partitions the miss-rate detector found anomalous."); err != nil {
		return nil, err
	}
	if m.bodyIdle, err = r.Counter("weir_client_body_idle_total", "Clients whose connection was cut for pausing their request body longer than clients.bodyIdle."); err != nil {
		return nil, err
	}
	if m.clientAddrInvalid, err = r.Counter("weir_client_address_invalid_total", "Requests whose client address field (budgets.clientSource) held no IP address: their budget was counted under the connection's address."); err != nil {
		return nil, err
	}
	if m.warm, err = r.CounterFamily("weir_warm_total", "URLs warming went through, by result: stored, fresh (stored already), unstored, failed (not 2xx or 3xx, or no answer), refused (by the origin gate), busy (a fetch under way), timeout (left at warm.timeout).",
		[]string{"result"}, one(warmResults)); err != nil {
		return nil, err
	}
	if m.origin, err = r.HistogramFamily("weir_origin_duration_seconds", "Time the origin took to answer the cache's fetches, unsafe methods and recorded pass-through requests, by the state of the breaker that let them through: closed, or half-open (its probe).",
		[]string{"breaker_state"}, one(originStates), metrics.DurationBuckets()); err != nil {
		return nil, err
	}
	if m.store, err = r.Histogram("weir_store_duration_seconds", "Time a lookup in the shared store took.", metrics.DurationBuckets()); err != nil {
		return nil, err
	}
	if m.fallbackHits, err = r.Counter("weir_store_fallback_hits_total", "Hits answered from what this process kept while the shared store was lost (the store's local fallback)."); err != nil {
		return nil, err
	}
	current := func() *engine {
		registry.mu.Lock()
		e := registry.engines[name]
		registry.mu.Unlock()
		return e
	}
	collected := []metrics.Collected{
		{Name: "weir_origin_in_flight", Help: "Origin fetches holding a limiter slot, by pool (fetch, upload).", Kind: metrics.KindGauge,
			Labels: []string{"pool"}, Collect: func() []metrics.Sample { return poolSamples(current(), false) }},
		{Name: "weir_origin_queued", Help: "Requests waiting for a limiter slot, by pool.", Kind: metrics.KindGauge,
			Labels: []string{"pool"}, Collect: func() []metrics.Sample { return poolSamples(current(), true) }},
		{Name: "weir_breaker_state", Help: "Each breaker's state by scope key: 0 closed, 1 open, 2 half-open.", Kind: metrics.KindGauge,
			Labels: []string{"scope"}, Collect: func() []metrics.Sample { return breakerSamples(current(), breakerState) }},
		{Name: "weir_breaker_trips_total", Help: "Times each breaker opened on its own (trips and failed probes).", Kind: metrics.KindCounter,
			Labels: []string{"scope"}, Collect: func() []metrics.Sample { return breakerSamples(current(), breakerTrips) }},
		{Name: "weir_breaker_short_circuited_total", Help: "Requests an open breaker kept from the origin, by its scope key.", Kind: metrics.KindCounter,
			Labels: []string{"scope"}, Collect: func() []metrics.Sample { return shortCircuitSamples(current()) }},
		{Name: "weir_breaker_failure_ratio", Help: "Each breaker's share of failed origin fetches over its window.", Kind: metrics.KindGauge,
			Labels: []string{"scope"}, Collect: func() []metrics.Sample { return breakerSamples(current(), breakerRatio) }},
		{Name: "weir_store_breaker_open", Help: "1 while the shared store's breaker is open and lookups go to the origin.", Kind: metrics.KindGauge,
			Collect: func() []metrics.Sample { return storeSamples(current(), false) }},
		{Name: "weir_near_cache_live", Help: "1 while the shared store pushes invalidations and the near cache serves; 0 while tracking is lost.", Kind: metrics.KindGauge,
			Collect: func() []metrics.Sample { return storeSamples(current(), true) }},
		{Name: "weir_cache_entries", Help: "Entries held in this process (the memory store, or the near cache).", Kind: metrics.KindGauge,
			Collect: func() []metrics.Sample { return memorySamples(current(), memEntries) }},
		{Name: "weir_cache_bytes", Help: "Bytes held in this process by stored entries, within cache.maxSize.", Kind: metrics.KindGauge,
			Collect: func() []metrics.Sample { return memorySamples(current(), memBytes) }},
		{Name: "weir_cache_evictions_total", Help: "Entries evicted to stay within cache.maxSize.", Kind: metrics.KindCounter,
			Collect: func() []metrics.Sample { return memorySamples(current(), memEvictions) }},
	}
	for _, c := range collected {
		if err := r.Collect(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// count adds one to the counter of index i.
func count(cs []*metrics.Counter, i int) {
	atomic.AddInt64(&cs[i].N, 1)
}

// countShed counts a request a protection kept from the origin, in the metrics and in the
// shed line (core/events) alike.
func countShed(e *engine, why *reason) {
	events.CountShed(shedSummary(e.events), why.name)
	count(e.metrics.shed, why.index)
}

// The fallbacks of weir_coalesce_timeouts_total, as indexes of its counters.
const (
	fallbackStale = 0
	fallbackPass  = 1
)

var coalesceFallbacks = []string{"stale", "pass"}

// The breaker states of weir_origin_duration_seconds, as indexes of its histograms.
var originStates = []string{"closed", "half-open"}

// observeOrigin records how long the origin took to answer a request that went through the
// gate on t: under the half-open state for the breaker's probe.
func observeOrigin(e *engine, t *ticket, took time.Duration) {
	i := 0
	if t.permit.Probe {
		i = 1
	}
	metrics.ObserveDuration(e.metrics.origin[i], took)
}

// scopeCounts counts by breaker scope key, for a family collected when the metrics are
// written: keys come and go with hosts, so no series is made up front, and past
// maxCountedScopes new keys count under "other".
type scopeCounts struct {
	// mu guards n.
	mu sync.Mutex
	n  map[string]int64
}

// maxCountedScopes bounds the keys a scopeCounts holds.
const maxCountedScopes = 1000

func (c *scopeCounts) add(key string) {
	c.mu.Lock()
	if _, ok := c.n[key]; !ok && len(c.n) >= maxCountedScopes {
		key = "other"
	}
	c.n[key]++
	c.mu.Unlock()
}

func shortCircuitSamples(e *engine) []metrics.Sample {
	if e == nil {
		return nil
	}
	c := e.metrics.shortCircuits
	c.mu.Lock()
	out := make([]metrics.Sample, 0, len(c.n))
	for key, n := range c.n {
		out = append(out, metrics.Sample{Values: []string{scopeLabel(key)}, Value: float64(n)})
	}
	c.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Values[0] < out[j].Values[0] })
	return out
}

// countStale counts a stale answer served for cause (a staleCauses name; the Cache-Status
// detail it carries).
func countStale(e *engine, cause string) {
	if i, ok := e.metrics.staleAt[cause]; ok {
		count(e.metrics.stale, i)
	}
}

// reasonNames are the registered reasons' names, in their order: weir_shed_total's labels.
func reasonNames() []string {
	names := make([]string, len(reasons))
	for i, r := range reasons {
		names[i] = r.name
	}
	return names
}

// outcomeOf is the outcome of an answer write writes at now.
func outcomeOf(a *answer, now time.Time) int {
	switch {
	case a.ent != nil && a.hit && now.Before(a.ent.FreshUntil):
		return outcomeHit
	case a.ent != nil && a.hit:
		return outcomeStale
	case a.ent != nil || a.header != nil:
		return outcomeMiss
	case a.detail == "negative":
		return outcomeNegative
	case a.refused:
		return outcomeShed
	case a.status >= 500:
		return outcomeError
	}
	return -1
}

func poolSamples(e *engine, queued bool) []metrics.Sample {
	if e == nil {
		return nil
	}
	st := e.limiter.Stats()
	pick := func(p limit.PoolStats) float64 {
		if queued {
			return float64(p.Queued)
		}
		return float64(p.InFlight)
	}
	return []metrics.Sample{
		{Values: []string{"fetch"}, Value: pick(st.Fetch)},
		{Values: []string{"upload"}, Value: pick(st.Upload)},
	}
}

// What breakerSamples reads of each breaker.
const (
	breakerState = iota
	breakerTrips
	breakerRatio
)

func breakerSamples(e *engine, what int) []metrics.Sample {
	if e == nil {
		return nil
	}
	var out []metrics.Sample
	for _, b := range e.breakers.Snapshot(e.now()) {
		v := 0.0
		switch what {
		case breakerState:
			v = float64(b.State)
		case breakerTrips:
			v = float64(b.Trips)
		case breakerRatio:
			if n := b.OK + b.Failures; n > 0 {
				v = float64(b.Failures) / float64(n)
			}
		}
		out = append(out, metrics.Sample{Values: []string{scopeLabel(b.Key)}, Value: v})
	}
	return out
}

// scopeLabel is a scope key as a label value: the engine scope's key is empty.
func scopeLabel(key string) string {
	if key == breaker.ScopeKey(breaker.ScopeEngine, "") {
		return "engine"
	}
	return key
}

func storeSamples(e *engine, near bool) []metrics.Sample {
	if e == nil {
		return nil
	}
	r, ok := e.store.(remoteState)
	if !ok {
		return nil
	}
	v := 0.0
	if near && e.hot != nil && r.nearLive() {
		v = 1
	}
	if !near && r.breakerOpen() {
		v = 1
	}
	return []metrics.Sample{{Value: v}}
}

// What memorySamples reads of the store in process memory.
const (
	memEntries = iota
	memBytes
	memEvictions
)

func memorySamples(e *engine, what int) []metrics.Sample {
	if e == nil || e.hot == nil {
		return nil
	}
	n, b := e.hot.Len()
	v := float64(n)
	switch what {
	case memBytes:
		v = float64(b)
	case memEvictions:
		v = float64(e.hot.Evictions())
	}
	return []metrics.Sample{{Value: v}}
}

// writeMetrics writes e's metrics, in the text format.
func writeMetrics(e *engine, w interface{ Write([]byte) (int, error) }) error {
	if err := e.metrics.reg.WriteText(w); err != nil {
		return fmt.Errorf("metrics of %s: %w", e.name, err)
	}
	return nil
}
