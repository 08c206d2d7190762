package core

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/weirproxy/weir/core/store"
)

// TestMetricsCount: each kind of answer is counted once under its outcome, and the
// exposition at admin.path/metrics holds every family an operator needs.
func TestMetricsCount(t *testing.T) {
	clock := newFakeClock()
	o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/down") {
			w.WriteHeader(503)
			return
		}
		w.Header().Set("Cache-Control", "max-age=60")
		w.Write([]byte("body"))
	})
	s := adminSettings(Settings{Now: clock.Now, Log: discardLog})
	s.Breaker.MinRequests = 2
	h := newTestHandler(t, s, o)
	do(t, h, "GET", "http://example.com/cached")   // miss
	do(t, h, "GET", "http://example.com/cached")   // hit
	do(t, h, "GET", "http://example.com/cached?q") // miss
	do(t, h, "GET", "http://example.com/cached?q") // hit, with a query
	do(t, h, "POST", "http://example.com/form")    // pass
	do(t, h, "GET", "http://down.example.com/down")
	do(t, h, "GET", "http://down.example.com/down") // negative
	do(t, h, "GET", "http://down.example.com/down2")
	do(t, h, "GET", "http://down.example.com/down3") // shed: the breaker is open
	w := adminDo(t, h, "GET", "http://example.com/_weir/metrics", "", adminToken)
	wantCode(t, "metrics", w, 200)
	if ct := w.Header().Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
		t.Errorf("Content-Type %q, want the text format 0.0.4", ct)
	}
	body := w.Body.String()
	for _, want := range []string{
		`weir_requests_total{outcome="hit"} 2`,
		`weir_requests_total{outcome="miss"} 4`,
		`weir_requests_total{outcome="pass"} 1`,
		`weir_requests_total{outcome="negative"} 1`,
		`weir_requests_total{outcome="shed"} 1`,
		`weir_shed_total{reason="circuit-open"} 1`,
		`weir_breaker_short_circuited_total{scope="down.example.com"} 1`,
		`weir_breaker_state{scope="down.example.com"} 1`,
		`weir_breaker_state{scope="example.com"} 0`,
		`weir_breaker_trips_total{scope="down.example.com"} 1`,
		`weir_breaker_failure_ratio{scope="down.example.com"}`,
		`weir_origin_in_flight{pool="fetch"} 0`,
		`weir_origin_queued{pool="upload"} 0`,
		`weir_origin_duration_seconds_count{breaker_state="closed"} 5`,
		`weir_origin_duration_seconds_count{breaker_state="half-open"} 0`,
		`weir_coalesce_timeouts_total{fallback="stale"} 0`,
		`weir_stale_total{reason="stale-if-error"} 0`,
		`weir_cache_entries 2`,
		`weir_cache_evictions_total 0`,
		`weir_coalesced_total 0`,
		`weir_missrate_anomalies_total 0`,
		"# TYPE weir_requests_total counter",
		"# TYPE weir_origin_duration_seconds histogram",
	} {
		if !strings.Contains(body, want+"\n") && !strings.Contains(body, want+" ") {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}

}

// TestFallbackHitsCounted: a hit answered by a copy the shared store's local fallback kept
// (Entry.Fallback) counts in weir_store_fallback_hits_total, whether the hit path or the
// general answer writes it; a hit of any other entry, and a miss, do not.
func TestFallbackHitsCounted(t *testing.T) {
	o := countingOrigin(t, []string{"Cache-Control", "max-age=60"})
	h := newTestHandler(t, adminSettings(Settings{Now: newFakeClock().Now, Log: discardLog}), o)
	do(t, h, "GET", "http://example.com/kept")  // miss, stored
	do(t, h, "GET", "http://example.com/other") // miss, stored
	const key = "http://example.com/kept"
	ent := store.Lookup(h.mem, key)
	if ent == nil {
		t.Fatalf("nothing stored under %s", key)
	}
	kept := *ent
	kept.Fallback = true
	if err := store.Put(h.mem, key, &kept, -1); err != nil {
		t.Fatalf("Put: %v", err)
	}
	tests := []struct {
		desc   string
		url    string
		header []string
		want   int64
	}{
		{desc: "a hit of the fallback's copy", url: key, want: 1},
		{desc: "the same through the general path (a client directive)", url: key, header: []string{"Cache-Control", "max-stale=0"}, want: 2},
		{desc: "a hit of another entry", url: "http://example.com/other", want: 2},
		{desc: "a miss", url: "http://example.com/new", want: 2},
	}
	for _, tc := range tests {
		do(t, h, "GET", tc.url, tc.header...)
		if got := atomic.LoadInt64(&h.e.metrics.fallbackHits.N); got != tc.want {
			t.Errorf("%s: weir_store_fallback_hits_total %d, want %d", tc.desc, got, tc.want)
		}
	}
	w := adminDo(t, h, "GET", "http://example.com/_weir/metrics", "", adminToken)
	if want := "weir_store_fallback_hits_total 2\n"; !strings.Contains(w.Body.String(), want) {
		t.Errorf("metrics lack %q", want)
	}
}
