package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirproxy/weir/internal/await"
)

// The metrics of coalescing's timeouts, of the breaker's refusals by scope and of the
// origin's answer time by breaker state (docs/operations.md, "Metrics"), through a real
// Traefik: each count is checked against what reached the origin.

// metricCount reads one sample of the metrics under adminPath as a whole number: -1 when
// the metrics lack it. A value that is no whole number fails the test.
func metricCount(t *testing.T, tr *Traefik, adminPath, sample string) int64 {
	t.Helper()
	v := adminMetric(t, tr, adminPath, sample)
	if v == "" {
		return -1
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f != float64(int64(f)) {
		t.Fatalf("metrics under %s: %s = %q, want a whole number", adminPath, sample, v)
	}
	return int64(f)
}

// wantMetric fails unless the sample under adminPath is n.
func wantMetric(t *testing.T, tr *Traefik, adminPath, sample string, n int64) {
	t.Helper()
	if got := metricCount(t, tr, adminPath, sample); got != n {
		if got < 0 {
			t.Errorf("metrics: %s absent, want %d", sample, n)
			return
		}
		t.Errorf("metrics: %s = %d, want %d", sample, got, n)
	}
}

// wantNoneCounted fails unless the sample under adminPath is absent or 0.
func wantNoneCounted(t *testing.T, tr *Traefik, adminPath, sample string) {
	t.Helper()
	if got := metricCount(t, tr, adminPath, sample); got > 0 {
		t.Errorf("metrics: %s = %d, want no series or 0", sample, got)
	}
}

// TestCoalesceTimeoutMetric: with coalesce.followerMaxWait 300ms and an origin taking 1.5s,
// followers of a fetch give up on it and are counted in weir_coalesce_timeouts_total by what
// they did then. On a cold URL each fetches on its own (fallback="pass"): the origin sees the
// leader's fetch and one per follower. On a URL stored with max-age=1 and stale-if-error=60,
// once expired, each is answered stale with detail coalesce-timeout (fallback="stale"): the
// origin sees the storing fetch and the leader's refetch, nothing of the followers. No
// stale-while-revalidate anywhere: it would answer at once, without a flight to follow.
func TestCoalesceTimeoutMetric(t *testing.T) {
	const (
		prefix    = "/ct"
		adminPath = prefix + "/_weir"
		followers = 3
		// slow is the origin's time to answer, well beyond followerMaxWait.
		slow = 1500 * time.Millisecond
	)
	o := newOrigin(t)
	o.Handle(prefix+"/cold", delayed(slow, answer("max-age=60", "cold")))
	var staleFetches int64
	o.Handle(prefix+"/stale", func(w http.ResponseWriter, r *http.Request) {
		if atomic.AddInt64(&staleFetches, 1) == 1 {
			w.Header().Set("Cache-Control", "max-age=1, stale-if-error=60")
			io.WriteString(w, "v1")
			return
		}
		time.Sleep(slow)
		w.Header().Set("Cache-Control", "max-age=60")
		io.WriteString(w, "v2")
	})
	conf := specConfig(t)
	conf["coalesce"] = map[string]interface{}{"leaderMaxAge": "10s", "followerMaxWait": "300ms", "hitForMissTTL": "30s"}
	conf["admin"] = map[string]interface{}{"path": adminPath, "token": adminTestToken}
	tr := startTraefik(t, o, cachedRoute("ct", prefix, "weir-ct", conf))

	// burst sends a leader for path, waits until its fetch has reached the origin (the
	// origin's count for path becomes want), then sends the followers together, and returns
	// the leader's reply and the followers'.
	burst := func(t *testing.T, path string, want int64) (reply, []reply) {
		t.Helper()
		leader := make(chan reply, 1)
		go func() {
			r, err := fetch(context.Background(), tr.Client(), requestTimeout, http.MethodGet, tr.URL(path), nil)
			if err != nil {
				t.Errorf("leader: %v", err)
			}
			leader <- r
		}()
		if !waitFor(5*time.Second, func() bool { return o.Count(path) >= want }) {
			t.Fatalf("the leader's fetch did not reach the origin within 5s (origin requests for %s: %d, want %d)", path, o.Count(path), want)
		}
		replies := make([]reply, followers)
		await.Goroutines(t, followers, 2*requestTimeout, "the followers", func(i int) {
			r, err := fetch(context.Background(), tr.Client(), requestTimeout, http.MethodGet, tr.URL(path), nil)
			if err != nil {
				t.Errorf("follower %d: %v", i+1, err)
			}
			replies[i] = r
		})
		var l reply
		select {
		case l = <-leader:
		case <-time.After(2 * requestTimeout):
			t.Fatalf("the leader hangs")
		}
		t.Logf("leader: %d in %v, Cache-Status %q", l.status, l.took.Round(time.Millisecond), l.cacheStatus())
		for i, r := range replies {
			t.Logf("follower %d: %d in %v, Cache-Status %q", i+1, r.status, r.took.Round(time.Millisecond), r.cacheStatus())
		}
		return l, replies
	}

	t.Run("cold URL: the followers fetch on their own", func(t *testing.T) {
		path := prefix + "/cold"
		l, replies := burst(t, path, 1)
		wantReply(t, "leader", l, http.StatusOK, "cold")
		wantMiss(t, "leader", l, "uri-miss", true)
		for i, r := range replies {
			what := fmt.Sprintf("follower %d", i+1)
			wantReply(t, what, r, http.StatusOK, "cold")
			if cs := r.cacheStatus(); cs.hit() || cs.fwd() != "uri-miss" || cs.params["detail"] != "coalesce-timeout" {
				t.Errorf("%s: Cache-Status %q, want \"Weir; fwd=uri-miss; detail=coalesce-timeout\": a fetch of its own", what, cs)
			}
		}
		// The leader's fetch, and one of each follower's own.
		wantCount(t, o, path, 1+followers)
		wantMetric(t, tr, adminPath, `weir_coalesce_timeouts_total{fallback="pass"}`, followers)
		wantMetric(t, tr, adminPath, `weir_coalesce_timeouts_total{fallback="stale"}`, 0)
		wantMetric(t, tr, adminPath, `weir_coalesced_total`, 0)
	})

	t.Run("stale URL: the followers are answered stale", func(t *testing.T) {
		path := prefix + "/stale"
		first := get(t, tr, path)
		wantReply(t, "first GET", first, http.StatusOK, "v1")
		wantMiss(t, "first GET", first, "uri-miss", true)
		time.Sleep(staleAfter)

		l, replies := burst(t, path, 2)
		wantReply(t, "leader", l, http.StatusOK, "v2")
		wantMiss(t, "leader", l, "stale", true)
		for i, r := range replies {
			what := fmt.Sprintf("follower %d", i+1)
			wantReply(t, what, r, http.StatusOK, "v1")
			cs := r.cacheStatus()
			if ttl, ok := cs.ttl(); !cs.hit() || !ok || ttl >= 0 || cs.params["detail"] != "coalesce-timeout" {
				t.Errorf("%s: Cache-Status %q, want \"Weir; hit; ttl=-N; detail=coalesce-timeout\"", what, cs)
			}
		}
		// The storing fetch and the leader's refetch: no follower reached the origin.
		wantCount(t, o, path, 2)
		wantMetric(t, tr, adminPath, `weir_coalesce_timeouts_total{fallback="stale"}`, followers)
		wantMetric(t, tr, adminPath, `weir_stale_total{reason="coalesce-timeout"}`, followers)
		// Unchanged from the cold URL.
		wantMetric(t, tr, adminPath, `weir_coalesce_timeouts_total{fallback="pass"}`, followers)
		wantMetric(t, tr, adminPath, `weir_coalesced_total`, 0)
	})
}

// TestBreakerMetricsByScopeAndState: two hosts behind one middleware (breaker.scope host,
// minRequests 4, openFor 3s). The failing host's origin answers 503 until its breaker opens
// after 4 fetches; the next 5 requests are refused without reaching it, and
// weir_breaker_short_circuited_total counts them under that host alone. Once openFor has
// passed and the origin has healed, the probe closes the breaker:
// weir_origin_duration_seconds counts it under breaker_state="half-open" and every other
// fetch, of either host, under "closed".
func TestBreakerMetricsByScopeAndState(t *testing.T) {
	const (
		prefix    = "/bm"
		adminPath = prefix + "/_weir"
		downHost  = "down.metrics.test"
		upHost    = "up.metrics.test"
		// minRequests failures open the breaker (failureRatio 0.5, every one failing).
		minRequests = 4
		openFor     = 3 * time.Second
		// refused is how many requests the open breaker refuses.
		refused = 5
	)
	o := newOrigin(t)
	var healed int32
	o.Handle(prefix+"/down", func(w http.ResponseWriter, r *http.Request) {
		if atomic.LoadInt32(&healed) == 0 {
			// No Retry-After: a failure the breaker counts, not one that opens it at once.
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "failing")
			return
		}
		w.Header().Set("Cache-Control", "max-age=60")
		io.WriteString(w, "down ok")
	})
	o.Handle(prefix+"/up", answer("max-age=60", "up ok"))
	conf := specConfig(t)
	conf["breaker"] = map[string]interface{}{
		"scope": "host", "window": "30s", "minRequests": strconv.Itoa(minRequests), "failureRatio": "0.5",
		"openFor": openFor.String(), "maxOpenFor": "60s",
	}
	conf["admin"] = map[string]interface{}{"path": adminPath, "token": adminTestToken}
	tr := startTraefik(t, o, cachedRoute("bm", prefix, "weir-bm", conf))

	// Every request has a query of its own: each is a fetch of the cache, and none is
	// answered by a negative entry of an earlier 503.
	n := 0
	request := func(host, path string) reply {
		t.Helper()
		n++
		return send(t, tr, http.MethodGet, fmt.Sprintf("%s?n=%d", path, n), map[string]string{"Host": host})
	}
	downPath, upPath := prefix+"/down", prefix+"/up"
	// closedFetches counts the fetches the closed breakers let through.
	closedFetches := int64(0)

	for i := 0; i < 3; i++ {
		r := request(upHost, upPath)
		wantReply(t, fmt.Sprintf("%s request %d", upHost, i+1), r, http.StatusOK, "up ok")
		closedFetches++
	}
	for i := 0; i < minRequests; i++ {
		r := request(downHost, downPath)
		if r.status != http.StatusServiceUnavailable || r.cacheStatus().params["detail"] == "circuit-open" {
			t.Fatalf("%s failing request %d: %d, Cache-Status %q; want the origin's 503", downHost, i+1, r.status, r.cacheStatus())
		}
		closedFetches++
	}
	wantCount(t, o, downPath, minRequests)
	wantMetric(t, tr, adminPath, `weir_breaker_state{scope="`+downHost+`"}`, 1)

	openedAt := time.Now()
	for i := 0; i < refused; i++ {
		r := request(downHost, downPath)
		if !circuitOpenAt(r, downHost) {
			t.Errorf("%s request %d with the breaker open: %d, Cache-Status %q, Retry-After %q; want 503 circuit-open naming %s",
				downHost, i+1, r.status, r.cacheStatus(), r.header.Get("Retry-After"), downHost)
		}
	}
	// The other host's breaker stays closed.
	for i := 0; i < 2; i++ {
		r := request(upHost, upPath)
		wantReply(t, fmt.Sprintf("%s request while %s is open", upHost, downHost), r, http.StatusOK, "up ok")
		closedFetches++
	}
	if took := time.Since(openedAt); took > openFor*8/10 {
		t.Fatalf("the requests while open took %v, longer than the shortest open period (%v): the counts below would not hold", took, openFor*8/10)
	}
	// Nothing reached the failing host while its breaker was open.
	wantCount(t, o, downPath, minRequests)
	wantCount(t, o, upPath, closedFetches-minRequests)
	wantMetric(t, tr, adminPath, `weir_breaker_short_circuited_total{scope="`+downHost+`"}`, refused)
	wantNoneCounted(t, tr, adminPath, `weir_breaker_short_circuited_total{scope="`+upHost+`"}`)
	wantMetric(t, tr, adminPath, `weir_shed_total{reason="circuit-open"}`, refused)
	wantMetric(t, tr, adminPath, `weir_origin_duration_seconds_count{breaker_state="half-open"}`, 0)
	wantMetric(t, tr, adminPath, `weir_origin_duration_seconds_count{breaker_state="closed"}`, closedFetches)

	// The open period is openFor, up to 20% longer: wait it out from the trip (before
	// openedAt), with a margin, then heal the origin.
	time.Sleep(time.Until(openedAt.Add(openFor*12/10 + 500*time.Millisecond)))
	atomic.StoreInt32(&healed, 1)
	probe := request(downHost, downPath)
	wantReply(t, "the probe", probe, http.StatusOK, "down ok")
	wantMiss(t, "the probe", probe, "uri-miss", true)
	wantMetric(t, tr, adminPath, `weir_breaker_state{scope="`+downHost+`"}`, 0)
	for i := 0; i < 2; i++ {
		r := request(downHost, downPath)
		wantReply(t, fmt.Sprintf("%s request %d after the probe", downHost, i+1), r, http.StatusOK, "down ok")
		closedFetches++
	}
	// The failing fetches, the probe and the two after it.
	wantCount(t, o, downPath, minRequests+3)
	wantMetric(t, tr, adminPath, `weir_origin_duration_seconds_count{breaker_state="half-open"}`, 1)
	wantMetric(t, tr, adminPath, `weir_origin_duration_seconds_count{breaker_state="closed"}`, closedFetches)
	wantMetric(t, tr, adminPath, `weir_breaker_short_circuited_total{scope="`+downHost+`"}`, refused)
	wantNoneCounted(t, tr, adminPath, `weir_breaker_short_circuited_total{scope="`+upHost+`"}`)
	wantMetric(t, tr, adminPath, `weir_breaker_trips_total{scope="`+downHost+`"}`, 1)
	t.Logf("origin requests: %s %d, %s %d; short-circuited %s %d; origin answers timed closed %d, half-open %d",
		downHost, o.Count(downPath), upHost, o.Count(upPath),
		downHost, metricCount(t, tr, adminPath, `weir_breaker_short_circuited_total{scope="`+downHost+`"}`),
		metricCount(t, tr, adminPath, `weir_origin_duration_seconds_count{breaker_state="closed"}`),
		metricCount(t, tr, adminPath, `weir_origin_duration_seconds_count{breaker_state="half-open"}`))
}
