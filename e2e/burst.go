package e2e

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Bursts of requests and floods of distinct queries, with their latency percentiles and
// their answers tallied by outcome: the limiter's tests and the load scenarios measure with
// them.

// limReply is one answer seen by limBurst.
type limReply struct {
	path   string
	status int
	cs     cacheStatus
	retry  string
	header http.Header
	body   string
	took   time.Duration
}

// limWantStatus checks an answer of the cacheable test origins, which answer with the path:
// 200, the path as body, and a stored miss forwarded for reason fwd.
func limWantStatus(r limReply, fwd string) string {
	if r.status != http.StatusOK || r.body != r.path || r.cs.fwd() != fwd || !r.cs.has("stored") {
		return fmt.Sprintf("%s: status %d, body %q, Cache-Status %q, header %v; want 200, the path, fwd=%s; stored", r.path, r.status, short(r.body), r.cs, r.header, fwd)
	}
	return ""
}

// limStats sums up a burst of requests.
type limStats struct {
	requests   int
	errors     int
	firstError string
	began      time.Time
	elapsed    time.Duration
	p50, p99   time.Duration
	max        time.Duration
	// beforeOrigin is the p99 of the time requests took to reach the origin, when known.
	beforeOrigin time.Duration
	statuses     map[string]int
}

// tallies is the answers by outcome: "200 fwd=uri-miss"×300, ...
func (s limStats) tallies() string {
	keys := make([]string, 0, len(s.statuses))
	for k := range s.statuses {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%q×%d", k, s.statuses[k]))
	}
	return strings.Join(parts, ", ")
}

func (s limStats) String() string {
	before := ""
	if s.beforeOrigin > 0 {
		before = fmt.Sprintf(" (p99 to reach the origin %v)", s.beforeOrigin.Round(10*time.Microsecond))
	}
	return fmt.Sprintf("%d requests in %v (%.0f/s), %d errors, latency p50 %v p99 %v max %v%s; %s",
		s.requests, s.elapsed.Round(time.Millisecond), float64(s.requests)/s.elapsed.Seconds(), s.errors,
		s.p50.Round(10*time.Microsecond), s.p99.Round(10*time.Microsecond), s.max.Round(10*time.Microsecond), before, s.tallies())
}

// end is when the burst's last answer came.
func (s limStats) end() time.Time { return s.began.Add(s.elapsed) }

// burst requests every path once with GET, from clients concurrent workers each sending its
// next request when its answer is read, and fails when not every path is answered within
// bound. check returns "" for a right answer, otherwise what is wrong; nil accepts any
// answer. With arrivals (paths each requested once, noted by the origin) the figures include
// the time to reach the origin.
func burst(tr *Traefik, paths []string, clients int, bound time.Duration, arrivals *limArrivals, check func(limReply) string) (limStats, error) {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	took := make([]time.Duration, len(paths))
	sent := make([]time.Time, len(paths))
	var mu sync.Mutex // guards the fields of st filled by workers
	st := limStats{statuses: map[string]int{}}
	began := time.Now()
	n := eachIndex(ctx, clients, len(paths), func(i int) {
		sent[i] = time.Now()
		r, err := limGet(ctx, tr, paths[i])
		took[i] = r.took
		problem := ""
		switch {
		case err != nil:
			problem = fmt.Sprintf("%s: %v", paths[i], err)
		case check != nil:
			problem = check(r)
		}
		mu.Lock()
		st.statuses[limStatusKey(r)]++
		if problem != "" {
			st.errors++
			if st.firstError == "" {
				st.firstError = problem
			}
		}
		mu.Unlock()
	})
	st.began = began
	st.elapsed = time.Since(began)
	if n < len(paths) {
		return st, fmt.Errorf("burst of %d requests: only %d answered within %v", len(paths), n, bound)
	}
	st.requests = n
	sorted := append([]time.Duration(nil), took[:n]...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	st.p50 = limPercentile(sorted, 50)
	st.p99 = limPercentile(sorted, 99)
	st.max = sorted[len(sorted)-1]
	if arrivals != nil {
		var before []time.Duration
		for i := 0; i < n; i++ {
			if at, ok := arrivals.at(paths[i]); ok {
				before = append(before, at.Sub(sent[i]))
			}
		}
		sort.Slice(before, func(i, j int) bool { return before[i] < before[j] })
		st.beforeOrigin = limPercentile(before, 99)
	}
	return st, nil
}

// limArrivals notes when each path's request reached the origin.
type limArrivals struct {
	// mu guards at.
	mu    sync.Mutex
	times map[string]time.Time
}

func newLimArrivals() *limArrivals { return &limArrivals{times: map[string]time.Time{}} }

func (a *limArrivals) note(path string) {
	now := time.Now()
	a.mu.Lock()
	a.times[path] = now
	a.mu.Unlock()
}

func (a *limArrivals) at(path string) (time.Time, bool) {
	a.mu.Lock()
	at, ok := a.times[path]
	a.mu.Unlock()
	return at, ok
}

// limStatusKey names an answer's outcome for the tallies: the status and Weir's
// Cache-Status without its ttl.
func limStatusKey(r limReply) string {
	if r.status == 0 {
		return "transport error"
	}
	key := strconv.Itoa(r.status)
	if r.cs.hit() {
		key += " hit"
	}
	if f := r.cs.fwd(); f != "" {
		key += " fwd=" + f
	}
	if d := r.cs.params["detail"]; d != "" {
		key += " detail=" + d
	}
	return key
}

// limPercentile is the p-th percentile of sorted latencies (nearest rank).
func limPercentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	if i < 1 {
		i = 1
	}
	return sorted[i-1]
}

// limGet sends one GET and reads its answer whole.
func limGet(ctx context.Context, tr *Traefik, path string) (limReply, error) {
	r, err := fetch(ctx, tr.Client(), 30*time.Second, http.MethodGet, tr.URL(path), nil)
	return limReply{path: path, status: r.status, cs: r.cacheStatus(), retry: r.header.Get("Retry-After"),
		header: r.header, body: r.body, took: r.took}, err
}

// limFlood is a flood of distinct queries on one path by a fixed number of clients, each
// sending its next request when its answer is read.
type limFlood struct {
	cancel context.CancelFunc
	done   chan struct{}

	// mu guards st.
	mu sync.Mutex
	st limFloodStats
}

// limFloodStats counts a flood's answers.
type limFloodStats struct {
	ok, queueFull, partitionFull, queueWait, errors int
	firstError                                      string
}

func (s limFloodStats) shed() int { return s.queueFull + s.partitionFull + s.queueWait }

func (s limFloodStats) String() string {
	return fmt.Sprintf("%d answered 200, shed %d (queue-full %d, partition-queue-full %d, queue-wait %d), %d other",
		s.ok, s.shed(), s.queueFull, s.partitionFull, s.queueWait, s.errors)
}

var limFloodSeq int64

// startFlood starts clients sending GET prefix+N with N never repeated, until end.
func startFlood(tr *Traefik, prefix string, clients int) *limFlood {
	ctx, cancel := context.WithCancel(context.Background())
	f := &limFlood{cancel: cancel, done: make(chan struct{})}
	go func() {
		// Until cancelled: the indexes never run out.
		eachIndex(ctx, clients, math.MaxInt32, func(int) {
			path := prefix + strconv.FormatInt(atomic.AddInt64(&limFloodSeq, 1), 10)
			r, err := limGet(ctx, tr, path)
			if ctx.Err() == nil {
				f.count(r, err)
			}
		})
		close(f.done)
	}()
	return f
}

func (f *limFlood) count(r limReply, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	shed := r.status == http.StatusServiceUnavailable && r.retry != ""
	switch {
	case err == nil && r.status == http.StatusOK:
		f.st.ok++
	case err == nil && shed && r.cs.params["detail"] == "queue-full":
		f.st.queueFull++
	case err == nil && shed && r.cs.params["detail"] == "partition-queue-full":
		f.st.partitionFull++
	case err == nil && shed && r.cs.params["detail"] == "queue-wait":
		f.st.queueWait++
	default:
		f.st.errors++
		if f.st.firstError == "" {
			f.st.firstError = fmt.Sprintf("%s: status %d, Retry-After %q, Cache-Status %q, err %v", r.path, r.status, r.retry, r.cs, err)
		}
	}
}

// end ends the flood and returns its tallies; an error when its clients hang.
func (f *limFlood) end() (limFloodStats, error) {
	f.cancel()
	select {
	case <-f.done:
	case <-time.After(35 * time.Second):
		return limFloodStats{}, errors.New("flood clients hang after being stopped")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st, nil
}
