package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The origin concurrency budget (FR-LIM-1..7) under load, through a real Traefik. Each test
// is bounded in requests and time and prints its figures. What they assert is structure:
// what reached the origin at once, what was shed and how, that the requests the limiter
// must leave alone were all answered by the origin. Latency is measured and logged as
// ratios between runs of the same test on the same Traefik, never asserted: the machine is
// shared, and a timed bound fails with its load rather than with Weir.

// limLatencyRatio is what the p99 latency of requests the limiter must leave alone grows by
// at most, on a quiet machine, while a flood or slow uploads press on another partition or
// pool; a measurement within it ends the repeated measurements early.
const limLatencyRatio = 1.5

// TestLimiterMassExpiry: 10,000 keys stored within seconds expire together and are all
// requested again by 200 concurrent clients, under limiter.maxConcurrent 32 with the default
// queue (the mass-expiry scenario, RunExpiry). Every key is fetched again exactly once, the
// origin never sees more than 32 fetches at once, and no client gets an error besides a
// designed refusal, which it retries (FR-LIM-1, FR-LIM-2).
func TestLimiterMassExpiry(t *testing.T) {
	f, err := RunExpiry(scenarioEnv(t), ExpiryOptions{Conf: specConfig(t), Keys: 10000, Clients: 200})
	t.Logf("mass expiry:\n%s", f)
	if err != nil {
		t.Fatalf("%v", err)
	}
	if f.Errors > 0 {
		t.Errorf("%d client errors besides designed refusals, want 0: %s", f.Errors, f.FirstErrors())
	}
	if f.StorePeak > expirySlots || f.Peak > expirySlots {
		t.Errorf("origin peak in flight: %d while storing, %d while refetching; want at most maxConcurrent %d", f.StorePeak, f.Peak, expirySlots)
	}
	if f.Peak < expirySlots {
		// 200 clients against a 20ms origin want ~200 fetches at once: a peak under the
		// limit means the bound was never tested.
		t.Errorf("origin peak in flight while refetching = %d, want the limit %d reached: the load did not press on the limiter", f.Peak, expirySlots)
	}
	if f.Refetched != 10000 {
		t.Errorf("%d of 10000 keys fetched exactly twice (stored once, refetched once), want all", f.Refetched)
	}
}

// The bounds TestLimiterFairness holds the other paths' latency to, with the flood over
// without it. The published target, the p99 ratio at most 1.2, is scripts/loadtest.sh
// fairness's (the median of five repeats, on a machine with cores to spare). Here the machine
// is shared by other tests and people: the flood's clients and Traefik's work for them take
// CPU the other paths' requests then wait for, and a burst of someone else's load stretches a
// p99 of 300 samples many times over. On the shared two-core machine at load averages of 4
// to 16 the p99 ratio ran from 1.28 to 10.76, the best of each set of attempts 1.28 to 2.28,
// while the median latency's ratio stayed within 1.34 (docs/benchmarks.md). What the test must
// catch is a partition cap that does not hold: the flood then takes every slot and the other
// paths wait behind its 100ms fetches, five times their 20ms; the control run measures that
// (p99 ratio 4.3 to 7.0, median's 5 to 9 on the same machine) and logs it. So the median
// latency's ratio, the median over the attempts, is held to 1.5, and the p99 ratio, best of
// up to five attempts each of which re-measures both runs, to a looser 3.0: both between a
// cap that holds on a busy machine and one that does not.
const (
	fairnessMedianBound = 1.5
	fairnessBound       = 3.0
)

// TestLimiterFairness: a flood of distinct queries on one slow path holds at most
// limiter.maxPerPartition origin slots and has its excess shed, while every cacheable miss on
// other paths is answered by the origin, none shed (FR-LIM-3); their p99 latency with the
// flood over their p99 without it is at most fairnessBound, best of up to five attempts, and the
// ratio of their median latencies at most fairnessMedianBound (the
// flood-fairness scenario, RunFairness). A control run with the partition cap raised to the
// whole pool shows the flood taking every slot when the cap does not hold it.
func TestLimiterFairness(t *testing.T) {
	f, err := RunFairness(scenarioEnv(t), FairnessOptions{Conf: specConfig(t), Repeats: 5, StopAt: limLatencyRatio, Control: true})
	t.Logf("flood fairness:\n%s", f)
	if err != nil {
		t.Fatalf("%v", err)
	}
	for i, r := range f.Repeats {
		if r.Peak > fairPerPartition {
			t.Errorf("attempt %d: origin saw %d /fair/search fetches at once, want at most maxPerPartition %d", i+1, r.Peak, fairPerPartition)
		}
		if r.flood.shed() == 0 {
			t.Errorf("attempt %d: flood: nothing was shed (%s), want its excess refused with 503", i+1, r.flood)
		}
	}
	if best := f.Best(); best > fairnessBound {
		t.Errorf("other paths' p99 with the flood over their p99 without it: %s, the best %.2f; want at most %.1f", FormatRatios(f.Ratios()), best, fairnessBound)
	}
	if m := Median(f.P50Ratios()); m > fairnessMedianBound {
		t.Errorf("other paths' median latency with the flood over without it: %s, their median %.2f; want at most %.1f", FormatRatios(f.P50Ratios()), m, fairnessMedianBound)
	}
	if f.ControlPeak < fairSlots {
		t.Errorf("control: the flood held at most %d slots without the partition cap, want all %d", f.ControlPeak, fairSlots)
	}
}

// TestLimiterSlowUploads: slow uploads fill limiter.maxUpload slots of their own pool while
// GETs keep flowing, every one answered by the origin (their p99 against a run without
// uploads is logged); the origin never has more than maxUpload uploads at once, and uploads
// beyond the pool and its queue are shed with 503 queue-full or queue-wait (FR-LIM-7,
// FR-LIM-2, FR-LIM-5). The GET
// pool is as small as the upload pool, so an upload that drew from it would starve the GETs.
func TestLimiterSlowUploads(t *testing.T) {
	const (
		uploadSlots = 4
		queue       = 8
		uploaders   = uploadSlots + queue + 4
		chunks      = 50
		chunk       = 16
		chunkEvery  = 100 * time.Millisecond // a body takes 5s to arrive
		samples     = 200
		getWorkers  = 2
		getDelay    = 20 * time.Millisecond
	)
	o := newOrigin(t)
	var postInFlight, postPeak int64
	uploadOrigin := func(w http.ResponseWriter, r *http.Request) {
		raiseMax(&postPeak, atomic.AddInt64(&postInFlight, 1))
		n, err := io.Copy(io.Discard, r.Body)
		atomic.AddInt64(&postInFlight, -1)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		io.WriteString(w, "got "+strconv.FormatInt(n, 10))
	}
	// Each uploader has a path of its own: uploads to one path would be refused with
	// partition-queue-full once they filled the queue, which is all theirs.
	for i := 0; i < uploaders; i++ {
		o.Handle(fmt.Sprintf("/up/load/%d", i), uploadOrigin)
	}
	o.Handle("/up/get", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(getDelay)
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, "fresh")
	})
	conf := specConfig(t)
	conf["limiter"] = map[string]interface{}{
		"maxConcurrent": strconv.Itoa(uploadSlots), "maxUpload": strconv.Itoa(uploadSlots),
		"maxQueue": strconv.Itoa(queue), "maxQueueWait": "1s",
	}
	tr := startTraefik(t, o, cachedRoute("up", "/up/", "weir-up", conf))
	limLogPanics(t, tr)

	gets := make([]string, samples)
	for i := range gets {
		gets[i] = "/up/get"
	}
	checkGet := func(r limReply) string {
		if r.status != http.StatusOK || r.body != "fresh" {
			return fmt.Sprintf("status %d body %q Cache-Status %q", r.status, short(r.body), r.cs)
		}
		return ""
	}
	limBurst(t, tr, gets[:50], getWorkers, 30*time.Second, nil, checkGet)
	base := limBurst(t, tr, gets, getWorkers, 60*time.Second, nil, checkGet)
	t.Logf("GETs without uploads: %s", base)
	base.mustBeClean(t, "GETs without uploads")

	type upload struct {
		status int
		detail string
		retry  string
		took   time.Duration
		err    error
	}
	results := make(chan upload, uploaders)
	stop := make(chan struct{})
	began := time.Now()
	for i := 0; i < uploaders; i++ {
		go func(path string) {
			start := time.Now()
			resp, err := limSlowPost(tr, path, chunks, chunk, chunkEvery, stop)
			if err != nil {
				results <- upload{err: err, took: time.Since(start)}
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			cs := parseCacheStatus(resp.Header.Values("Cache-Status"))
			u := upload{status: resp.StatusCode, detail: cs.params["detail"], retry: resp.Header.Get("Retry-After"), took: time.Since(start)}
			if u.status == http.StatusOK && string(b) != "got "+strconv.Itoa(chunks*chunk) {
				u.err = fmt.Errorf("origin answered %q", short(string(b)))
			}
			results <- u
		}(fmt.Sprintf("/up/load/%d", i))
	}
	defer close(stop)
	if !waitFor(5*time.Second, func() bool { return atomic.LoadInt64(&postInFlight) >= uploadSlots }) {
		t.Fatalf("uploads never held the %d upload slots at the origin (in flight %d)", uploadSlots, atomic.LoadInt64(&postInFlight))
	}
	during := limBurst(t, tr, gets, getWorkers, 60*time.Second, nil, checkGet)
	stillUploading := atomic.LoadInt64(&postInFlight)
	t.Logf("GETs during slow uploads: %s (uploads in flight at the end: %d)", during, stillUploading)
	during.mustBeClean(t, "GETs during slow uploads")
	if stillUploading < uploadSlots {
		t.Errorf("only %d uploads were still in flight when the GETs ended: the measurement did not overlap them", stillUploading)
	}

	var ok, queueFull, queueWait int
	timeout := time.After(30 * time.Second)
	for i := 0; i < uploaders; i++ {
		select {
		case u := <-results:
			switch {
			case u.err != nil:
				t.Errorf("upload after %v: %v", u.took.Round(time.Millisecond), u.err)
			case u.status == http.StatusOK:
				ok++
			case u.status == http.StatusServiceUnavailable && u.retry == "1" && u.detail == "queue-full":
				queueFull++
			case u.status == http.StatusServiceUnavailable && u.retry == "1" && u.detail == "queue-wait":
				queueWait++
				if u.took < 900*time.Millisecond {
					t.Errorf("upload shed with queue-wait after %v, want after maxQueueWait 1s", u.took)
				}
			default:
				t.Errorf("upload: status %d, Retry-After %q, detail %q; want 200 or 503 queue-full/queue-wait with Retry-After 1", u.status, u.retry, u.detail)
			}
		case <-timeout:
			t.Fatalf("uploads hang: %d of %d ended within 30s", i, uploaders)
		}
	}
	t.Logf("%d uploads over %v: %d completed, %d shed queue-full, %d shed queue-wait; origin peak uploads in flight %d (maxUpload %d)",
		uploaders, time.Since(began).Round(time.Millisecond), ok, queueFull, queueWait, atomic.LoadInt64(&postPeak), uploadSlots)
	if p := atomic.LoadInt64(&postPeak); p > uploadSlots {
		t.Errorf("origin saw %d uploads at once, want at most maxUpload %d", p, uploadSlots)
	}
	if ok != uploadSlots || queueWait != queue || queueFull != uploaders-uploadSlots-queue {
		t.Errorf("uploads: %d completed, %d queue-wait, %d queue-full; want %d, %d, %d (slots, queue, the rest)",
			ok, queueWait, queueFull, uploadSlots, queue, uploaders-uploadSlots-queue)
	}
	// Logged, not asserted (the file's comment).
	t.Logf("GET p99: %v without uploads, %v during them: ratio %.2f (%.1f expected on a quiet machine)",
		base.p99, during.p99, float64(during.p99)/float64(base.p99), limLatencyRatio)
}

// TestLimiterQueuePerPartition: limiter.maxQueuePerPartition, set as labels set it, reaches
// the limiter through Traefik. With one slot and one queue place for a path, and the one
// origin fetch held, of two more queries on the path one waits and the other is shed at
// once with 503 partition-queue-full and Retry-After, while the queue (1,024) has room
// and another path goes straight through; released, the held and the waiting query are
// answered (FR-LIM-3). With the default share (128) nothing would be shed.
func TestLimiterQueuePerPartition(t *testing.T) {
	o := newOrigin(t)
	release := make(chan struct{})
	entered := make(chan string, 8)
	o.Handle("/qp/search", func(w http.ResponseWriter, r *http.Request) {
		entered <- r.URL.RawQuery
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Cache-Control", "max-age=60")
		io.WriteString(w, r.URL.Path)
	})
	o.Handle("/qp/other", answer("max-age=60", "/qp/other"))
	conf := specConfig(t)
	conf["limiter"] = map[string]interface{}{
		"maxConcurrent": "4", "maxPerPartition": "1", "maxQueuePerPartition": "1", "maxQueueWait": "30s",
	}
	tr := startTraefik(t, o, cachedRoute("qp", "/qp/", "weir-qp", conf))
	limLogPanics(t, tr)
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()

	replies := make(chan limReply, 3)
	async := func(path string) {
		go func() {
			r, err := limGet(context.Background(), tr, path)
			if err != nil {
				r.status = -1
				r.body = err.Error()
			}
			replies <- r
		}()
	}
	async("/qp/search?q=1")
	select {
	case q := <-entered:
		if q != "q=1" {
			t.Fatalf("the origin saw %q first, want q=1", q)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("GET /qp/search?q=1 never reached the origin: hangs")
	}
	async("/qp/search?q=2")
	async("/qp/search?q=3")
	var shed limReply
	select {
	case shed = <-replies:
	case <-time.After(10 * time.Second):
		t.Fatalf("neither q=2 nor q=3 was shed while q=1 held the slot: hangs (limiter.maxQueuePerPartition did not reach the limiter)")
	}
	t.Logf("shed: %s %d %q Retry-After %q in %v", shed.path, shed.status, shed.cs, shed.retry, shed.took.Round(time.Millisecond))
	if shed.status != http.StatusServiceUnavailable || shed.cs.params["detail"] != "partition-queue-full" || shed.retry == "" {
		t.Errorf("%s while the path's one queue place was taken: status %d, Cache-Status %q, Retry-After %q; want 503 detail=partition-queue-full with Retry-After",
			shed.path, shed.status, shed.cs, shed.retry)
	}
	if r := get(t, tr, "/qp/other"); r.status != http.StatusOK {
		t.Errorf("GET /qp/other while /qp/search was held: status %d (%s), want 200", r.status, r.cacheStatus())
	}

	close(release)
	released = true
	for i := 0; i < 2; i++ {
		select {
		case r := <-replies:
			if r.status != http.StatusOK || r.body != "/qp/search" {
				t.Errorf("%s after the release: status %d, body %q, Cache-Status %q; want 200 from the origin", r.path, r.status, short(r.body), r.cs)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("the held and the queued query were not answered after the release: hangs")
		}
	}
	if n := o.Count("/qp/search"); n != 2 {
		t.Errorf("origin requests for /qp/search = %d, want 2 (the held query and the queued one)", n)
	}
}

// mustBeClean fails the test if any answer was wrong, and lets it go on to measure the rest.
func (s limStats) mustBeClean(t *testing.T, what string) {
	t.Helper()
	if s.errors > 0 {
		t.Errorf("%s: %d of %d answers wrong; first: %s", what, s.errors, s.requests, s.firstError)
	}
}

// limBurst is burst, failing the test when not every path is answered within bound.
func limBurst(t *testing.T, tr *Traefik, paths []string, clients int, bound time.Duration, arrivals *limArrivals, check func(limReply) string) limStats {
	t.Helper()
	st, err := burst(tr, paths, clients, bound, arrivals, check)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return st
}

// limStartFlood is startFlood, the flood ended when the test ends.
func limStartFlood(t *testing.T, tr *Traefik, prefix string, clients int) *limFlood {
	t.Helper()
	f := startFlood(tr, prefix, clients)
	t.Cleanup(func() { f.cancel() })
	return f
}

// stop ends the flood and returns its tallies, failing the test when its clients hang.
func (f *limFlood) stop(t *testing.T) limFloodStats {
	t.Helper()
	st, err := f.end()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// limSlowPost POSTs a body of chunks×size bytes, one chunk every pause, with its length
// declared up front. It gives up writing once stop is closed or the answer has come.
func limSlowPost(tr *Traefik, path string, chunks, size int, pause time.Duration, stop <-chan struct{}) (*http.Response, error) {
	body := &limSlowBody{left: chunks, chunk: []byte(strings.Repeat("u", size)), pause: pause, stop: stop, answered: make(chan struct{})}
	req, err := http.NewRequest(http.MethodPost, tr.URL(path), body)
	if err != nil {
		return nil, err
	}
	req.ContentLength = int64(chunks * size)
	resp, err := tr.Client().Do(req)
	close(body.answered)
	return resp, err
}

// errLimStopped ends a slow body whose request was answered or abandoned.
var errLimStopped = errors.New("slow body stopped")

// limSlowBody is a request body that arrives a chunk at a time.
type limSlowBody struct {
	left     int
	chunk    []byte
	pause    time.Duration
	started  bool
	stop     <-chan struct{}
	answered chan struct{}
}

func (b *limSlowBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		return 0, io.EOF
	}
	if b.started {
		select {
		case <-time.After(b.pause):
		case <-b.stop:
			return 0, errLimStopped
		case <-b.answered:
			return 0, errLimStopped
		}
	}
	b.started = true
	b.left--
	return copy(p, b.chunk), nil
}

// limLogPanics prints, when the test fails, the panics Traefik recovered from while serving
// (its recovery middleware answers them with a bare 500 and logs them), which a log tail
// buried under stack frames would not show.
func limLogPanics(t *testing.T, tr *Traefik) {
	t.Helper()
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		data, err := os.ReadFile(tr.LogPath)
		if err != nil {
			t.Logf("traefik log: %v", err)
			return
		}
		shown := 0
		for _, line := range strings.Split(string(data), "\n") {
			if strings.Contains(line, "panic") && !strings.HasPrefix(line, "\t") && shown < 10 {
				t.Logf("traefik log: %s", line)
				shown++
			}
		}
	})
}
