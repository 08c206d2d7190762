package core

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/admin"
	"github.com/weirproxy/weir/core/breaker"
)

// TestConfigAppliedOncePerChange: Traefik builds a middleware once per router on every
// reload; the event says what changed, once.
func TestConfigAppliedOncePerChange(t *testing.T) {
	logs := &testLog{}
	s := Settings{Now: newFakeClock().Now, Log: discardLog, Events: func(line string) { logs.add(line) }}
	name := uniqueEngineName(t)
	for i := 0; i < 3; i++ {
		mustNew(t, name, s, http.NotFoundHandler())
	}
	s.Limiter.MaxConcurrent = 7
	for i := 0; i < 3; i++ {
		mustNew(t, name, s, http.NotFoundHandler())
	}
	got := logs.with("level=info event=config_applied ")
	if len(got) != 2 {
		t.Fatalf("config_applied lines = %q, want 2 (the first build, then the change)", got)
	}
	if !strings.Contains(got[0], "reload=false cache_kept=false") || !strings.Contains(got[1], "reload=true cache_kept=true") {
		t.Errorf("lines %q: want a first build, then a reload that kept the cache", got)
	}
	if !strings.Contains(got[0], "middleware="+name) && !strings.Contains(got[0], `middleware="`+name) {
		t.Errorf("line %q does not name the middleware %s", got[0], name)
	}
}

// TestEventsByHandAndShed: opening and closing a breaker by hand are events; requests refused
// while it is open are summed in one shed line, not logged one by one.
func TestEventsByHandAndShed(t *testing.T) {
	logs := &testLog{}
	s := Settings{Log: discardLog, Events: func(line string) { logs.add(line) }, LogFormat: "json",
		AdminPath: "/_weir", AdminAccess: admin.Access{Token: adminToken}}
	o := staticOrigin(t, 200, nil, "ok")
	h := newTestHandler(t, s, o)
	wantCode(t, "open", adminDo(t, h, "POST", "http://example.com/_weir/api/breakers/open", `{"key":"example.com","for":"1m"}`, adminToken), 200)
	for i := 0; i < 5; i++ {
		wantCode(t, "while open", do(t, h, "GET", "http://example.com/p"+itoa(int64(i))), 503)
	}
	wantCode(t, "close", adminDo(t, h, "POST", "http://example.com/_weir/api/breakers/close", `{"key":"example.com"}`, adminToken), 200)
	if got := logs.with(`"level":"info","event":"breaker_opened_by_hand"`); len(got) != 1 || !strings.Contains(got[0], `"scope":"example.com"`) {
		t.Errorf("breaker_opened_by_hand lines %q, want one naming example.com", got)
	}
	if got := logs.with(`"level":"info","event":"breaker_closed_by_hand"`); len(got) != 1 {
		t.Errorf("breaker_closed_by_hand lines %q, want one", got)
	}
	// The summary's timer runs on the real clock: one line, a second after the first shed.
	waitFor(t, "the shed line", func() bool { return len(logs.with(`"event":"shed"`)) > 0 })
	if got := logs.with(`"level":"warn","event":"shed"`); len(got) != 1 || !strings.Contains(got[0], `"count":5`) || !strings.Contains(got[0], "circuit-open:5") {
		t.Errorf("shed lines %q, want one counting 5 circuit-open", got)
	}
}

// TestBreakerEvents: a breaker that trips, probes and closes says so once each, with the
// ratio that opened it.
func TestBreakerEvents(t *testing.T) {
	clock := newFakeClock()
	logs := &testLog{}
	down := true
	o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if down {
			w.WriteHeader(503)
			return
		}
		w.Write([]byte("ok"))
	})
	s := protectSettings(clock, logs)
	s.Breaker.MinRequests = 4
	s.Negative.TTL = time.Millisecond
	h := newTestHandler(t, s, o)
	for i := 0; i < 6; i++ {
		do(t, h, "GET", "http://api.example.com/p"+itoa(int64(i)))
	}
	opened := logs.with("level=warn event=breaker_opened ")
	if len(opened) != 1 || !strings.Contains(opened[0], "scope=api.example.com reason=failure-ratio ratio=1 failures=4 requests=4 open_for=5s") {
		t.Fatalf("breaker_opened lines %q, want one with the ratio, the counts and the open time", opened)
	}
	clock.Add(6 * time.Second)
	down = false
	wantCode(t, "the probe", do(t, h, "GET", "http://api.example.com/probe"), 200)
	if got := logs.with("level=info event=breaker_half_open "); len(got) != 1 {
		t.Errorf("breaker_half_open lines %q, want one", got)
	}
	if got := logs.with("level=info event=breaker_closed "); len(got) != 1 || !strings.Contains(got[0], "scope=api.example.com") {
		t.Errorf("breaker_closed lines %q, want one", got)
	}
}

// TestBreakerOverrides: breaker.overrides and the admin give a key parameters of its own,
// marked as such; a reload that drops one removes it; reset returns to the defaults.
func TestBreakerOverrides(t *testing.T) {
	clock := newFakeClock()
	name := uniqueEngineName(t)
	ko, err := breaker.ParseOverrides(breaker.ScopeHost, []string{"slow.example.com: window=30s failureRatio=0.3"})
	if err != nil {
		t.Fatal(err)
	}
	s := adminSettings(Settings{Now: clock.Now, Log: discardLog, BreakerOverrides: ko})
	h := mustNew(t, name, s, http.NotFoundHandler())
	params := func(key string) map[string]admin.Param {
		t.Helper()
		st := operator{e: h.e, s: s}.State(clock.Now())
		for _, b := range st.Breakers {
			if b.Key == key {
				out := make(map[string]admin.Param)
				for _, p := range b.Params {
					out[p.Name] = p
				}
				return out
			}
		}
		return nil
	}
	p := params("slow.example.com")
	if p == nil || p["window"] != (admin.Param{Name: "window", Value: "30s", Override: true}) ||
		!p["failureRatio"].Override || p["openFor"].Override {
		t.Fatalf("slow.example.com's parameters %+v, want window and failureRatio overridden", p)
	}
	wantCode(t, "override by hand", adminDo(t, h, "POST", "http://x/_weir/api/breakers/override",
		`{"key":"API.example.com","params":"openFor=20s"}`, adminToken), 200)
	if p := params("api.example.com"); p == nil || p["openFor"] != (admin.Param{Name: "openFor", Value: "20s", Override: true}) {
		t.Errorf("api.example.com's parameters %+v, want openFor=20s overridden", p)
	}
	w := adminDo(t, h, "POST", "http://x/_weir/api/breakers/override", `{"key":"a.example.com","params":"window=soon"}`, adminToken)
	if w.Code != 400 || !strings.Contains(w.Body.String(), "window") {
		t.Errorf("a bad override: %d %q, want 400 naming window", w.Code, w.Body.String())
	}
	// A reload without the configured override removes it; the one made by hand stays.
	s.BreakerOverrides = nil
	h = mustNew(t, name, s, http.NotFoundHandler())
	if p := params("slow.example.com"); p != nil && p["window"].Override {
		t.Errorf("after the reload: %+v, want slow.example.com's override gone", p)
	}
	if p := params("api.example.com"); p == nil || !p["openFor"].Override {
		t.Errorf("after the reload: %+v, want api.example.com's override kept", p)
	}
	wantCode(t, "reset", adminDo(t, h, "POST", "http://x/_weir/api/breakers/reset", `{"key":"api.example.com"}`, adminToken), 200)
	if p := params("api.example.com"); p != nil && p["openFor"].Override {
		t.Errorf("after reset: %+v, want the defaults", p)
	}
	wantCode(t, "declare", adminDo(t, h, "POST", "http://x/_weir/api/breakers/declare", `{"key":"new.example.com"}`, adminToken), 200)
	if p := params("new.example.com"); p == nil {
		t.Errorf("a declared key is not listed")
	}
}
