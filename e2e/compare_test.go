package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/traefik/genconf/dynamic"
)

// TestFloodWeirAgainstInFlightReq: a flood of distinct queries on one path, behind Traefik's
// own InFlightReq middleware and behind Weir, each capped at 16 origin requests. InFlightReq
// counts requests per source (here the host), so the flood holds all 16 and the host's other
// paths get 429; Weir counts them per path (limiter.maxPerPartition), so the flood holds its
// 16 and every request of the other paths reaches the origin. The README's "Why Weir" quotes
// the figures this logs.
func TestFloodWeirAgainstInFlightReq(t *testing.T) {
	const (
		capacity     = 16
		floodClients = 64
		samples      = 200
		otherWorkers = 2
		searchDelay  = 100 * time.Millisecond
		otherDelay   = 10 * time.Millisecond
	)
	o := newOrigin(t)
	var search [2]inFlight
	for i, prefix := range []string{"/w/", "/i/"} {
		o.Handle(prefix+"search", search[i].count(delayed(searchDelay, searchResults)))
		for j := 0; j < samples; j++ {
			o.Handle(fmt.Sprintf("%sother/%d", prefix, j), func(w http.ResponseWriter, r *http.Request) {
				time.Sleep(otherDelay)
				w.Header().Set("Cache-Control", "max-age=60")
				io.WriteString(w, r.URL.Path)
			})
		}
	}
	weir := specConfig(t)
	weir["limiter"] = map[string]interface{}{"maxPerPartition": fmt.Sprint(capacity), "maxQueueWait": "200ms"}
	tr := startTraefik(t, o, Dynamic{
		Routes: []Route{
			{Name: "viaweir", Rule: "PathPrefix(`/w/`)", Middleware: "weir-cmp"},
			{Name: "viainflight", Rule: "PathPrefix(`/i/`)", Middleware: "inflight"},
		},
		Middlewares: map[string]map[string]interface{}{"weir-cmp": weir},
		Builtin: map[string]*dynamic.Middleware{
			"inflight": {InFlightReq: &dynamic.InFlightReq{
				Amount: capacity, SourceCriterion: &dynamic.SourceCriterion{RequestHost: true},
			}},
		},
	})

	run := func(name, prefix string, search *inFlight) limStats {
		flood := limStartFlood(t, tr, prefix+"search?q=", floodClients)
		if !waitFor(5*time.Second, func() bool { return search.now() >= capacity }) {
			t.Fatalf("%s: the flood never held %d origin requests (in flight %d)", name, capacity, search.now())
		}
		paths := make([]string, samples)
		for i := range paths {
			paths[i] = fmt.Sprintf("%sother/%d", prefix, i)
		}
		st := limBurst(t, tr, paths, otherWorkers, 60*time.Second, nil, nil)
		fs := flood.stop(t)
		t.Logf("%s: other paths during the flood: %s", name, st)
		t.Logf("%s: the flood: %s", name, fs)
		return st
	}
	inflight := run("InFlightReq (amount 16, per host)", "/i/", &search[1])
	weirStats := run("Weir (limiter.maxPerPartition 16)", "/w/", &search[0])

	if inflight.statuses["429"] == 0 {
		t.Errorf("InFlightReq: no other-path request got 429 (%s); the comparison did not press on it", inflight)
	}
	for k, n := range weirStats.statuses {
		if !strings.HasPrefix(k, "200 ") {
			t.Errorf("Weir: %d other-path requests answered %q, want every one 200 from the origin", n, k)
		}
	}
	t.Logf("other paths answered 200 during the flood: InFlightReq %d of %d, Weir %d of %d",
		inflight.statuses["200"], samples, weirStats.statuses["200 fwd=uri-miss"], samples)
}
