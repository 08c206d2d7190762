package core

import (
	"math"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/admin"
)

// TestConsoleSampledHostCounts: under a steady load, each host's requests a second and hit
// ratio, estimated from one answer of each outcome in consoleSample, are the load's within
// the sampling's error, for two hosts whose hits take turns (a period of two, which a
// sampling of one in 64 would give wholly to one of them) and a host passed through. What
// the samples add up to is the outcome counters' multiple of consoleSample: the literal the
// hit and pass paths write is consoleSample.
func TestConsoleSampledHostCounts(t *testing.T) {
	clock := newFakeClock()
	o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if r.Host == "b.example.com" {
			w.Header().Set("Cache-Control", "no-store")
		} else {
			w.Header().Set("Cache-Control", "max-age=3600")
		}
		w.Write([]byte("page"))
	})
	h := newTestHandler(t, adminSettings(Settings{Now: clock.Now, Log: discardLog}), o)
	// The console started with the test's clock, not the machine's: the tables' span is the
	// load's.
	h.e.metrics.console.started = clock.Now().Unix()
	const seconds = 600
	for i := 0; i < seconds; i++ {
		for _, host := range []string{"a", "c", "a", "c", "b"} {
			wantCode(t, host+" at "+strconv.Itoa(i), do(t, h, "GET", "http://"+host+".example.com/page"), 200)
		}
		clock.Add(time.Second)
	}
	var tb admin.Tables
	adminJSON(t, h, "api/tables", &tb)
	if tb.Seconds != seconds {
		t.Fatalf("seconds: got %d, want %d", tb.Seconds, seconds)
	}
	rows := map[string]admin.HostRow{}
	for _, r := range tb.Hosts {
		rows[r.Host] = r
	}
	// One sample more or less on a host is consoleSample/seconds a second: 0.1 here.
	tolerance := 1.5 * consoleSample / float64(seconds)
	tests := []struct {
		host            string
		requests, ratio float64
	}{
		{"a.example.com", 2, 1},
		{"c.example.com", 2, 1},
		{"b.example.com", 1, 0},
	}
	for _, tt := range tests {
		r := rows[tt.host]
		if math.Abs(r.Requests-tt.requests) > tolerance {
			t.Errorf("%s: %.3f requests a second, want %v within %.2f", tt.host, r.Requests, tt.requests, tolerance)
		}
		if r.HitRatio != tt.ratio {
			t.Errorf("%s: hit ratio %.3f, want %v", tt.host, r.HitRatio, tt.ratio)
		}
	}
	hits, passes := h.e.metrics.outcomes[outcomeHit].N, h.e.metrics.outcomes[outcomePass].N
	var sampledHits, sampledOthers int64
	for _, r := range append(tb.Hosts, tb.OtherHosts) {
		sampledHits += int64(math.Round(r.Requests * r.HitRatio * seconds))
		sampledOthers += int64(math.Round(r.Requests * (1 - r.HitRatio) * seconds))
	}
	if want := hits / consoleSample * consoleSample; sampledHits != want {
		t.Errorf("hits sampled: got %d, want %d (%d hits, one in %d)", sampledHits, want, hits, consoleSample)
	}
	if want := passes / consoleSample * consoleSample; sampledOthers != want {
		t.Errorf("other answers sampled: got %d, want %d (%d passes, one in %d; too few misses for one)", sampledOthers, want, passes, consoleSample)
	}
}

// TestConsoleSampledHostsStayBounded: sampled hits of more distinct hosts than the table's
// rows keep it at consoleRows, the busiest host first.
func TestConsoleSampledHostsStayBounded(t *testing.T) {
	clock := newFakeClock()
	o := staticOrigin(t, 200, nil, "page")
	h := newTestHandler(t, Settings{Now: clock.Now, Log: discardLog}, o)
	hosts := h.e.metrics.console.hosts
	for i := 0; i < 10*consoleRows; i++ {
		sampleHit(h, newRequest("GET", "http://h"+strconv.Itoa(i)+".example.com/"))
		sampleHit(h, newRequest("GET", "http://busy.example.com/"))
	}
	if n := hosts.Len(); n > consoleRows {
		t.Errorf("rows: got %d, want at most %d", n, consoleRows)
	}
	rows, _ := hosts.Rows(clock.Now().Unix(), hostHits, 1)
	if len(rows) != 1 || rows[0].Key != "busy.example.com" || rows[0].Counts[hostHits] != 10*consoleRows*consoleSample {
		t.Errorf("busiest: got %+v, want busy.example.com with %d hits", rows, 10*consoleRows*consoleSample)
	}
}
