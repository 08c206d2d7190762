package core

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/admin"
	"github.com/weirproxy/weir/core/console"
	"github.com/weirproxy/weir/core/events"
)

// adminJSON gets path from h's admin with the token and decodes the answer into v.
func adminJSON(t *testing.T, h *Handler, path string, v interface{}) {
	t.Helper()
	w := adminDo(t, h, "GET", "http://example.com/_weir/"+path, "", adminToken)
	wantCode(t, path, w, 200)
	if err := json.Unmarshal(w.Body.Bytes(), v); err != nil {
		t.Fatalf("%s is not JSON: %v", path, err)
	}
}

// column is the series' column name, or fails.
func column(t *testing.T, v console.View, name string) []float64 {
	t.Helper()
	for i, n := range v.Names {
		if n == name {
			return v.Values[i]
		}
	}
	t.Fatalf("no column %s in %v", name, v.Names)
	return nil
}

// TestConsoleSeries: the series are the counters' differences a second, a gap spread evenly
// over the seconds it spans; the refusals have a column per reason.
func TestConsoleSeries(t *testing.T) {
	clock := newFakeClock()
	o := staticOrigin(t, 200, []string{"Cache-Control", "max-age=600"}, "page")
	h := newTestHandler(t, adminSettings(Settings{Now: clock.Now, Log: discardLog}), o)
	var v console.View
	adminJSON(t, h, "api/series", &v)
	if len(v.Times) != 1 {
		t.Fatalf("first samples: got %d, want 1", len(v.Times))
	}
	for i := 0; i < 4; i++ {
		wantCode(t, "a request", do(t, h, "GET", "http://example.com/page"), 200)
	}
	clock.Add(2 * time.Second)
	adminJSON(t, h, "api/series", &v)
	if len(v.Times) != 3 || v.Times[2]-v.Times[0] != 2 {
		t.Fatalf("times: got %v, want 3 seconds in a row", v.Times)
	}
	tests := []struct {
		name string
		want float64
	}{
		{"client", 2}, {"origin", 0.5}, {"saved", 0.75}, {"hitRatio", 0.75}, {"stale", 0},
	}
	for _, tt := range tests {
		for _, at := range []int{1, 2} {
			if got := column(t, v, tt.name)[at]; got != tt.want {
				t.Errorf("%s at %d: got %v, want %v", tt.name, at, got, tt.want)
			}
		}
	}
	if got := column(t, v, "cap"); got[2] <= 0 {
		t.Errorf("cap: got %v, want the limiter's size", got)
	}
	for _, r := range reasons {
		column(t, v, consoleRefusedPrefix+r.name)
	}
}

// TestConsoleTablesAndEvents: a failing host is the busiest in the hosts table, its
// partition first by fetches and by refusals, its breaker's opening in the events, which
// filter by kind and host.
func TestConsoleTablesAndEvents(t *testing.T) {
	clock := newFakeClock()
	o := staticOrigin(t, 503, nil, "down")
	s := adminSettings(Settings{Now: clock.Now, Log: discardLog})
	s.Breaker.MinRequests = 2
	h := newTestHandler(t, s, o)
	for i := 0; i < 5; i++ {
		do(t, h, "GET", "http://api.example.com/p?i="+itoa(int64(i)))
	}
	var tb admin.Tables
	adminJSON(t, h, "api/tables", &tb)
	if len(tb.Hosts) != 1 || tb.Hosts[0].Host != "api.example.com" || tb.Hosts[0].Fetches == 0 || tb.Hosts[0].Refused == 0 || tb.Hosts[0].Breaker != "open" {
		t.Errorf("hosts: got %+v, want api.example.com with fetches, refusals and its breaker open", tb.Hosts)
	}
	if len(tb.ByMisses) != 1 || tb.ByMisses[0].Partition != "http://api.example.com/p" || len(tb.ByRefusals) != 1 {
		t.Errorf("partitions: got %+v and %+v, want http://api.example.com/p in both", tb.ByMisses, tb.ByRefusals)
	}
	tests := []struct {
		desc, query string
		want        int
	}{
		{"every event", "", 1},
		{"by kind", "?kind=breaker_opened", 1},
		{"another kind", "?kind=purged", 0},
		{"by host", "?host=API.example.com:443", 1},
		{"another host", "?host=www.example.com", 0},
	}
	for _, tt := range tests {
		var got struct{ Events []events.Record }
		adminJSON(t, h, "api/events"+tt.query, &got)
		n := 0
		for _, ev := range got.Events {
			if ev.Name == "breaker_opened" {
				n++
			}
		}
		if n != tt.want {
			t.Errorf("%s: got %d breaker_opened of %+v, want %d", tt.desc, n, got.Events, tt.want)
		}
	}
}

// TestConsoleLookup: the lookup of a stored URL tells its status, age, time to live, size
// and tags; the purge it offers drops it and is in the events.
func TestConsoleLookup(t *testing.T) {
	clock := newFakeClock()
	o := staticOrigin(t, 200, []string{"Cache-Control", "max-age=600, stale-while-revalidate=30", "Surrogate-Key", "t1 t2"}, "page")
	h := newTestHandler(t, adminSettings(Settings{Now: clock.Now, Log: discardLog}), o)
	wantCode(t, "a fetch", do(t, h, "GET", "http://example.com/page?a=1"), 200)
	clock.Add(10 * time.Second)
	var e admin.Entry
	adminJSON(t, h, "api/lookup?url="+url.QueryEscape("http://example.com/page?a=1"), &e)
	if !e.Found || e.Status != 200 || e.Age != 10 || e.TTL != 590 || e.StaleWhileRevalidate != 620 || e.Size != 4 || strings.Join(e.Tags, " ") != "t1 t2" {
		t.Errorf("entry: got %+v, want found, 200, age 10, ttl 590, swr 620 from now, 4 bytes, tags t1 t2", e)
	}
	wantCode(t, "purge", adminDo(t, h, "POST", "http://example.com/_weir/api/purge", `{"url":"http://example.com/page?a=1"}`, adminToken), 200)
	e = admin.Entry{}
	adminJSON(t, h, "api/lookup?url="+url.QueryEscape("http://example.com/page?a=1"), &e)
	if e.Found {
		t.Errorf("after the purge: got %+v, want nothing stored", e)
	}
	var got struct{ Events []events.Record }
	adminJSON(t, h, "api/events?kind=purged", &got)
	if len(got.Events) != 1 || got.Events[0].Fields[0].Value != "url" {
		t.Errorf("purge events: got %+v, want one naming the url", got.Events)
	}
	wantCode(t, "a URL that is none", adminDo(t, h, "GET", "http://example.com/_weir/api/lookup?url=nope", "", adminToken), 400)
	wantCode(t, "without the token", adminDo(t, h, "GET", "http://example.com/_weir/api/series", "", ""), 403)
	var f admin.Fleet
	adminJSON(t, h, "api/fleet", &f)
	if f.Shared {
		t.Errorf("fleet: got %+v, want no shared store", f)
	}
}

// TestConsoleSampleTellsWhatMoved: a sample tells whether a counter moved since the last,
// which keeps the process's sampler running; a second already sampled is not sampled again.
// The test samples at seconds of its own, ahead of the engine's clock, which the process's
// sampler (woken by the fetch) reads: it cannot take one of them first.
func TestConsoleSampleTellsWhatMoved(t *testing.T) {
	clock := newFakeClock()
	o := staticOrigin(t, 200, []string{"Cache-Control", "max-age=600"}, "page")
	h := newTestHandler(t, Settings{Now: clock.Now, Log: discardLog}, o)
	steps := []struct {
		desc    string
		request bool
		advance time.Duration
		want    bool
	}{
		{desc: "the first sample", want: false},
		{desc: "a request, the next second", request: true, advance: time.Second, want: true},
		{desc: "a request, the same second", request: true, want: false},
		{desc: "the next second", advance: time.Second, want: true},
		{desc: "nothing, a second later", advance: time.Second, want: false},
	}
	at := clock.Now().Add(24 * time.Hour)
	for _, st := range steps {
		if st.request {
			wantCode(t, st.desc, do(t, h, "GET", "http://example.com/page"), 200)
		}
		at = at.Add(st.advance)
		if got := sampleConsole(h.e, at); got != st.want {
			t.Errorf("%s: moved %v, want %v", st.desc, got, st.want)
		}
	}
}

// TestConsoleSamplerEndsWhenQuiet: the process's sampler ends after consoleQuiet ticks in
// which nothing moved, so that an idle Weir runs no timer for it.
func TestConsoleSamplerEndsWhenQuiet(t *testing.T) {
	clock := newFakeClock()
	// The origin in a variable: Yaegi v0.16.1 panics on one built inline as an http.Handler
	// argument (docs/yaegi.md).
	o := staticOrigin(t, 200, nil, "page")
	newTestHandler(t, Settings{Now: clock.Now, Log: discardLog}, o)
	done := make(chan struct{})
	go func() {
		runConsole(time.Millisecond)
		close(done)
	}()
	select {
	case _, ok := <-done:
		if ok {
			t.Fatal("done sent a value, want it closed")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the sampler hangs: it did not end with nothing moving")
	}
}

// BenchmarkConsoleSample is one second's sample of one engine, as the process's sampler
// takes it once a second while anything moves: its cost per second, not per request.
func BenchmarkConsoleSample(b *testing.B) {
	clock := newFakeClock()
	origin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	h, err := New("bench-console-sample", Settings{Now: clock.Now, Log: discardLog}, origin)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		clock.Add(time.Second)
		sampleConsole(h.e, clock.Now())
	}
}

// TestConsoleFirstSampleCountsFromTheStart: what came before the first sample (the
// sampler sleeps until something wakes it) is counted, refusals and latency included. The
// process's sampler, which the fetches wake, may take a sample between two of the requests:
// then the rest are the next second's. Summed over the seconds, the counts are the requests.
func TestConsoleFirstSampleCountsFromTheStart(t *testing.T) {
	clock := newFakeClock()
	o := staticOrigin(t, 503, nil, "down")
	s := adminSettings(Settings{Now: clock.Now, Log: discardLog})
	s.Breaker.MinRequests = 2
	h := newTestHandler(t, s, o)
	for i := 0; i < 5; i++ {
		do(t, h, "GET", "http://api.example.com/p?i="+itoa(int64(i)))
	}
	clock.Add(time.Second)
	var v console.View
	adminJSON(t, h, "api/series", &v)
	tests := []struct {
		name string
		want float64
	}{
		{"client", 5}, {"origin", 2}, {consoleRefusedPrefix + "circuit-open", 3},
	}
	for _, tt := range tests {
		sum := 0.0
		for _, x := range column(t, v, tt.name) {
			sum += x
		}
		if sum != tt.want {
			t.Errorf("%s: got %v a second over %v, want %v in all", tt.name, column(t, v, tt.name), v.Times, tt.want)
		}
	}
	p95 := 0.0
	for _, x := range column(t, v, "p95") {
		if x > p95 {
			p95 = x
		}
	}
	if p95 <= 0 {
		t.Errorf("p95: got %v, want the fetches' latency", column(t, v, "p95"))
	}
}

// TestConsoleUserPurgeEvent: an operator's purge of a user's private entries is in the events
// as what=user, with the URL it named and never the user's identity (FR-PRV-3).
func TestConsoleUserPurgeEvent(t *testing.T) {
	clock := newFakeClock()
	o := staticOrigin(t, 200, []string{"Cache-Control", "private, max-age=60"}, "mine")
	s := adminSettings(privateSettings(clock))
	s.Log = discardLog
	h := newTestHandler(t, s, o)
	const identity = "secret-session-value"
	for _, body := range []string{`{"user":"` + identity + `"}`, `{"user":"` + identity + `","url":"http://example.com/account"}`} {
		wantCode(t, "purge "+body, adminDo(t, h, "POST", "http://example.com/_weir/api/purge", body, adminToken), 200)
	}
	var got struct{ Events []events.Record }
	adminJSON(t, h, "api/events?kind=purged", &got)
	if len(got.Events) != 2 {
		t.Fatalf("purge events: got %+v, want 2", got.Events)
	}
	for _, ev := range got.Events {
		if ev.Fields[0].Value != "user" {
			t.Errorf("purge event %+v: want what=user", ev)
		}
		if line := fmt.Sprintf("%+v", ev); strings.Contains(line, identity) {
			t.Errorf("purge event %s names the identity", line)
		}
	}
}
