package main

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/weirproxy/weir/e2e"
)

// sampleEvery is the pause between two samples.
const sampleEvery = 10 * time.Second

// sample is what the run reads every sampleEvery. A figure it could not read is -1.
type sample struct {
	at time.Duration
	// From Traefik's /debug/vars (api.debug in the harness's static configuration): the Go
	// runtime's memstats.
	heapInuse, heapAlloc, heapSys int64
	// nextGC is the heap size at which the next GC starts (memstats.NextGC); heapLive, what
	// the last GC found live, derived from it (liveHeap).
	nextGC, heapLive int64
	// goroutines from /debug/pprof/goroutine, fds from /proc/<pid>/fd.
	goroutines, fds int64
	// From Weir's metrics: weir_cache_bytes (this process's memory store or near cache),
	// against cache.maxSize of the options in force; weir_store_breaker_open.
	cacheBytes, cacheMax, storeOpen int64
	// counts are the answers so far, by kind (cumulative).
	counts snapshot
	// state is what faults were on when the sample was taken.
	state string
}

// sampler reads the samples of one Traefik.
type sampler struct {
	tr         *e2e.Traefik
	metricsURL string
	token      string
	// gogc is Traefik's GOGC (gogcOf): the GC's goal over the live heap.
	gogc int
}

// gogcOf is the GOGC a Go program runs with given its environment's value, as the runtime
// reads it: 100 when unset or not a number, -1 (the GC off) for "off" or a negative number.
func gogcOf(env string) int {
	if env == "off" {
		return -1
	}
	n, err := strconv.Atoi(env)
	if err != nil {
		return 100
	}
	if n < 0 {
		return -1
	}
	return n
}

// liveHeap is the heap the last GC marked live, from the goal it set for the next one. The
// runtime sets that goal to live + (live + stacks + globals) x GOGC/100 (the pacer since Go
// 1.18), so nextGC / (1 + GOGC/100) is the live heap plus the roots' share: at GOGC 100,
// half of Traefik's stacks and globals, a few MiB, which errs towards a larger heap. Unlike
// the heap in use, it carries none of the garbage a GC cycle lets pile up before the next
// one (up to as much again as is live at GOGC 100). -1 when it cannot be told (GOGC off).
func liveHeap(nextGC int64, gogc int) int64 {
	if nextGC <= 0 || gogc < 0 {
		return -1
	}
	return nextGC * 100 / int64(100+gogc)
}

func (s sampler) take(at time.Duration, cacheMax int64, counts snapshot, state string) sample {
	sm := sample{at: at, cacheMax: cacheMax, counts: counts, state: state,
		heapInuse: -1, heapAlloc: -1, heapSys: -1, nextGC: -1, heapLive: -1, goroutines: -1, fds: -1, cacheBytes: -1, storeOpen: -1}
	var vars struct {
		Memstats struct{ HeapInuse, HeapAlloc, HeapSys, NextGC int64 } `json:"memstats"`
	}
	if err := s.getJSON(s.tr.APIURL+"/debug/vars", &vars); err == nil {
		sm.heapInuse, sm.heapAlloc, sm.heapSys = vars.Memstats.HeapInuse, vars.Memstats.HeapAlloc, vars.Memstats.HeapSys
		sm.nextGC = vars.Memstats.NextGC
		sm.heapLive = liveHeap(sm.nextGC, s.gogc)
	}
	if n, err := s.tr.Goroutines(); err == nil {
		sm.goroutines = int64(n)
	}
	if fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.tr.Pid())); err == nil {
		sm.fds = int64(len(fds))
	}
	if m, err := s.metrics(); err == nil {
		if v, ok := m["weir_cache_bytes"]; ok {
			sm.cacheBytes = int64(v)
		}
		if v, ok := m["weir_store_breaker_open"]; ok {
			sm.storeOpen = int64(v)
		}
	}
	return sm
}

func (s sampler) getJSON(url string, v interface{}) error {
	resp, err := s.tr.Client().Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d", url, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// metrics reads Weir's metrics, each family's samples summed over their labels.
func (s sampler) metrics() (map[string]float64, error) {
	req, err := http.NewRequest(http.MethodGet, s.metricsURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := s.tr.Client().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body)
		return nil, fmt.Errorf("GET %s: %d", s.metricsURL, resp.StatusCode)
	}
	return parseMetrics(resp.Body)
}

// parseMetrics reads Prometheus text: each family's samples summed over their labels.
func parseMetrics(r io.Reader) (map[string]float64, error) {
	out := make(map[string]float64)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		name := line[:sp]
		if i := strings.IndexByte(name, '{'); i >= 0 {
			name = name[:i]
		}
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			continue
		}
		out[name] += v
	}
	return out, sc.Err()
}

// csvHeader is the CSV's first line; answer kinds are cumulative counts.
func csvHeader() []string {
	h := []string{"elapsed_s", "heap_inuse_bytes", "heap_alloc_bytes", "heap_sys_bytes", "next_gc_bytes", "heap_live_bytes", "goroutines", "fds",
		"cache_bytes", "cache_max_bytes", "store_breaker_open", "sent", "behind", "hangups"}
	h = append(h, designedKinds...)
	h = append(h, undesignedKinds...)
	return append(h, "state")
}

func (sm sample) row() []string {
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	r := []string{strconv.FormatFloat(sm.at.Seconds(), 'f', 1, 64), i(sm.heapInuse), i(sm.heapAlloc), i(sm.heapSys), i(sm.nextGC), i(sm.heapLive),
		i(sm.goroutines), i(sm.fds), i(sm.cacheBytes), i(sm.cacheMax), i(sm.storeOpen),
		i(sm.counts.sent), i(sm.counts.behind), i(sm.counts.hangups)}
	for _, k := range designedKinds {
		r = append(r, i(sm.counts.counts[k]))
	}
	for _, k := range undesignedKinds {
		r = append(r, i(sm.counts.counts[k]))
	}
	return append(r, sm.state)
}

// writeCSV writes the samples to path.
func writeCSV(path string, samples []sample) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	w.Write(csvHeader())
	for _, sm := range samples {
		w.Write(sm.row())
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
