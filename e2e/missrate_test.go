package e2e

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The miss-rate detector (FR-MR-1, FR-MR-2) through a real Traefik: a cache-busting flood is
// reported once, in one miss_rate_anomaly line on Traefik's standard error (the plugin logs
// with Go's log package to os.Stderr, which the harness captures in Traefik.OutPath).

const (
	// mrFloodRequests distinct queries on one path, sent by mrClients at mrRate a second.
	mrFloodRequests = 1500
	mrClients       = 16
	mrRate          = 300
	mrMinMisses     = 500
	mrWindow        = 10 * time.Second
)

// mrReply is one reply of a flood.
type mrReply struct {
	sent       time.Duration // since the load began
	path       string
	status     int
	cs         cacheStatus
	retryAfter string
	err        error
}

// mrLoad sends GETs for urls from mrClients concurrent clients, request i no earlier than
// i/rate seconds after the start, and returns the replies by index and the time it took.
func mrLoad(tr *Traefik, urls []string, rate int) ([]mrReply, time.Duration) {
	return mrLoadPaced(tr, urls, func(i int) time.Duration { return time.Duration(i) * time.Second / time.Duration(rate) })
}

// mrLoadPaced is mrLoad with request i sent no earlier than due(i) after the start.
func mrLoadPaced(tr *Traefik, urls []string, due func(i int) time.Duration) ([]mrReply, time.Duration) {
	replies := make([]mrReply, len(urls))
	begin := time.Now()
	eachIndex(context.Background(), mrClients, len(urls), func(i int) {
		if wait := time.Until(begin.Add(due(i))); wait > 0 {
			time.Sleep(wait)
		}
		sent := time.Since(begin)
		replies[i] = mrSend(tr, urls[i])
		replies[i].sent = sent
	})
	return replies, time.Since(begin)
}

func mrSend(tr *Traefik, path string) mrReply {
	r, err := fetch(context.Background(), tr.Client(), requestTimeout, http.MethodGet, tr.URL(path), nil)
	return mrReply{path: path, status: r.status, cs: r.cacheStatus(), retryAfter: r.header.Get("Retry-After"), err: err}
}

// mrAnomalies returns the miss_rate_anomaly lines the middleware mw (as named in the dynamic
// configuration, with or without its @provider) wrote to Traefik's standard error.
func mrAnomalies(t *testing.T, tr *Traefik, mw string) []string {
	t.Helper()
	var out []string
	for _, l := range outputWith(t, tr, "miss_rate_anomaly") {
		for _, f := range strings.Fields(l) {
			name, ok := strings.CutPrefix(f, "middleware=")
			if ok && (name == mw || strings.HasPrefix(name, mw+"@")) {
				out = append(out, l)
				break
			}
		}
	}
	return out
}

// mrWantOneAnomaly waits for the middleware's anomaly line and checks there is exactly one,
// naming the partition, cb as the varying parameter, and whether it throttles.
func mrWantOneAnomaly(t *testing.T, tr *Traefik, mw, path string, throttled bool) {
	t.Helper()
	waitFor(3*time.Second, func() bool { return len(mrAnomalies(t, tr, mw)) > 0 })
	lines := mrAnomalies(t, tr, mw)
	if len(lines) != 1 {
		t.Errorf("%s: %d miss_rate_anomaly lines, want exactly 1: %q", mw, len(lines), lines)
		return
	}
	t.Logf("%s: %s", mw, lines[0])
	// The partition holds the host's canonical key, without the port the client sent
	// (core/hostkey).
	host, _, err := net.SplitHostPort(strings.TrimPrefix(tr.WebURL, "http://"))
	if err != nil {
		t.Fatalf("Traefik's address %q: %v", tr.WebURL, err)
	}
	partition := "partition=http://" + host + path + " "
	for _, want := range []string{partition, "varying=cb ", "throttled=" + strconv.FormatBool(throttled)} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("%s: anomaly line lacks %q", mw, want)
		}
	}
}

// TestMissRateFlood: 1,500 requests with distinct cb queries on one path, from 16 clients
// in about 5s, with missRate.minMisses 500:
//   - report only (weir-mr): exactly one miss_rate_anomaly line naming the path and cb; every
//     request is still fetched and answered, past the cache once the path is flagged
//     (missRate.bypass), and a URL asked again is stored;
//   - with throttle (weir-mt), the same flood followed by 12s at 100 distinct queries a
//     second: one line too; the origin sees the misses before the anomaly and then one fetch
//     per window for that path, a window apart; the other requests get 503 with Retry-After
//     and detail=miss-rate; another path of the same middleware, requested throughout, is
//     served normally and reaches the origin once per key;
//   - a normal mixed load (weir-mx: 80 paths, a few queries each, mostly hits) raises none.
func TestMissRateFlood(t *testing.T) {
	o := newOrigin(t)
	o.Handle("/mr/flood", answer("max-age=60", "flood"))
	o.Handle("/mt/flood", answer("max-age=60", "flood"))
	o.Handle("/mt/other", answer("max-age=60", "other"))
	const mixedPaths = 80
	for i := 0; i < mixedPaths; i++ {
		o.Handle(fmt.Sprintf("/mx/p%d", i), answer("max-age=60", "mixed"))
	}
	missRate := func(throttle bool) map[string]interface{} {
		conf := specConfig(t)
		conf["missRate"] = map[string]interface{}{
			"window": mrWindow.String(), "minMisses": strconv.Itoa(mrMinMisses), "ratio": "0.9",
			"throttle": strconv.FormatBool(throttle),
		}
		return conf
	}
	d := Dynamic{
		Routes: []Route{
			{Name: "mr", Rule: "PathPrefix(`/mr`)", Middleware: "weir-mr"},
			{Name: "mt", Rule: "PathPrefix(`/mt`)", Middleware: "weir-mt"},
			{Name: "mx", Rule: "PathPrefix(`/mx`)", Middleware: "weir-mx"},
		},
		Middlewares: map[string]map[string]interface{}{
			"weir-mr": missRate(false),
			"weir-mt": missRate(true),
			"weir-mx": missRate(true),
		},
	}
	tr := startTraefik(t, o, d)
	flood := func(path string) []string {
		urls := make([]string, mrFloodRequests)
		for i := range urls {
			urls[i] = path + "?cb=" + strconv.Itoa(i)
		}
		return urls
	}

	t.Run("report only", func(t *testing.T) {
		replies, took := mrLoad(tr, flood("/mr/flood"), mrRate)
		for i, r := range replies {
			if r.err != nil || r.status != http.StatusOK {
				t.Fatalf("request %d: status %d, Cache-Status %q, err %v; want 200", i, r.status, r.cs, r.err)
			}
		}
		t.Logf("%d requests in %v, origin requests %d", len(replies), took.Round(time.Millisecond), o.Count("/mr/flood"))
		wantCount(t, o, "/mr/flood", mrFloodRequests)
		mrWantOneAnomaly(t, tr, "weir-mr", "/mr/flood", false)
		// Once flagged, the flood's URLs went past the cache (missRate.bypass, FR-MR-3); the
		// last one, asked again, is stored, and then a hit.
		last := replies[len(replies)-1]
		if got := last.cs.params["fwd"] + " " + last.cs.params["detail"]; got != "bypass flood" {
			t.Errorf("last flood request: Cache-Status %q, want fwd=bypass; detail=flood", last.cs.raw)
		}
		if cs := get(t, tr, last.path).cacheStatus(); cs.params["fwd"] != "uri-miss" || !cs.has("stored") {
			t.Errorf("%s asked again: Cache-Status %q, want fwd=uri-miss; stored", last.path, cs.raw)
		}
		if cs := get(t, tr, last.path).cacheStatus(); !cs.has("hit") {
			t.Errorf("%s asked a third time: Cache-Status %q, want a hit", last.path, cs.raw)
		}
	})

	t.Run("throttle", func(t *testing.T) {
		// Another path of the same middleware, asked for throughout the flood: five keys,
		// each fetched once and then served from the cache.
		stop := make(chan struct{})
		otherDone := make(chan []mrReply, 1)
		go func() {
			var rs []mrReply
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for i := 0; ; i++ {
				select {
				case <-stop:
					otherDone <- rs
					return
				case <-tick.C:
				}
				rs = append(rs, mrSend(tr, "/mt/other?page="+strconv.Itoa(i%5)))
			}
		}()
		// The flood of the first run, then 100 a second for 12s more: enough misses to keep
		// the path flagged into a second window, in which it gets one more fetch.
		urls := flood("/mt/flood")
		for i := 0; i < 1200; i++ {
			urls = append(urls, "/mt/flood?cb=late"+strconv.Itoa(i))
		}
		first := time.Duration(mrFloodRequests) * time.Second / mrRate
		replies, took := mrLoadPaced(tr, urls, func(i int) time.Duration {
			if i < mrFloodRequests {
				return time.Duration(i) * time.Second / mrRate
			}
			return first + time.Duration(i-mrFloodRequests)*10*time.Millisecond
		})
		close(stop)
		var others []mrReply
		select {
		case others = <-otherDone:
		case <-time.After(30 * time.Second):
			t.Fatalf("the other path's client hangs")
		}

		fetched := o.Count("/mt/flood")
		ok, refused := 0, 0
		for i, r := range replies {
			switch {
			case r.err != nil:
				t.Fatalf("request %d: %v", i, r.err)
			case r.status == http.StatusOK:
				ok++
			case r.status == http.StatusServiceUnavailable && r.cs.params["detail"] == "miss-rate":
				refused++
				ra, err := strconv.Atoi(r.retryAfter)
				if err != nil || ra < 1 || time.Duration(ra)*time.Second > mrWindow {
					t.Errorf("request %d: Retry-After %q, want 1 to %v seconds", i, r.retryAfter, mrWindow.Seconds())
				}
			default:
				t.Errorf("request %d: status %d, Cache-Status %q, want 200 or 503 detail=miss-rate", i, r.status, r.cs)
			}
		}
		windows := int64(math.Ceil(took.Seconds() / mrWindow.Seconds()))
		t.Logf("%d requests in %v: %d answered 200, %d refused with detail=miss-rate; origin requests %d (at most %d + %d)",
			len(replies), took.Round(time.Millisecond), ok, refused, fetched, mrMinMisses, windows)
		// Before the anomaly every miss is fetched; the miss that raises it is the window's one
		// fetch. Misses counted just before the anomaly but asking for their fetch after it are
		// refused: up to one per client less.
		if fetched > mrMinMisses+windows || fetched < mrMinMisses-mrClients {
			t.Errorf("origin requests for the flooded path = %d, want %d before the anomaly and at most one per window after (at most %d)",
				fetched, mrMinMisses, mrMinMisses+windows)
		}
		if int64(ok) != fetched {
			t.Errorf("%d answers 200, %d origin requests: every answer that is not refused should come from one fetch", ok, fetched)
		}
		if refused < len(urls)-mrMinMisses-int(windows) {
			t.Errorf("%d refused, want at least %d", refused, len(urls)-mrMinMisses-int(windows))
		}
		// After the first refusal, a fetch only when a new window begins, a window apart.
		firstRefusal := time.Duration(-1)
		for _, r := range replies {
			if r.status == http.StatusServiceUnavailable && (firstRefusal < 0 || r.sent < firstRefusal) {
				firstRefusal = r.sent
			}
		}
		var later []time.Duration
		for _, r := range replies {
			if r.status == http.StatusOK && r.sent > firstRefusal+200*time.Millisecond {
				later = append(later, r.sent)
			}
		}
		sort.Slice(later, func(i, j int) bool { return later[i] < later[j] })
		t.Logf("first refusal at %v; fetched after it at %v", firstRefusal.Round(time.Millisecond), later)
		if int64(len(later)) > windows {
			t.Errorf("%d fetches after the anomaly in %v, want at most one per %v window", len(later), took.Round(time.Millisecond), mrWindow)
		}
		for i, at := range later {
			if gap := at - firstRefusal; gap < time.Duration(i+1)*mrWindow-time.Second {
				t.Errorf("fetch %d after the anomaly came %v after it, want a window (%v) apart", i+1, gap.Round(time.Millisecond), mrWindow)
			}
		}
		mrWantOneAnomaly(t, tr, "weir-mt", "/mt/flood", true)

		for i, r := range others {
			if r.err != nil || r.status != http.StatusOK {
				t.Errorf("other path, request %d: status %d, Cache-Status %q, err %v; want 200", i, r.status, r.cs, r.err)
			}
		}
		t.Logf("other path: %d requests during the flood, origin requests %d", len(others), o.Count("/mt/other"))
		if len(others) < 20 {
			t.Errorf("other path: only %d requests during the flood", len(others))
		}
		wantCount(t, o, "/mt/other", 5)
	})

	t.Run("normal mixed load", func(t *testing.T) {
		const requests = 2000
		rnd := rand.New(rand.NewSource(1))
		urls := make([]string, requests)
		distinct := map[string]bool{}
		for i := range urls {
			urls[i] = fmt.Sprintf("/mx/p%d?v=%d", rnd.Intn(mixedPaths), rnd.Intn(4))
			distinct[urls[i]] = true
		}
		replies, took := mrLoad(tr, urls, 400)
		hits := 0
		for i, r := range replies {
			if r.err != nil || r.status != http.StatusOK {
				t.Fatalf("request %d (%s): status %d, Cache-Status %q, err %v; want 200", i, r.path, r.status, r.cs, r.err)
			}
			if r.cs.hit() {
				hits++
			}
		}
		var fetched int64
		for i := 0; i < mixedPaths; i++ {
			fetched += o.Count(fmt.Sprintf("/mx/p%d", i))
		}
		t.Logf("%d requests over %d keys in %v: %d hits, %d origin requests", requests, len(distinct), took.Round(time.Millisecond), hits, fetched)
		if fetched != int64(len(distinct)) {
			t.Errorf("origin requests = %d, want one per key (%d)", fetched, len(distinct))
		}
		if hits < requests*8/10 {
			t.Errorf("%d hits of %d, want mostly hits", hits, requests)
		}
		time.Sleep(500 * time.Millisecond)
		if lines := mrAnomalies(t, tr, "weir-mx"); len(lines) != 0 {
			t.Errorf("a normal mixed load raised %d anomalies, want none: %q", len(lines), lines)
		}
	})
}
