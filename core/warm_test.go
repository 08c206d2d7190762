package core

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/breaker"
	"github.com/weirproxy/weir/core/limit"
)

// warmTestOrigin answers every path with a storable 200 naming it, except /missing (404),
// /broken (500) and /private (no-store).
func warmTestOrigin(t *testing.T) *scriptOrigin {
	return newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/missing":
			w.WriteHeader(404)
			return
		case "/broken":
			w.WriteHeader(500)
			return
		case "/private":
			w.Header().Set("Cache-Control", "no-store")
		default:
			w.Header().Set("Cache-Control", "max-age=600")
		}
		w.Write([]byte("body of " + r.Host + r.URL.RequestURI()))
	})
}

// waitWarmed waits until n warming runs have ended.
func waitWarmed(t *testing.T, logs *testLog, n int) {
	t.Helper()
	waitFor(t, "warm_done", func() bool { return len(logs.with("event=warm_done")) >= n })
}

// wantWarmHit fails unless url is answered from the cache.
func wantWarmHit(t *testing.T, h *Handler, url string) {
	t.Helper()
	w := do(t, h, "GET", url)
	if cs := w.Header().Get("Cache-Status"); w.Code != 200 || !strings.Contains(cs, "; hit") {
		t.Errorf("GET %s: %d, Cache-Status %q, want a 200 hit", url, w.Code, cs)
	}
}

// TestWarmOnStart: a new engine fetches every path on every host under the scheme the host
// names, so that the first visitor's request is a hit; a rebuild with the same settings
// warms nothing, one that changes warm.* warms again.
func TestWarmOnStart(t *testing.T) {
	logs := &testLog{}
	o := warmTestOrigin(t)
	s := Settings{Now: newFakeClock().Now, Log: discardLog, Events: func(line string) { logs.add(line) },
		Warm: WarmSettings{Paths: []string{"/", "/list?b=2&a=1"}, Hosts: []string{"a.example.com", "https://B.example.com:8443"}}}
	name := uniqueEngineName(t)
	h := mustNew(t, name, s, o)
	waitWarmed(t, logs, 1)
	if got := o.callCount(); got != 4 {
		t.Fatalf("origin calls after warming = %d, want 4 (2 hosts, 2 paths)", got)
	}
	r := o.request(t, 1)
	if r.Host != "a.example.com" || r.URL.RequestURI() != "/" || r.Header.Get("User-Agent") != "Weir-warm" || r.TLS != nil {
		t.Errorf("first warm request: Host %q, URI %q, User-Agent %q, TLS %v; want a.example.com, /, Weir-warm, none",
			r.Host, r.URL.RequestURI(), r.Header.Get("User-Agent"), r.TLS != nil)
	}
	if r := o.request(t, 3); r.TLS == nil || r.Host != "b.example.com:8443" {
		t.Errorf("https host's warm request: Host %q, TLS %v; want b.example.com:8443 over TLS", r.Host, r.TLS != nil)
	}
	for _, u := range []string{"http://a.example.com/", "http://a.example.com/list?a=1&b=2", "https://b.example.com:8443/"} {
		wantWarmHit(t, h, u)
	}
	if got := o.callCount(); got != 4 {
		t.Errorf("origin calls after the visits = %d, want 4: every visit a hit", got)
	}
	// http://b.example.com was not warmed: its key's scheme is another.
	do(t, h, "GET", "http://b.example.com:8443/")
	if got := o.callCount(); got != 5 {
		t.Errorf("origin calls = %d, want 5: b.example.com was warmed under https only", got)
	}
	done := logs.with("event=warm_done")
	if len(done) != 1 || !strings.Contains(done[0], "reason=start") || !strings.Contains(done[0], "stored=4") {
		t.Errorf("warm_done lines %q, want one run at start that stored 4", done)
	}
	mustNew(t, name, s, o)
	s.Warm.Paths = append(s.Warm.Paths, "/more")
	mustNew(t, name, s, o)
	waitWarmed(t, logs, 2)
	started := logs.with("event=warm_started")
	if len(started) != 2 || !strings.Contains(started[1], "reason=config") || !strings.Contains(started[1], "urls=6") {
		t.Errorf("warm_started lines %q, want the start, then one for the changed warm.paths", started)
	}
	if done := logs.with("event=warm_done"); !strings.Contains(done[1], "stored=2 fresh=4") {
		t.Errorf("second run %q: want the 2 new URLs stored, the 4 fresh ones not fetched", done[1])
	}
}

// TestWarmAfterPurgeAll: a purge of everything warms again; a narrower purge does not.
func TestWarmAfterPurgeAll(t *testing.T) {
	logs := &testLog{}
	o := warmTestOrigin(t)
	s := adminSettings(Settings{Now: newFakeClock().Now, Log: discardLog, Events: func(line string) { logs.add(line) },
		Warm: WarmSettings{Paths: []string{"/a", "/b"}, Hosts: []string{"example.com"}}})
	h := newTestHandler(t, s, o)
	waitWarmed(t, logs, 1)
	wantCode(t, "purge host", adminDo(t, h, "POST", "http://example.com/_weir/api/purge", `{"host":"example.com"}`, adminToken), 200)
	wantCode(t, "purge all", adminDo(t, h, "POST", "http://example.com/_weir/api/purge", `{"all":true}`, adminToken), 200)
	waitWarmed(t, logs, 2)
	if got := o.callCount(); got != 4 {
		t.Errorf("origin calls = %d, want 4: warmed at start and after the purge of everything", got)
	}
	if started := logs.with("event=warm_started"); len(started) != 2 || !strings.Contains(started[1], "reason=purge") {
		t.Errorf("warm_started lines %q, want the start and the purge", started)
	}
	wantWarmHit(t, h, "http://example.com/a")
	wantWarmHit(t, h, "http://example.com/b")
}

// TestWarmReportsFailures: a path that answers anything but 2xx or 3xx, or that the cache
// may not store, is named in a warm_failed event and counted in weir_warm_total.
func TestWarmReportsFailures(t *testing.T) {
	logs := &testLog{}
	o := warmTestOrigin(t)
	s := adminSettings(Settings{Now: newFakeClock().Now, Log: discardLog, Events: func(line string) { logs.add(line) },
		Warm: WarmSettings{Paths: []string{"/ok", "/missing", "/broken", "/private"}, Hosts: []string{"example.com"}}})
	h := newTestHandler(t, s, o)
	waitWarmed(t, logs, 1)
	tests := []struct {
		desc string
		want string
	}{
		{desc: "a 404", want: "url=http://example.com/missing status=404"},
		{desc: "a 500", want: "url=http://example.com/broken status=500"},
		{desc: "no-store", want: `url=http://example.com/private status=200 reason="not stored: no-store"`},
	}
	failed := logs.with("event=warm_failed")
	for _, tt := range tests {
		found := false
		for _, line := range failed {
			found = found || strings.Contains(line, tt.want)
		}
		if !found {
			t.Errorf("%s: no warm_failed line with %q in %q", tt.desc, tt.want, failed)
		}
	}
	if len(failed) != 3 {
		t.Errorf("warm_failed lines %q, want 3", failed)
	}
	if done := logs.with("event=warm_done"); !strings.Contains(done[0], "stored=1 fresh=0 unstored=1 failed=2") {
		t.Errorf("warm_done %q, want stored=1 unstored=1 failed=2", done[0])
	}
	body := adminDo(t, h, "GET", "http://example.com/_weir/metrics", "", adminToken).Body.String()
	for _, want := range []string{`weir_warm_total{result="stored"} 1`, `weir_warm_total{result="failed"} 2`, `weir_warm_total{result="unstored"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// TestWarmTimeout: warming stops at warm.timeout on the engine's clock; what is left is
// counted, never fetched.
func TestWarmTimeout(t *testing.T) {
	logs := &testLog{}
	clock := newFakeClock()
	o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		// Each answer takes 20s of the engine's clock.
		clock.Add(20 * time.Second)
		w.Header().Set("Cache-Control", "max-age=600")
		w.Write([]byte("ok"))
	})
	s := Settings{Now: clock.Now, Log: discardLog, Events: func(line string) { logs.add(line) },
		Warm: WarmSettings{Paths: []string{"/1", "/2", "/3", "/4"}, Hosts: []string{"example.com"}, Timeout: 30 * time.Second}}
	newTestHandler(t, s, o)
	waitWarmed(t, logs, 1)
	if got := o.callCount(); got != 2 {
		t.Errorf("origin calls = %d, want 2: the third starts past the 30s", got)
	}
	if done := logs.with("event=warm_done"); !strings.Contains(done[0], "stored=2") || !strings.Contains(done[0], "timed_out=2 took=40s") {
		t.Errorf("warm_done %q, want 2 stored, 2 left at the timeout after 40s", done[0])
	}
}

// TestWarmKeepsForegroundReserve: warming never waits for a slot nor takes the last quarter
// of the pool: with 3 of 4 slots held by visitors, its fetch is refused and reported.
func TestWarmKeepsForegroundReserve(t *testing.T) {
	logs := &testLog{}
	o := warmTestOrigin(t)
	s := adminSettings(Settings{Now: newFakeClock().Now, Log: discardLog, Events: func(line string) { logs.add(line) },
		Limiter: limit.Settings{MaxConcurrent: 4},
		Warm:    WarmSettings{Paths: []string{"/w"}, Hosts: []string{"example.com"}}})
	h := newTestHandler(t, s, o)
	waitWarmed(t, logs, 1)
	// Three of four slots held: a fourth would leave none of the foreground's quarter.
	for n := 2; n <= 4; n++ {
		o.hold(n)
	}
	var pending []*pendingAnswer
	for _, p := range []string{"/f1", "/f2", "/f3"} {
		pending = append(pending, serveAsync(h, newRequest("GET", "http://example.com"+p)))
	}
	o.waitEntered(t, 4)
	wantCode(t, "purge all", adminDo(t, h, "POST", "http://example.com/_weir/api/purge", `{"all":true}`, adminToken), 200)
	waitWarmed(t, logs, 2)
	if got := o.callCount(); got != 4 {
		t.Errorf("origin calls = %d, want 4: warming's fetch kept from the origin", got)
	}
	failed := logs.with("event=warm_failed")
	if len(failed) != 1 || !strings.Contains(failed[0], "url=http://example.com/w reason="+limit.Detail(limit.ErrNoBackgroundSlot)) {
		t.Errorf("warm_failed lines %q, want /w refused for want of a background slot", failed)
	}
	o.releaseAll()
	for _, p := range pending {
		wantCode(t, "visitor", awaitAnswer(t, p), 200)
	}
}

// TestWarmSettingsRejected: bad warm.* values fail New with the field and value named.
func TestWarmSettingsRejected(t *testing.T) {
	many := make([]string, MaxWarmPaths+1)
	for i := range many {
		many[i] = "/p" + itoa(int64(i))
	}
	tests := []struct {
		desc string
		warm WarmSettings
		want string
	}{
		{desc: "a path without its slash", warm: WarmSettings{Paths: []string{"index.html"}, Hosts: []string{"a"}}, want: `warm.paths: "index.html"`},
		{desc: "too many paths", warm: WarmSettings{Paths: many, Hosts: []string{"a"}}, want: "warm.paths: 33 paths, at most 32"},
		{desc: "a scheme Weir does not serve", warm: WarmSettings{Paths: []string{"/"}, Hosts: []string{"ftp://a.example.com"}}, want: `warm.hosts: "ftp://a.example.com"`},
		{desc: "a URL with a path", warm: WarmSettings{Paths: []string{"/"}, Hosts: []string{"https://a.example.com/x"}}, want: `warm.hosts: "https://a.example.com/x"`},
		{desc: "a negative timeout", warm: WarmSettings{Timeout: -time.Second}, want: "warm.timeout: -1s"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			_, err := New(uniqueEngineName(t), Settings{Warm: tt.warm}, http.NotFoundHandler())
			if err == nil || !errors.Is(err, ErrSettings) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New: %v, want an invalid setting naming %q", err, tt.want)
			}
		})
	}
}

// TestWarmOnRecovery: when a host's breaker closes after being open, the warm.paths of that
// host, and of no other, are fetched again.
func TestWarmOnRecovery(t *testing.T) {
	logs := &testLog{}
	clock := newFakeClock()
	down := false
	o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if down && r.Host == "a.example.com" {
			w.WriteHeader(503)
			return
		}
		w.Header().Set("Cache-Control", "max-age=1")
		w.Write([]byte("body of " + r.Host + r.URL.RequestURI()))
	})
	s := Settings{Now: clock.Now, Log: discardLog, Events: func(line string) { logs.add(line) },
		Breaker: breaker.Settings{Rand: func() float64 { return 0.5 }},
		Warm:    WarmSettings{Paths: []string{"/w"}, Hosts: []string{"a.example.com", "b.example.com"}}}
	h := newTestHandler(t, s, o)
	waitWarmed(t, logs, 1)
	if got := o.count("/w"); got != 2 {
		t.Fatalf("warm fetches on start = %d, want 2", got)
	}
	// a.example.com fails until its breaker opens, then recovers: its probe closes it.
	down = true
	for i := 0; i < 40; i++ {
		if strings.Contains(do(t, h, "GET", "http://a.example.com/x/"+strconv.Itoa(i)).Header().Get("Cache-Status"), "circuit-open") {
			break
		}
	}
	b, ok := h.e.breakers.Lookup("a.example.com")
	if !ok || b.State(clock.Now()) != breaker.StateOpen {
		t.Fatal("a.example.com's breaker did not open")
	}
	down = false
	clock.Add(time.Minute)
	do(t, h, "GET", "http://a.example.com/probe")
	waitWarmed(t, logs, 2)
	if got := o.count("/w"); got != 3 {
		t.Errorf("warm fetches after a.example.com recovered = %d, want 3 (its path once more, not b's)", got)
	}
	if got := len(logs.with("reason=recovered")); got < 1 {
		t.Errorf("no warm_started with reason=recovered in %q", logs.all())
	}
}
