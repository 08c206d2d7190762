package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/store"
	"github.com/weirproxy/weir/internal/await"
)

// The shared store end to end (FR-STF-1, FR-STF-2): Weir instances in separate Traefik
// processes share one redis-server, answers stored through one are hits on the other, purges
// and invalidations reach every instance, and a store that dies, crawls or fails half its
// calls costs clients nothing but cache hits.

// sharedHost is the Host every request carries: the cache key holds the host, and instances
// behind one load balancer see the same one, whatever port each listens on.
const sharedHost = "weir.test"

// redisKeyPrefix is store.keyPrefix in the tests' configuration.
const redisKeyPrefix = "weir:"

// Bounds of the fault loads.
const (
	faultClients     = 8
	faultDuration    = 5 * time.Second
	faultMaxRequests = 50000
	// faultOriginDelay keeps each origin fetch in flight long enough for concurrent misses
	// to overlap, so the in-flight peak shows whether they were coalesced.
	faultOriginDelay = 20 * time.Millisecond
	// recoverWithin bounds the wait for the store to be used again once it is healthy: the
	// store breaker's open period doubles up to 30s.
	recoverWithin = 40 * time.Second
)

// requireRedis returns the redis-server binary, skipping the test without one, or failing it
// when WEIR_E2E=required.
func requireRedis(t *testing.T) string {
	t.Helper()
	p, err := FindRedis()
	if err != nil {
		Unavailable(t, err.Error())
	}
	return p
}

// requireE2ERedis skips or fails the test, before it starts anything, unless both Traefik
// and redis-server are at hand.
func requireE2ERedis(t *testing.T) {
	t.Helper()
	requireTraefik(t)
	requireRedis(t)
}

// startRedis starts a redis-server for the test on port (0: a free one), killed when the
// test ends, its log printed if the test failed.
func startRedis(t *testing.T, port int) *Redis {
	t.Helper()
	bin := requireRedis(t)
	r, err := StartRedis(RedisOptions{Binary: bin, Dir: t.TempDir(), Port: port})
	if err != nil {
		t.Fatalf("%v", err)
	}
	stopAtEnd(t, "redis", func() string { return r.LogTail(30) }, r.Close)
	return r
}

// newFaultProxy starts a fault proxy in front of target, closed when the test ends.
func newFaultProxy(t *testing.T, target string) *FaultProxy {
	t.Helper()
	p, err := NewFaultProxy(target)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// redisConfig is the middleware configuration of an operator sharing a store.
func redisConfig(url string) map[string]interface{} {
	return map[string]interface{}{
		"store":    map[string]interface{}{"url": url, "keyPrefix": redisKeyPrefix},
		"timeouts": map[string]interface{}{"store": "50ms"},
		"cache":    map[string]interface{}{"allowPurge": "true"},
		// PURGE needs the operator's token (callT sends it), from loopback, where the tests
		// call Traefik from.
		"admin": map[string]interface{}{"token": adminTestToken, "allow": []string{"127.0.0.0/8", "::1"}},
	}
}

// noNearCache turns the near cache off in a configuration made by redisConfig.
func noNearCache(conf map[string]interface{}) map[string]interface{} {
	conf["store"].(map[string]interface{})["nearCache"] = "false"
	return conf
}

// startPair starts two Traefik processes with the same configuration, each in its own
// directory on its own ports, side by side.
func startPair(t *testing.T, o *Origin, d Dynamic) (a, b *Traefik) {
	t.Helper()
	return startPairWith(t, Options{}, o, d)
}

// startPairWith is startPair with opts (Binary, Root and Dir filled in) for both.
func startPairWith(t *testing.T, opts Options, o *Origin, d Dynamic) (a, b *Traefik) {
	t.Helper()
	binary, root := requireTraefik(t)
	var trs [2]*Traefik
	var errs [2]error
	dirs := [2]string{t.TempDir(), t.TempDir()}
	began := time.Now()
	var wg sync.WaitGroup
	for i := range trs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			o2 := opts
			o2.Binary, o2.Root, o2.Dir = binary, root, dirs[i]
			trs[i], errs[i] = Start(o2, o.URL, d)
		}(i)
	}
	wg.Wait()
	for i, tr := range trs {
		if tr == nil {
			continue
		}
		tr := tr
		stopAtEnd(t, "traefik "+string(rune('A'+i)), func() string { return tr.LogTail(60) }, tr.Stop)
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("traefik %c: %v", 'A'+i, err)
		}
	}
	t.Logf("traefik A and B ready in %v", time.Since(began).Round(time.Millisecond))
	return trs[0], trs[1]
}

// call makes one request through tr with the shared Host; it is safe on any goroutine.
func call(tr *Traefik, method, path string) (reply, error) {
	return fetch(context.Background(), tr.Client(), requestTimeout, method, tr.URL(path), map[string]string{"Host": sharedHost})
}

// callT is call for the test's goroutine, failing the test on a transport error.
func callT(t *testing.T, tr *Traefik, method, path string) reply {
	t.Helper()
	header := map[string]string{"Host": sharedHost}
	if method == "PURGE" {
		// The operator's token, for PURGE alone: a request with Authorization is cached
		// otherwise (caching.md).
		header["Authorization"] = "Bearer " + adminTestToken
	}
	return send(t, tr, method, path, header)
}

// TestRedisSharedStore: two Traefik processes share one Redis. An answer stored through A
// is a hit on B; a PURGE through A, and a POST through A that the origin accepts (RFC 9111
// §4.4), make the next GET on B a miss.
func TestRedisSharedStore(t *testing.T) {
	requireE2ERedis(t)
	rd := startRedis(t, 0)
	o := newOrigin(t)
	const path = "/shared/a"
	o.Handle(path, versioned())
	a, b := startPair(t, o, cachedRoute("shared", "/shared", "weir-shared", redisConfig(rd.URL(0))))

	first := callT(t, a, http.MethodGet, path)
	wantReply(t, "GET on A", first, http.StatusOK, "v1")
	wantMiss(t, "GET on A", first, "uri-miss", true)
	onB := callT(t, b, http.MethodGet, path)
	wantReply(t, "GET on B after A stored", onB, http.StatusOK, "v1")
	wantHit(t, "GET on B after A stored", onB)
	wantCount(t, o, path, 1)
	keys, err := rd.Do("KEYS", redisKeyPrefix+"*")
	if err != nil {
		t.Fatalf("redis KEYS: %v", err)
	}
	if want := redisKeyPrefix + "http://" + sharedHost + path; !strings.Contains(keys, want) {
		t.Errorf("redis keys = %q, want %q among them", keys, want)
	}
	t.Logf("A: %q; B: %q; redis keys: %q", first.cacheStatus(), onB.cacheStatus(), keys)

	purge := callT(t, a, "PURGE", path)
	wantReply(t, "PURGE on A", purge, http.StatusOK, "purged\n")
	if n := o.CountMethod("PURGE", path); n != 0 {
		t.Errorf("PURGE reached the origin %d times, want 0 (cache.allowPurge)", n)
	}
	afterPurge, purgeLag := afterInvalidation(t, b, path)
	wantReply(t, "GET on B after PURGE on A", afterPurge, http.StatusOK, "v2")
	wantMiss(t, "GET on B after PURGE on A", afterPurge, "uri-miss", true)
	wantCount(t, o, path, 2)
	wantHit(t, "GET on A after B stored again", callT(t, a, http.MethodGet, path))

	post := callT(t, a, http.MethodPost, path)
	wantReply(t, "POST on A", post, http.StatusOK, "done")
	afterPost, postLag := afterInvalidation(t, b, path)
	wantReply(t, "GET on B after POST on A", afterPost, http.StatusOK, "v3")
	wantMiss(t, "GET on B after POST on A", afterPost, "uri-miss", true)
	if got := o.CountMethod(http.MethodGet, path); got != 3 {
		t.Errorf("origin GETs for %s = %d, want 3", path, got)
	}
	t.Logf("PURGE: %q; GET on B after it: %q (%s); GET on B after POST: %q (%s); origin GETs %d, POSTs %d",
		purge.cacheStatus(), afterPurge.cacheStatus(), purgeLag, afterPost.cacheStatus(), postLag,
		o.CountMethod(http.MethodGet, path), o.CountMethod(http.MethodPost, path))
}

// TestRedisInvalidEntryIsAMiss: an entry in Redis with a status no answer can have (0,
// 1000: net/http panics writing either) is read as a miss that the origin answers, and is
// replaced, with one log line. Served, it closed every client's connection without an answer
// until it expired.
func TestRedisInvalidEntryIsAMiss(t *testing.T) {
	requireE2ERedis(t)
	rd := startRedis(t, 0)
	o := newOrigin(t)
	tr := startTraefik(t, o, cachedRoute("invalid", "/invalid", "weir-invalid", redisConfig(rd.URL(0))))
	tests := []struct {
		desc   string
		status int
	}{
		{desc: "status 0", status: 0},
		{desc: "status 1000", status: 1000},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			path := "/invalid/" + strconv.Itoa(tc.status)
			o.Handle(path, answer("max-age=60", "from the origin"))
			key := "http://" + sharedHost + path
			// The entry as Weir would write it, but for its status.
			now := time.Now()
			bad := store.Encode(&store.Entry{
				Status:     tc.status,
				Header:     http.Header{"Content-Type": {"text/plain"}, "Content-Length": {"3"}},
				Body:       []byte("bad"),
				Born:       now,
				FreshUntil: now.Add(time.Hour),
				KeepUntil:  now.Add(time.Hour),
			})
			if _, err := rd.Do("SET", redisKeyPrefix+key, string(bad), "PX", "3600000"); err != nil {
				t.Fatalf("redis SET: %v", err)
			}

			r := callT(t, tr, http.MethodGet, path)
			wantReply(t, "GET over the invalid entry", r, http.StatusOK, "from the origin")
			wantMiss(t, "GET over the invalid entry", r, "uri-miss", true)
			wantCount(t, o, path, 1)
			v, err := rd.Do("GET", redisKeyPrefix+key)
			if err != nil {
				t.Fatalf("redis GET: %v", err)
			}
			stored, err := store.Decode([]byte(v))
			if err != nil || stored.Status != http.StatusOK || string(stored.Body) != "from the origin" {
				t.Errorf("entry in redis after the miss: %v (error %v), want the origin's answer in place of the invalid one", stored, err)
			}
			wantHit(t, "GET after the origin's answer was stored", callT(t, tr, http.MethodGet, path))
			line := fmt.Sprintf("shared store entry %q deleted, read as a miss", key)
			if n := strings.Count(tr.LogTail(1000), line); n != 1 {
				t.Errorf("log lines %q: %d, want 1", line, n)
			}
		})
	}
}

// invalidationWithin bounds how long another instance may serve its near copy of an entry
// that was purged or invalidated: the server pushes the invalidation as it deletes the key,
// and the instance applies it on its own goroutine.
const invalidationWithin = time.Second

// afterInvalidation GETs path through tr until the answer is not a hit, and says how many
// hits came before it and how long that took. It fails the test after invalidationWithin.
func afterInvalidation(t *testing.T, tr *Traefik, path string) (reply, string) {
	t.Helper()
	began := time.Now()
	for stale := 0; ; stale++ {
		r := callT(t, tr, http.MethodGet, path)
		if !r.cacheStatus().hit() {
			return r, fmt.Sprintf("%d stale hits, %v", stale, time.Since(began).Round(time.Microsecond))
		}
		if time.Since(began) > invalidationWithin {
			t.Fatalf("GET %s still a hit %v after the entry was deleted from the store (%d hits)", path, invalidationWithin, stale+1)
		}
		time.Sleep(time.Millisecond)
	}
}

// loadFigures is what a fault load measured.
type loadFigures struct {
	requests, errors, hits int64
	elapsed                time.Duration
	// slowest is the longest a served answer took, in nanoseconds.
	slowest     int64
	firstErrors []string
	// perSecond counts answers and hits in each second of the load.
	perSecond [faultSeconds]struct{ requests, hits, slowest int64 }
}

// faultSeconds is how many one-second buckets a load's timeline has.
const faultSeconds = int(faultDuration/time.Second) + 1

// timeline is the load second by second: "0s: 950/960 hits, slowest 12ms, 1s: ...".
func (f *loadFigures) timeline() string {
	var parts []string
	for i := range f.perSecond {
		b := &f.perSecond[i]
		if b.requests == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%ds: %d/%d hits, slowest %v", i, b.hits, b.requests,
			time.Duration(b.slowest).Round(time.Millisecond)))
	}
	return strings.Join(parts, ", ")
}

// faultLoad runs faultClients clients against the keys through the targets (client i on
// target i mod len) for faultDuration or faultMaxRequests, checking every answer's status
// and body. It runs fault on the calling goroutine meanwhile and returns once both ended.
func faultLoad(t *testing.T, targets []*Traefik, keys []string, bodies map[string]string, fault func()) loadFigures {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), faultDuration)
	defer cancel()
	var f loadFigures
	var total int64
	// errMu guards firstErrors.
	var errMu sync.Mutex
	var wg sync.WaitGroup
	began := time.Now()
	for i := 0; i < faultClients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			tr := targets[i%len(targets)]
			for n := i; ctx.Err() == nil && atomic.AddInt64(&total, 1) <= faultMaxRequests; n++ {
				key := keys[n%len(keys)]
				r, err := call(tr, http.MethodGet, key)
				if err == nil && (r.status != http.StatusOK || r.body != bodies[key]) {
					err = fmt.Errorf("status %d body %q (%s)", r.status, short(r.body), r.cacheStatus())
				}
				if err != nil {
					atomic.AddInt64(&f.errors, 1)
					errMu.Lock()
					if len(f.firstErrors) < 5 {
						f.firstErrors = append(f.firstErrors, fmt.Sprintf("GET %s: %v", key, err))
					}
					errMu.Unlock()
					continue
				}
				atomic.AddInt64(&f.requests, 1)
				sec := int(time.Since(began) / time.Second)
				if sec >= faultSeconds {
					sec = faultSeconds - 1
				}
				raiseMax(&f.slowest, int64(r.took))
				raiseMax(&f.perSecond[sec].slowest, int64(r.took))
				atomic.AddInt64(&f.perSecond[sec].requests, 1)
				if r.cacheStatus().hit() {
					atomic.AddInt64(&f.hits, 1)
					atomic.AddInt64(&f.perSecond[sec].hits, 1)
				}
			}
		}(i)
	}
	if fault != nil {
		fault()
	}
	// Past faultDuration and a margin, clients still busy are stuck.
	await.Group(t, &wg, faultDuration+30*time.Second, "fault load")
	f.elapsed = time.Since(began)
	return f
}

// sleepUntil sleeps until d after began.
func sleepUntil(began time.Time, d time.Duration) {
	time.Sleep(time.Until(began.Add(d)))
}

// waitShared waits until the store is used again by both instances: an answer stored
// through a is a hit on b. Each try uses a fresh key (the query is part of it), so neither
// instance can answer from an earlier try. It returns how long that took and how many tries.
func waitShared(t *testing.T, a, b *Traefik, path string) (time.Duration, int) {
	t.Helper()
	began := time.Now()
	for try := 1; ; try++ {
		key := fmt.Sprintf("%s?recover=%d", path, try)
		ra := callT(t, a, http.MethodGet, key)
		rb := callT(t, b, http.MethodGet, key)
		if ra.status != http.StatusOK || rb.status != http.StatusOK {
			t.Fatalf("GET %s while waiting for the store: status %d on A, %d on B, want 200", key, ra.status, rb.status)
		}
		if ra.cacheStatus().has("stored") && rb.cacheStatus().hit() {
			return time.Since(began), try
		}
		if time.Since(began) > recoverWithin {
			t.Fatalf("the store is not used again %v after it recovered (%d tries; last: A %q, B %q)",
				recoverWithin, try, ra.cacheStatus(), rb.cacheStatus())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestRedisFaults: a load through two Traefik processes sharing a Redis that is killed and
// restarted, that answers every call too late, or that fails half its calls. No client
// sees an error; concurrent misses stay coalesced (at most one origin fetch per key per
// instance); once the store is healthy, answers are shared through it again without a
// restart.
func TestRedisFaults(t *testing.T) {
	requireE2ERedis(t)
	tests := []struct {
		desc string
		// viaProxy puts the fault proxy between Traefik and Redis.
		viaProxy bool
		fault    func(t *testing.T, began time.Time, rd *Redis, p *FaultProxy)
	}{
		{
			desc: "redis killed and restarted",
			fault: func(t *testing.T, began time.Time, rd *Redis, p *FaultProxy) {
				sleepUntil(began, time.Second)
				if err := rd.Kill(); err != nil {
					t.Errorf("kill redis: %v", err)
				}
				t.Logf("redis killed at %v", time.Since(began).Round(time.Millisecond))
				sleepUntil(began, 2500*time.Millisecond)
				if err := rd.Restart(); err != nil {
					t.Errorf("restart redis: %v", err)
				}
				t.Logf("redis answering again at %v", time.Since(began).Round(time.Millisecond))
			},
		},
		{
			desc:     "every store call delayed past timeouts.store",
			viaProxy: true,
			fault: func(t *testing.T, began time.Time, rd *Redis, p *FaultProxy) {
				sleepUntil(began, time.Second)
				p.SetMode(FaultDelay, 200*time.Millisecond)
				t.Logf("store calls delayed 200ms from %v to the end of the load", time.Since(began).Round(time.Millisecond))
			},
		},
		{
			desc:     "half the store calls fail",
			viaProxy: true,
			fault: func(t *testing.T, began time.Time, rd *Redis, p *FaultProxy) {
				sleepUntil(began, time.Second)
				p.SetMode(FaultFailHalf, 0)
				t.Logf("half the store calls fail from %v to the end of the load", time.Since(began).Round(time.Millisecond))
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			rd := startRedis(t, 0)
			url := rd.URL(0)
			var p *FaultProxy
			if tc.viaProxy {
				p = newFaultProxy(t, rd.Addr)
				url = p.URL(0)
			}
			o, keys, bodies := slowKeysOrigin(t, "fault", "max-age=2")
			a, b := startPair(t, o, cachedRoute("fault", "/fault", "weir-fault", redisConfig(url)))

			// Warm: the keys stored through A and hits on B before the fault.
			for _, k := range keys {
				callT(t, a, http.MethodGet, k)
				wantHit(t, "GET "+k+" on B before the load", callT(t, b, http.MethodGet, k))
			}
			var fetchedBefore int64
			for _, k := range keys {
				fetchedBefore += o.Count(k)
			}
			o.ResetMaxInFlight()
			began := time.Now()
			f := faultLoad(t, []*Traefik{a, b}, keys, bodies, func() { tc.fault(t, began, rd, p) })
			peak := o.MaxInFlight()
			var fetched int64
			for _, k := range keys {
				fetched += o.Count(k)
			}
			fetched -= fetchedBefore
			proxyStats := "no proxy"
			if p != nil {
				proxyStats = "proxy: " + p.Stats().String()
				p.SetMode(FaultPass, 0)
			}
			t.Logf("load: %d clients, %v: %d requests served (%.0f/s), %d client errors, %d hits (%.0f%%), %d origin fetches, at most %d in flight, slowest answer %v; %s",
				faultClients, f.elapsed.Round(time.Millisecond), f.requests, float64(f.requests)/f.elapsed.Seconds(), f.errors,
				f.hits, 100*float64(f.hits)/float64(f.requests+1), fetched, peak, time.Duration(f.slowest).Round(time.Millisecond), proxyStats)
			t.Logf("second by second: %s", f.timeline())
			if f.errors != 0 {
				t.Errorf("%d client errors, want 0; the first: %s", f.errors, strings.Join(f.firstErrors, "; "))
			}
			if f.requests < faultClients {
				t.Errorf("%d requests served in %v, want at least one per client", f.requests, f.elapsed)
			}
			// One flight per key per instance: the store failing must not undo coalescing.
			if max := int64(len(keys) * 2); peak > max {
				t.Errorf("origin fetches in flight peaked at %d, want at most %d (one per key per instance)", peak, max)
			}
			took, tries := waitShared(t, a, b, "/fault/recover")
			t.Logf("store shared again %v after the load (%d tries)", took.Round(time.Millisecond), tries)
			for i, tr := range []*Traefik{a, b} {
				logged := strings.Count(tr.LogTail(1000), "event=store_breaker_opened")
				t.Logf("traefik %c logged store_breaker_opened %d times", 'A'+i, logged)
			}
		})
	}
}

// TestRedisSickStore: 20,000 requests from 16 clients while the fault proxy fails half the
// store's calls, chosen at random, cost no client an error: every answer is 200 with its
// key's body, from the store, the local fallback or the origin (the sick-store scenario,
// RunSickStore, a fiftieth of its published million). The store breaker's trips, counted
// from its events, and the local fallback's hits, from weir_store_fallback_hits_total, are
// logged.
func TestRedisSickStore(t *testing.T) {
	requireE2ERedis(t)
	f, err := RunSickStore(scenarioEnv(t), SickStoreOptions{Redis: requireRedis(t), Requests: 20000})
	t.Logf("sick store: %s", f)
	if err != nil {
		t.Fatalf("%v", err)
	}
	if f.Errors() > 0 {
		t.Errorf("%d client errors, want 0", f.Errors())
	}
	if f.Proxy.Failed == 0 {
		t.Errorf("the fault proxy failed no call (%s): the store was never sick", f.Proxy)
	}
	if f.FallbackHits < 0 || f.FallbackHits > f.Hits {
		t.Errorf("the local fallback's hits (weir_store_fallback_hits_total over the load): %d of %d hits, want counted, at most the hits", f.FallbackHits, f.Hits)
	}
}

// TestRedisUnreachableAtStart: with store.url naming a port nobody listens on, New succeeds
// and requests are served, from the origin once per instance and then from the instance's
// own memory (store.Fallback); once a server listens there, answers are stored and shared
// without a restart.
func TestRedisUnreachableAtStart(t *testing.T) {
	requireE2ERedis(t)
	port, err := freePort()
	if err != nil {
		t.Fatalf("%v", err)
	}
	o := newOrigin(t)
	const path = "/down/a"
	o.Handle(path, answer("max-age=60", "from origin"))
	o.Handle("/down/recover", answer("max-age=60", "recovered"))
	url := fmt.Sprintf("redis://127.0.0.1:%d/0", port)
	a, b := startPair(t, o, cachedRoute("down", "/down", "weir-down", redisConfig(url)))

	const n = 6
	for i := 1; i <= n; i++ {
		tr := a
		if i%2 == 0 {
			tr = b
		}
		r := callT(t, tr, http.MethodGet, path)
		what := fmt.Sprintf("GET %d with the store down", i)
		wantReply(t, what, r, http.StatusOK, "from origin")
		if i <= 2 {
			// The first on each instance: kept in its own memory.
			wantMiss(t, what, r, "uri-miss", true)
			t.Logf("%s: %q in %v", what, r.cacheStatus(), r.took.Round(time.Millisecond))
			continue
		}
		wantHit(t, what, r)
	}
	wantCount(t, o, path, 2)

	startRedis(t, port)
	took, tries := waitShared(t, a, b, "/down/recover")
	t.Logf("redis started on %s: store shared %v later (%d tries)", url, took.Round(time.Millisecond), tries)
}

// TestRedisPurgeWhileStoreFails: a PURGE that could not reach the shared store must not be
// reported as done. Answering 200 "purged" while every instance keeps serving the entry
// tells the operator the purge worked when it did not; an error status lets them retry.
func TestRedisPurgeWhileStoreFails(t *testing.T) {
	requireE2ERedis(t)
	rd := startRedis(t, 0)
	p := newFaultProxy(t, rd.Addr)
	o := newOrigin(t)
	const path = "/purge/a"
	o.Handle(path, versioned())
	a, b := startPair(t, o, cachedRoute("purge", "/purge", "weir-purge", redisConfig(p.URL(0))))

	wantMiss(t, "GET on A", callT(t, a, http.MethodGet, path), "uri-miss", true)
	wantHit(t, "GET on B", callT(t, b, http.MethodGet, path))

	p.SetMode(FaultFailAll, 0)
	purge := callT(t, a, "PURGE", path)
	p.SetMode(FaultPass, 0)
	after := callT(t, b, http.MethodGet, path)
	t.Logf("PURGE on A while the store fails every call: %d %q (%s); GET on B once it works again: %q %q; proxy: %s",
		purge.status, strings.TrimSpace(purge.body), purge.cacheStatus(), after.body, after.cacheStatus(), p.Stats())
	if purge.status == http.StatusOK && after.cacheStatus().hit() {
		t.Errorf("PURGE answered 200 %q but the entry is still in the shared store: B serves it (%q); "+
			"want an error status when the store could not delete it, or the entry gone",
			strings.TrimSpace(purge.body), after.cacheStatus())
	}
}

// TestRedisBenchmark measures hits served from the shared store against bare Traefik, and
// against hits from process memory, in one Traefik: the shared store as configured by
// default (near copies kept while Redis tracks them), the same with store.nearCache off
// (every hit a Redis GET), four routers, 1 KiB answers, interleaved rounds,
// medians of the rate and of Traefik's CPU time per answer. It runs only with WEIR_BENCH_REDIS=1 (scripts/bench-redis.sh); BENCH_DURATION,
// BENCH_ROUNDS and BENCH_CONNECTIONS tune it.
func TestRedisBenchmark(t *testing.T) {
	if os.Getenv("WEIR_BENCH_REDIS") != "1" {
		t.Skip("benchmark: set WEIR_BENCH_REDIS=1 or run scripts/bench-redis.sh")
	}
	requireE2ERedis(t)
	duration := envDuration(t, "BENCH_DURATION", 5*time.Second)
	rounds := envInt(t, "BENCH_ROUNDS", 3)
	conns := envInt(t, "BENCH_CONNECTIONS", 32)
	rd := startRedis(t, 0)
	o := newOrigin(t)
	body := strings.Repeat("w", 1024)
	targets := []struct{ name, path string }{
		{"bare", "/bare/item"},
		{"redis", "/redis/item"},
		{"redis-get", "/rget/item"},
		{"memory", "/mem/item"},
	}
	for _, tg := range targets {
		o.Handle(tg.path, answer("max-age=3600", body))
	}
	d := Dynamic{
		Routes: []Route{
			{Name: "bare", Rule: "PathPrefix(`/bare`)"},
			{Name: "redis", Rule: "PathPrefix(`/redis`)", Middleware: "weir-redis"},
			{Name: "rget", Rule: "PathPrefix(`/rget`)", Middleware: "weir-rget"},
			{Name: "mem", Rule: "PathPrefix(`/mem`)", Middleware: "weir-mem"},
		},
		Middlewares: map[string]map[string]interface{}{
			"weir-redis": redisConfig(rd.URL(0)),
			"weir-rget":  noNearCache(redisConfig(rd.URL(0))),
			"weir-mem":   nil,
		},
	}
	tr := startTraefikWith(t, Options{LogLevel: "ERROR"}, o.URL, d)

	for _, path := range []string{"/redis/item", "/rget/item", "/mem/item"} {
		get(t, tr, path)
		wantHit(t, "GET "+path+" before the runs", get(t, tr, path))
	}
	wrk, wrkErr := exec.LookPath("wrk")
	pid := tr.Pid()
	// run loads path for d and returns the rate and Traefik's CPU time per answer, which
	// other work on the machine disturbs less than the rate.
	run := func(path string, d time.Duration) (float64, time.Duration) {
		t.Helper()
		cpuBefore, cpuErr := ProcessCPU(pid)
		var rate float64
		var n int64
		if wrkErr != nil {
			res := Load{URL: tr.URL(path), Connections: conns, Duration: d}.Run(context.Background())
			if res.Failures > 0 {
				t.Fatalf("%s: %d failures, the first: %s", path, res.Failures, res.FirstFailure)
			}
			rate, n = res.PerSecond(), res.Requests
		} else {
			var err error
			if rate, n, err = runWrk(wrk, tr.URL(path), conns, d); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
		}
		cpuAfter, err := ProcessCPU(pid)
		if cpuErr != nil || err != nil || n == 0 {
			return rate, 0
		}
		return rate, (cpuAfter - cpuBefore) / time.Duration(n)
	}
	loadgen := "wrk -t2"
	if wrkErr != nil {
		loadgen = "built-in Go generator (no wrk)"
	}
	t.Logf("load: %s, %d connections, %v per run, %d rounds, 1 KiB answers", loadgen, conns, duration, rounds)
	for _, tg := range targets {
		run(tg.path, time.Second)
	}
	fetchedBefore := o.Count("/redis/item") + o.Count("/rget/item")
	rates := make(map[string][]float64)
	cpus := make(map[string][]float64)
	for r := 1; r <= rounds; r++ {
		line := fmt.Sprintf("round %d:", r)
		for _, tg := range targets {
			rate, cpu := run(tg.path, duration)
			rates[tg.name] = append(rates[tg.name], rate)
			cpus[tg.name] = append(cpus[tg.name], float64(cpu)/float64(time.Microsecond))
			line += fmt.Sprintf("  %s %.0f req/s (%.0fµs CPU each)", tg.name, rate, float64(cpu)/float64(time.Microsecond))
		}
		t.Log(line)
	}
	bare := Median(rates["bare"])
	for _, tg := range targets {
		m := Median(rates[tg.name])
		t.Logf("median %-9s %8.0f req/s  %.2fx bare; Traefik CPU %4.0fµs per answer", tg.name, m, m/bare, Median(cpus[tg.name]))
	}
	if n := o.Count("/redis/item") + o.Count("/rget/item") - fetchedBefore; n != 0 {
		t.Logf("warning: %d origin fetches for /redis/item and /rget/item during the measured runs: store calls over "+
			"timeouts.store turned hits into misses, so the redis figures are not hits alone", n)
	}
	dbsize, _ := rd.Do("DBSIZE")
	t.Logf("origin requests: bare %d, redis %d, redis-get %d, memory %d; redis DBSIZE %s",
		o.Count("/bare/item"), o.Count("/redis/item"), o.Count("/rget/item"), o.Count("/mem/item"), dbsize)
}

var (
	wrkRateRE     = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	wrkRequestsRE = regexp.MustCompile(`([0-9]+) requests in`)
)

// runWrk runs wrk (2 threads) and returns its requests per second and answer count,
// refusing runs with socket errors or other statuses than 2xx and 3xx.
func runWrk(bin, url string, conns int, d time.Duration) (float64, int64, error) {
	secs := int(d.Round(time.Second) / time.Second)
	if secs < 1 {
		secs = 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "-t", "2", "-c", strconv.Itoa(conns), "-d", fmt.Sprintf("%ds", secs), url)
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		return 0, 0, fmt.Errorf("wrk: %w\n%s", err, out.String())
	}
	text := out.String()
	if strings.Contains(text, "Non-2xx") || strings.Contains(text, "Socket errors") {
		return 0, 0, fmt.Errorf("wrk reported errors\n%s", text)
	}
	m := wrkRateRE.FindStringSubmatch(text)
	c := wrkRequestsRE.FindStringSubmatch(text)
	if m == nil || c == nil {
		return 0, 0, fmt.Errorf("wrk: no Requests/sec or request count in its output\n%s", text)
	}
	rate, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, 0, err
	}
	n, err := strconv.ParseInt(c[1], 10, 64)
	return rate, n, err
}

// TestRedisReloadsDoNotLeak: reloads that move a middleware between two key prefixes on one
// Redis build a new shared store each time and close the old one, whose tracking connection
// and its goroutines (the near cache's) must end with it.
func TestRedisReloadsDoNotLeak(t *testing.T) {
	requireE2ERedis(t)
	const reloads = 60
	rd := startRedis(t, 0)
	o := newOrigin(t)
	body := body1K("redis-leak")
	o.Handle("/rleak/a", answer("max-age=3600", body))
	routes := [2]Dynamic{}
	for i, prefix := range []string{"leak-a:", "leak-b:"} {
		conf := redisConfig(rd.URL(0))
		conf["store"].(map[string]interface{})["keyPrefix"] = prefix
		routes[i] = cachedRoute("rleak", "/rleak", "weir-rleak", conf)
	}
	tr := startTraefik(t, o, routes[0])
	wantReply(t, "GET before the reloads", get(t, tr, "/rleak/a"), http.StatusOK, body)
	apply(t, tr, routes[1])
	apply(t, tr, routes[0])
	before := settledGoroutines(t, tr)

	for i := 1; i <= reloads; i++ {
		apply(t, tr, routes[i%2])
		if i%20 == 0 {
			wantReply(t, fmt.Sprintf("GET after %d reloads", i), get(t, tr, "/rleak/a"), http.StatusOK, body)
		}
	}
	var after int
	if !waitFor(15*time.Second, func() bool {
		after = goroutines(t, tr)
		return after <= before+goroutineSlack
	}) {
		t.Errorf("goroutines: %d before %d reloads between two stores, %d after (slack %d): closed stores leak", before, reloads, after, goroutineSlack)
	}
	// The store in use still shares and serves from its near cache.
	var last reply
	if !waitFor(5*time.Second, func() bool {
		last = get(t, tr, "/rleak/a")
		return last.cacheStatus().hit()
	}) {
		t.Errorf("GET after the reloads: Cache-Status = %q, want a hit", last.cacheStatus())
	}
	clients, _ := rd.Do("CLIENT", "LIST")
	t.Logf("goroutines: %d before %d reloads, %d after; redis clients at the end: %d", before, reloads, after, strings.Count(clients, "\n")+1)
}

// slowKeysOrigin is an origin with three 1 KiB answers under /name/k0 to k2, each taking
// faultOriginDelay and stored for cc, and /name/recover; keys are their paths, bodies their
// answers by path.
func slowKeysOrigin(t *testing.T, name, cc string) (o *Origin, keys []string, bodies map[string]string) {
	t.Helper()
	o = newOrigin(t)
	bodies = make(map[string]string)
	for i := 0; i < 3; i++ {
		key := fmt.Sprintf("/%s/k%d", name, i)
		body := body1K(key)
		keys = append(keys, key)
		bodies[key] = body
		o.Handle(key, func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(faultOriginDelay)
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("Cache-Control", cc)
			io.WriteString(w, body)
		})
	}
	o.Handle("/"+name+"/recover", answer("max-age=60", "recovered"))
	return o, keys, bodies
}
