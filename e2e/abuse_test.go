package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Flood parameters: enough distinct keys to pass an 8 MiB budget fifteen times over, in
// bounded time on a shared two-core machine.
const (
	floodKeys     = 30000
	floodClients  = 16
	floodBodySize = 4 << 10
	floodMaxTime  = 60 * time.Second
	floodCacheMiB = 8
	// floodSettle is the pause after a flood before RSS is read again, after a forced GC.
	floodSettle = 3 * time.Second
)

// TestFloodKeepsMemoryBounded: a flood of distinct cacheable keys (a cache-busting attack,
// or just a crawler) must not grow Traefik's memory past Weir's byte budget plus overheads.
// The same flood goes first through a router without Weir, so Traefik's own growth under
// that many requests (connection buffers, the proxy's pools, the Go heap's high-water mark)
// is measured apart from what Weir adds.
//
// The bound on Weir's share is 4 × maxSize + 64 MiB, over the growth the bare run may cause. An entry costs more than its body
// (headers, the key, map and list nodes, the interpreter's per-value overhead), Go's heap
// runs up to twice the live heap before a collection (GOGC=100), and freed pages return to
// the OS lazily, so RSS may hold twice the budget's real cost: 4 × for the entries. The 64
// MiB covers what is not the store: the flight table, the limiter's and the miss-rate
// detector's per-key state while 16 misses are in flight, and the interpreter's
// allocations per request, which Traefik's bare run does not pay. An unbounded store would
// hold all 30,000 × 4 KiB = 117 MiB of bodies, and with their fields and the heap's slack
// (RSS up to twice the live heap) break the bound.
func TestFloodKeepsMemoryBounded(t *testing.T) {
	body := strings.Repeat("f", floodBodySize)
	var originHits int64
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		atomic.AddInt64(&originHits, 1)
		w.Header().Set("Cache-Control", "max-age=600")
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, body)
	}))
	t.Cleanup(origin.Close)
	d := Dynamic{
		Routes: []Route{
			{Name: "bare", Rule: "PathPrefix(`/bare`)"},
			{Name: "weir", Rule: "PathPrefix(`/weir`)", Middleware: "weir-flood"},
		},
		Middlewares: map[string]map[string]interface{}{
			"weir-flood": {"cache": map[string]interface{}{"maxSize": fmt.Sprintf("%dMiB", floodCacheMiB)}},
		},
	}
	tr := startTraefikWith(t, Options{LogLevel: "ERROR"}, origin.URL, d)
	pid := tr.cmd.Process.Pid

	// Warm both routes so that the first reading already counts the interpreter's start-up
	// and the client connections.
	wantHit(t, "warm-up", func() reply { get(t, tr, "/weir/warm"); return get(t, tr, "/weir/warm") }())
	get(t, tr, "/bare/warm")
	rss0 := settledRSS(t, tr, pid)

	bare := flood(t, tr, "/bare/flood/")
	rss1 := settledRSS(t, tr, pid)
	weir := flood(t, tr, "/weir/flood/")
	rss2 := readRSS(t, pid)
	rss3 := settledRSS(t, tr, pid)

	t.Logf("bare flood: %s", bare)
	t.Logf("weir flood: %s", weir)
	t.Logf("traefik RSS: start %s, after bare flood %s (+%s), after weir flood %s, settled %s (+%s over the bare run)",
		mib(rss0), mib(rss1), mib(rss1-rss0), mib(rss2), mib(rss3), mib(rss3-rss1))
	for _, f := range []floodResult{bare, weir} {
		if f.sent < floodKeys/4 {
			t.Errorf("%s: only %d requests in %v: too few to say anything about memory", f.prefix, f.sent, floodMaxTime)
		}
		if f.failed > f.sent/100 {
			t.Errorf("%s: %d of %d requests failed, the first: %s", f.prefix, f.failed, f.sent, f.firstFailure)
		}
	}
	// Measured from the start, not from after the bare flood: the bare run's own traffic
	// raises RSS by anything from 7 to 43 MiB from one run to the next (how far Go's heap
	// grew for its transient allocations), and what it leaves undone the Weir run does, so
	// growth over the bare run moved by as much. bareAllowance covers the bare run.
	const bareAllowance = 48 << 20
	bound := int64(floodCacheMiB<<20)*4 + 64<<20 + bareAllowance
	if growth := rss3 - rss0; growth > bound {
		t.Errorf("RSS grew by %s through the bare and the Weir floods with maxSize %d MiB, want at most %s (4 × maxSize + 64 MiB + 48 MiB for the bare run)",
			mib(growth), floodCacheMiB, mib(bound))
	}

	// The budget evicts: the first keys of the flood are gone, the last are still there.
	if first := get(t, tr, "/weir/flood/0"); first.cacheStatus().hit() {
		t.Errorf("/weir/flood/0 is still a hit after %d more keys: Cache-Status %q, want a miss (evicted)", weir.sent, first.cacheStatus())
	}
	last := get(t, tr, fmt.Sprintf("/weir/flood/%d", weir.sent-1))
	t.Logf("last flooded key: Cache-Status %q; origin requests in all %d", last.cacheStatus(), atomic.LoadInt64(&originHits))

	// Go's server reads MaxHeaderBytes (Traefik's default: 1 MiB) plus 4 KiB of slack before
	// it gives up, so a value of exactly 1 MiB still fits and is served like any request;
	// one past the slack is refused with 431 by Traefik's server before any handler, so Weir
	// never holds it.
	status, err := hugeHeader(tr, "/weir/huge-at-limit", 1<<20)
	t.Logf("GET with a 1 MiB header value: status %d, error %v (within Go's limit and slack)", status, err)
	before := atomic.LoadInt64(&originHits)
	status, err = hugeHeader(tr, "/weir/huge", 1<<20+8<<10)
	t.Logf("GET with a 1 MiB + 8 KiB header value: status %d, error %v", status, err)
	if err == nil && status != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("a 1 MiB + 8 KiB header value: status %d, want 431 (or a closed connection)", status)
	}
	if got := atomic.LoadInt64(&originHits) - before; got != 0 {
		t.Errorf("the over-limit header request reached the origin (%d requests)", got)
	}
	rss4 := settledRSS(t, tr, pid)
	t.Logf("traefik RSS after the huge header: %s", mib(rss4))
}

// floodResult is what one flood did.
type floodResult struct {
	prefix       string
	sent, failed int64
	hits         int64
	took         time.Duration
	firstFailure string
}

func (f floodResult) String() string {
	return fmt.Sprintf("%s: %d requests (%d failed, %d hits) in %v, %.0f/s", f.prefix, f.sent, f.failed, f.hits,
		f.took.Round(time.Millisecond), float64(f.sent)/f.took.Seconds())
}

// flood GETs prefix+0 … prefix+floodKeys-1 once each from floodClients clients, stopping at
// floodMaxTime.
func flood(t *testing.T, tr *Traefik, prefix string) floodResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), floodMaxTime)
	defer cancel()
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
		MaxIdleConnsPerHost: floodClients, DisableCompression: true,
	}}
	defer client.CloseIdleConnections()
	res := floodResult{prefix: prefix}
	var sent, failed, hits int64
	var once sync.Once
	began := time.Now()
	eachIndex(ctx, floodClients, floodKeys, func(n int) {
		atomic.AddInt64(&sent, 1)
		r, err := fetch(ctx, client, requestTimeout, http.MethodGet, tr.URL(prefix+strconv.Itoa(n)), nil)
		status, hit := r.status, r.cacheStatus().hit()
		if ctx.Err() != nil {
			// Cut off by floodMaxTime: not counted as sent.
			atomic.AddInt64(&sent, -1)
			return
		}
		if err != nil || status != http.StatusOK {
			atomic.AddInt64(&failed, 1)
			once.Do(func() { res.firstFailure = fmt.Sprintf("%s%d: status %d, %v", prefix, n, status, err) })
		}
		if hit {
			atomic.AddInt64(&hits, 1)
		}
	})
	res.took = time.Since(began)
	res.sent, res.failed, res.hits = sent, failed, hits
	return res
}

// hugeHeader sends one GET with a header value of size bytes and returns the status, or the
// error when the server closed the connection instead of answering.
func hugeHeader(tr *Traefik, path string, size int) (int, error) {
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	r, err := fetch(context.Background(), client, requestTimeout, http.MethodGet, tr.URL(path), map[string]string{"X-Huge": strings.Repeat("h", size)})
	if r.status != 0 {
		return r.status, nil
	}
	return 0, err
}

// settledRSS forces a collection in Traefik (pprof's heap profile with gc=1 runs one),
// waits floodSettle for the runtime to return freed pages, and reads the RSS.
func settledRSS(t *testing.T, tr *Traefik, pid int) int64 {
	t.Helper()
	resp, err := tr.Client().Get(tr.APIURL + "/debug/pprof/heap?gc=1")
	if err != nil {
		t.Fatalf("force a GC: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	time.Sleep(floodSettle)
	return readRSS(t, pid)
}

// readRSS reads VmRSS of pid from /proc, in bytes.
func readRSS(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc to read Traefik's RSS from: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "VmRSS:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				t.Fatalf("VmRSS %q: %v", sc.Text(), err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

func mib(b int64) string {
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}
