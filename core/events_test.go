package core

import (
	"net/http"
	"strings"
	"testing"

	"github.com/weirproxy/weir/core/admin"
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
	got := logs.with("event=config_applied")
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
	if got := logs.with(`"event":"breaker_opened_by_hand"`); len(got) != 1 || !strings.Contains(got[0], `"scope":"example.com"`) {
		t.Errorf("breaker_opened_by_hand lines %q, want one naming example.com", got)
	}
	if got := logs.with(`"event":"breaker_closed_by_hand"`); len(got) != 1 {
		t.Errorf("breaker_closed_by_hand lines %q, want one", got)
	}
	// The summary's timer runs on the real clock: one line, a second after the first shed.
	waitFor(t, "the shed line", func() bool { return len(logs.with(`"event":"shed"`)) > 0 })
	if got := logs.with(`"event":"shed"`); len(got) != 1 || !strings.Contains(got[0], `"count":5`) || !strings.Contains(got[0], "circuit-open:5") {
		t.Errorf("shed lines %q, want one counting 5 circuit-open", got)
	}
}
