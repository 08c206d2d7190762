package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// The shared store's load scenario: a store that fails half its calls.

// SickStoreOptions sizes the sick-store scenario. Zero fields take the published sizes.
type SickStoreOptions struct {
	// Redis is the redis-server binary; "" means FindRedis's.
	Redis string
	// Requests is how many requests the clients send while the store is sick; 0 means
	// 1,000,000.
	Requests int
	// Clients send them, each its next once its answer is read; 0 means 16.
	Clients int
	// Keys are the URLs requested in turn; 0 means 200.
	Keys int
}

// SickStoreFigures is what the sick-store scenario measured.
type SickStoreFigures struct {
	// Requests were answered; Hits of them from the cache.
	Requests, Hits int64
	// Fetches is how many requests reached the origin.
	Fetches int64
	// FallbackHits is how many of Hits the local fallback answered: copies kept in process
	// memory while the store was lost (weir_store_fallback_hits_total over the load); -1
	// when the metrics could not be read.
	FallbackHits int64
	// StoreHits is how many lookups Redis answered with an entry (its keyspace_hits) during
	// the load, Redis's side of the count (it counts the lookups whose answers the proxy
	// then cut, and the fleet's reads of its records, too); -1 when it could not be read.
	StoreHits int64
	// Trips is how many times the store breaker opened (event store_breaker_opened), Closes
	// how many times it closed again.
	Trips, Closes int
	// OpenAtEnd is weir_store_breaker_open when the load ended.
	OpenAtEnd string
	// Panics are the lines of Traefik's log and output that speak of a panic.
	Panics []string
	// Proxy is what the fault proxy did to the store's calls.
	Proxy   FaultStats
	Elapsed time.Duration
	errors  *firstErrors
	outcome *tally
}

// Errors is how many answers were wrong: not 200 with the key's body.
func (f SickStoreFigures) Errors() int { return f.errors.n }

func (f SickStoreFigures) String() string {
	return fmt.Sprintf("%d requests in %v (%.0f/s) with half the store's calls failing: client errors %s; %d hits (%.1f%%), %d of them from the local fallback (Redis answered %d lookups with an entry); %d origin fetches; "+
		"answers: %s; store breaker opened %d times, closed %d times, open at the end %s; fault proxy: %s",
		f.Requests, f.Elapsed.Round(time.Millisecond), float64(f.Requests)/f.Elapsed.Seconds(), f.errors, f.Hits, 100*float64(f.Hits)/float64(f.Requests+1),
		f.FallbackHits, f.StoreHits, f.Fetches, f.outcome.orNone(), f.Trips, f.Closes, f.OpenAtEnd, f.Proxy) + panicReport(f.Panics)
}

// sickAdmin is the admin path the scenario reads Weir's metrics from.
const sickAdmin = "/sick/_weir"

// RunSickStore shares a Redis, through a fault proxy, with one Weir (timeouts.store 50ms,
// the near cache off so that every lookup is a call), warms o.Keys keys with max-age=2,
// then has the proxy fail half the store's calls, chosen at random, for o.Requests
// requests from o.Clients clients. Every answer must be 200 with the key's body (FR-STF-2).
func RunSickStore(env ScenarioEnv, o SickStoreOptions) (SickStoreFigures, error) {
	orDefault(&o.Requests, 1000000)
	orDefault(&o.Clients, 16)
	orDefault(&o.Keys, 200)
	if o.Redis == "" {
		var err error
		if o.Redis, err = FindRedis(); err != nil {
			return SickStoreFigures{}, err
		}
	}
	dir, err := env.subDir("redis")
	if err != nil {
		return SickStoreFigures{}, err
	}
	rd, err := StartRedis(RedisOptions{Binary: o.Redis, Dir: dir})
	if err != nil {
		return SickStoreFigures{}, err
	}
	defer rd.Close()
	proxy, err := NewFaultProxy(rd.Addr)
	if err != nil {
		return SickStoreFigures{}, err
	}
	defer proxy.Close()

	origin := NewOrigin()
	defer origin.Close()
	keys := make([]string, o.Keys)
	for i := range keys {
		keys[i] = fmt.Sprintf("/sick/k%d", i)
		origin.Handle(keys[i], answer("max-age=2", keys[i]))
	}
	conf := map[string]interface{}{
		"store":    map[string]interface{}{"url": proxy.URL(0), "keyPrefix": "weir:", "nearCache": "false"},
		"timeouts": map[string]interface{}{"store": "50ms"},
		"admin":    map[string]interface{}{"path": sickAdmin, "token": scenarioToken},
	}
	tr, err := env.start(origin, scenarioRoute("sick", "/sick/", conf))
	if err != nil {
		return SickStoreFigures{}, err
	}
	f := SickStoreFigures{errors: &firstErrors{}, outcome: &tally{}}
	err = func() error {
		for _, k := range keys {
			if r, err := fetch(context.Background(), tr.Client(), requestTimeout, http.MethodGet, tr.URL(k), nil); err != nil || r.status != http.StatusOK {
				return fmt.Errorf("warming %s: status %d, %v", k, r.status, err)
			}
		}
		hitsBefore := keyspaceHits(rd)
		fallbackBefore := scenarioCount(tr, sickAdmin, "weir_store_fallback_hits_total")
		proxy.SetMode(FaultFailHalf, 0)
		env.logf("half the store's calls fail from now on; %d requests from %d clients", o.Requests, o.Clients)
		ctx := context.Background()
		began := time.Now()
		var hits int64
		eachIndex(ctx, o.Clients, o.Requests, func(i int) {
			key := keys[i%len(keys)]
			r, err := limGet(ctx, tr, key)
			f.outcome.add(limStatusKey(r))
			if err == nil && (r.status != http.StatusOK || r.body != key) {
				err = fmt.Errorf("status %d body %q Cache-Status %q", r.status, short(r.body), r.cs)
			}
			if err != nil {
				f.errors.add(fmt.Sprintf("GET %s: %v", key, err))
				return
			}
			if r.cs.hit() {
				atomic.AddInt64(&hits, 1)
			}
			if (i+1)%100000 == 0 {
				env.logf("%d requests, %v", i+1, time.Since(began).Round(time.Second))
			}
		})
		f.Elapsed = time.Since(began)
		f.Requests = int64(o.Requests)
		f.Hits = atomic.LoadInt64(&hits)
		f.Proxy = proxy.Stats()
		f.StoreHits = -1
		if after := keyspaceHits(rd); hitsBefore >= 0 && after >= 0 {
			f.StoreHits = after - hitsBefore
		}
		for _, k := range keys {
			f.Fetches += origin.Count(k)
		}
		f.FallbackHits = -1
		if after := scenarioCount(tr, sickAdmin, "weir_store_fallback_hits_total"); fallbackBefore >= 0 && after >= 0 {
			f.FallbackHits = after - fallbackBefore
		}
		f.OpenAtEnd = scenarioMetric(tr, sickAdmin, "weir_store_breaker_open")
		lines, err := readLines(tr.OutPath)
		if err != nil {
			return err
		}
		f.Panics = panicLines(tr)
		for _, l := range lines {
			if strings.Contains(l, "store_breaker_opened") {
				f.Trips++
			}
			if strings.Contains(l, "store_breaker_closed") {
				f.Closes++
			}
		}
		return nil
	}()
	proxy.SetMode(FaultPass, 0)
	return f, stopped(tr, err)
}

// scenarioToken is the admin token of the scenarios that read Weir's metrics.
const scenarioToken = "scenario-admin-token-0123456789abcdef"

// scenarioMetric is one sample of the metrics under adminPath, "" when absent or unread.
func scenarioMetric(tr *Traefik, adminPath, sample string) string {
	r, err := fetch(context.Background(), tr.Client(), requestTimeout, http.MethodGet, tr.URL(adminPath+"/metrics"),
		map[string]string{"Authorization": "Bearer " + scenarioToken})
	if err != nil || r.status != http.StatusOK {
		return ""
	}
	return metricValue(r.body, sample)
}

// scenarioCount is a counter of the metrics under adminPath, -1 when absent or unread.
func scenarioCount(tr *Traefik, adminPath, sample string) int64 {
	n, err := strconv.ParseInt(scenarioMetric(tr, adminPath, sample), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// metricValue is the value of sample in metrics in Prometheus's text format, "" when absent.
func metricValue(metrics, sample string) string {
	for _, line := range strings.Split(metrics, "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			return v
		}
	}
	return ""
}

// keyspaceHits is Redis's count of lookups that found their key (INFO stats), -1 when it
// cannot be read.
func keyspaceHits(rd *Redis) int64 {
	info, err := rd.Do("INFO", "stats")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "keyspace_hits:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}

// panicLines are the lines of Traefik's log and output that speak of a panic, with the
// stack lines after each (at most 200 lines in all).
func panicLines(tr *Traefik) []string {
	var out []string
	for _, p := range []string{tr.LogPath, tr.OutPath} {
		lines, err := readLines(p)
		if err != nil {
			continue
		}
		for i := 0; i < len(lines) && len(out) < 200; i++ {
			if strings.Contains(lines[i], "panic") {
				out = append(out, lines[i])
			}
		}
	}
	return out
}

// panicReport is "" without panics, else the lines that speak of them.
func panicReport(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return "\npanics in Traefik's log:\n" + strings.Join(lines, "\n")
}
