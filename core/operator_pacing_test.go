package core

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/admin"
	"github.com/weirproxy/weir/core/breaker"
	"github.com/weirproxy/weir/core/budget"
	"github.com/weirproxy/weir/core/limit"
	"github.com/weirproxy/weir/core/store"
	"github.com/weirproxy/weir/internal/clocktest"
)

// operatorPacing is the settings of a middleware with the admin on, pacing as configured in
// list (none: nil), the limiter's maxQueueWait of 7s, and its timers in the test's hands.
func operatorPacing(clock *clocktest.Clock, list []Pace, logs *testLog) (Settings, chan paceTimer) {
	armed := make(chan paceTimer, 8)
	after := func(d time.Duration, f func()) func() bool {
		armed <- paceTimer{d: d, fire: f}
		return func() bool { return false }
	}
	s := adminSettings(Settings{Now: clock.Now, Log: discardLog, Pacing: list,
		Limiter: limit.Settings{MaxQueueWait: 7 * time.Second, AfterFunc: after}})
	if logs != nil {
		s.Events = logs.add
		s.LogFormat = "json"
	}
	return s, armed
}

// pacingState is the admin's list of paces in force.
func pacingState(t *testing.T, h *Handler) []admin.Pace {
	t.Helper()
	w := adminDo(t, h, "GET", "http://example.com/_weir/api/state", "", adminToken)
	wantCode(t, "state", w, 200)
	var st admin.State
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
		t.Fatalf("state is not JSON: %v", err)
	}
	return st.Pacing
}

// setPace posts body to api/pacing.
func setPace(t *testing.T, h *Handler, body string) *httptest.ResponseRecorder {
	t.Helper()
	return adminDo(t, h, "POST", "http://example.com/_weir/api/pacing", body, adminToken)
}

// noTimer fails if a paced request armed a wait.
func noTimer(t *testing.T, what string, armed chan paceTimer) {
	t.Helper()
	select {
	case pt := <-armed:
		t.Fatalf("%s: a request armed a pacing wait of %s, want none", what, pt.d)
	default:
	}
}

// TestOperatorPaceTurnsPacingOn: with no pacing configured, a pace set through the admin of
// one router paces every router's requests at once, pass-through ones included; cleared,
// they flow freely again.
func TestOperatorPaceTurnsPacingOn(t *testing.T) {
	clock := newFakeClock()
	s, armed := operatorPacing(clock, nil, nil)
	o := countingOrigin(t, []string{"Cache-Control", "no-store"})
	name := uniqueEngineName(t)
	one := mustNew(t, name, s, o)
	other := mustNew(t, name, s, o)
	if *one.paced != 0 {
		t.Fatalf("pacing on %d with nothing configured, want 0", *one.paced)
	}
	// A pass-through request (an upgrade) before: at once.
	wantCode(t, "before", do(t, other, "GET", "http://feeds.example/ws", "Upgrade", "websocket"), 200)
	noTimer(t, "before", armed)

	wantCode(t, "set", setPace(t, one, `{"name":"Feeds.Example.","rate":"3/10s"}`), 200)
	want := []admin.Pace{{Name: "feeds.example", Rate: "3/10s", Origin: admin.OriginOperator}}
	if got := pacingState(t, other); len(got) != 1 || got[0] != want[0] {
		t.Fatalf("pacing in force %+v, want %+v", got, want)
	}
	step := 10 * time.Second / 3
	wantCode(t, "first pass-through, at once", do(t, other, "GET", "http://feeds.example/ws", "Upgrade", "websocket"), 200)
	second := serveAsync(other, newRequest("GET", "http://www.feeds.example/ws", "Upgrade", "websocket"))
	if pt := nextTimer(t, armed); pt.d != step {
		t.Fatalf("second pass-through waits %s, want %s", pt.d, step)
	} else {
		pt.fire()
	}
	wantCode(t, "second pass-through, after its turn", awaitAnswer(t, second), 200)
	third := serveAsync(one, newRequest("GET", "http://feeds.example/miss"))
	if pt := nextTimer(t, armed); pt.d != 2*step {
		t.Fatalf("a miss through the other router waits %s, want %s", pt.d, 2*step)
	} else {
		pt.fire()
	}
	wantCode(t, "the miss, after its turn", awaitAnswer(t, third), 200)
	wantCode(t, "another host", do(t, other, "GET", "http://other.example/ws", "Upgrade", "websocket"), 200)
	noTimer(t, "another host", armed)

	wantCode(t, "clear", setPace(t, other, `{"name":"feeds.example","rate":"off"}`), 200)
	if got := pacingState(t, one); len(got) != 0 {
		t.Fatalf("pacing in force after clearing %+v, want none", got)
	}
	for i := 0; i < 4; i++ {
		wantCode(t, "cleared", do(t, other, "GET", "http://feeds.example/ws", "Upgrade", "websocket"), 200)
	}
	noTimer(t, "cleared", armed)
	if *one.paced != 0 {
		t.Errorf("pacing on %d once cleared, want 0", *one.paced)
	}
}

// TestOperatorPaceOverConfig: an operator's pace wins over the configuration's for its name
// and survives reloads, changed pacing included; cleared, the configuration's is back.
func TestOperatorPaceOverConfig(t *testing.T) {
	clock := newFakeClock()
	logs := &testLog{}
	configured := []Pace{{Name: "feeds.example", Rate: budget.Rate{N: 3, Per: 10 * time.Second}}}
	s, armed := operatorPacing(clock, configured, logs)
	o := countingOrigin(t, []string{"Cache-Control", "no-store"})
	name := uniqueEngineName(t)
	h := mustNew(t, name, s, o)
	wantCode(t, "set", setPace(t, h, `{"name":"feeds.example","rate":"1/1s"}`), 200)
	want := admin.Pace{Name: "feeds.example", Rate: "1/1s", Origin: admin.OriginOperator, Configured: "3/10s"}
	if got := pacingState(t, h); len(got) != 1 || got[0] != want {
		t.Fatalf("pacing in force %+v, want %+v", got, want)
	}

	s.Limiter.MaxConcurrent = 9
	s.Pacing = append(s.Pacing, Pace{Name: "example.org", Rate: budget.Rate{N: 5, Per: time.Minute}})
	h = mustNew(t, name, s, o)
	got := pacingState(t, h)
	if len(got) != 2 || got[0] != (admin.Pace{Name: "example.org", Rate: "5/1m", Origin: admin.OriginConfig}) || got[1] != want {
		t.Fatalf("after a reload: pacing in force %+v, want example.org from config and %+v", got, want)
	}
	wantCode(t, "first, at once", do(t, h, "GET", "http://feeds.example/a"), 200)
	second := serveAsync(h, newRequest("GET", "http://feeds.example/b"))
	if pt := nextTimer(t, armed); pt.d != time.Second {
		t.Fatalf("second waits %s, want the operator's 1s", pt.d)
	} else {
		pt.fire()
	}
	wantCode(t, "second", awaitAnswer(t, second), 200)

	wantCode(t, "clear", setPace(t, h, `{"name":"feeds.example","rate":""}`), 200)
	got = pacingState(t, h)
	if len(got) != 2 || got[1] != (admin.Pace{Name: "feeds.example", Rate: "3/10s", Origin: admin.OriginConfig}) {
		t.Fatalf("after clearing: pacing in force %+v, want feeds.example back at 3/10s from config", got)
	}
	w := setPace(t, h, `{"name":"feeds.example","rate":"off"}`)
	wantCode(t, "clear again", w, 400)
	if !strings.Contains(w.Body.String(), `name: \"feeds.example\" has no pace set by an operator`) {
		t.Errorf("clearing again: %s, want it to say there is no operator pace", w.Body.String())
	}
	if got := logs.with(`"event":"pacing_set"`); len(got) != 1 ||
		!strings.Contains(got[0], `"name":"feeds.example","rate":"1/1s","configured":"3/10s"`) {
		t.Errorf("pacing_set lines %q, want one naming feeds.example at 1/1s over 3/10s", got)
	}
	if got := logs.with(`"event":"pacing_cleared"`); len(got) != 1 || !strings.Contains(got[0], `"name":"feeds.example"`) {
		t.Errorf("pacing_cleared lines %q, want one naming feeds.example", got)
	}
}

// TestOperatorPaceRefused: a bad name or rate is refused with the field and the value named,
// and changes nothing.
func TestOperatorPaceRefused(t *testing.T) {
	s, _ := operatorPacing(newFakeClock(), nil, nil)
	// The origin in a variable first: Yaegi v0.16.1 cannot pass a call's result straight as
	// an http.Handler (docs/yaegi.md).
	o := countingOrigin(t, nil)
	h := newTestHandler(t, s, o)
	tests := []struct {
		desc, body string
		want       string
	}{
		{desc: "no name", body: `{"rate":"3/10s"}`, want: "name: a host or domain"},
		{desc: "a URL", body: `{"name":"https://feeds.example/","rate":"3/10s"}`, want: `name: \"https://feeds.example/\" is not a host or domain`},
		{desc: "a port", body: `{"name":"feeds.example:443","rate":"3/10s"}`, want: `name: \"feeds.example:443\"`},
		{desc: "a period no rate has", body: `{"name":"feeds.example","rate":"3/7s"}`, want: `rate: \"3/7s\" is not a rate`},
		{desc: "no count", body: `{"name":"feeds.example","rate":"0/1s"}`, want: `rate: \"0/1s\"`},
		{desc: "an unknown field", body: `{"name":"feeds.example","rate":"3/10s","burst":2}`, want: "unknown field"},
	}
	for _, tt := range tests {
		w := setPace(t, h, tt.body)
		if w.Code != 400 || !strings.Contains(w.Body.String(), tt.want) {
			t.Errorf("%s: %d %s, want 400 with %s", tt.desc, w.Code, w.Body.String(), tt.want)
		}
	}
	if got := pacingState(t, h); len(got) != 0 || *h.paced != 0 {
		t.Errorf("pacing in force %+v (on %d) after refusals, want none", got, *h.paced)
	}
}

// TestFleetSharesPaces: a pace set or cleared through one instance, another sharing the store
// applies at its next read; an instance that starts later takes it.
func TestFleetSharesPaces(t *testing.T) {
	clock := newFakeClock()
	shared := store.NewMemory(store.MemorySettings{})
	newInstance := func() (*fleet, *pacing) {
		p := newPacing()
		if err := p.configure([]Pace{{Name: "example.org", Rate: budget.Rate{N: 1, Per: time.Second}}}, time.Second, nil); err != nil {
			t.Fatal(err)
		}
		f, _ := newTestFleet(t, clock, breaker.Settings{}, p, shared)
		return f, p
	}
	rateOf := func(p *pacing, name string) string {
		for _, e := range p.entries() {
			if e.name == name && e.byOperator {
				return e.rate.String()
			}
		}
		return ""
	}
	a, pa := newInstance()
	b, pb := newInstance()
	r := budget.Rate{N: 2, Per: time.Second}
	if err := pa.setOperator("feeds.example", r); err != nil {
		t.Fatal(err)
	}
	if err := a.publishPace("feeds.example", r, false); err != nil {
		t.Fatal(err)
	}
	b.pollOnce()
	if got := rateOf(pb, "feeds.example"); got != "2/1s" {
		t.Fatalf("B after A set 2/1s: %q", got)
	}
	if paceOf(pb, "www.feeds.example") == nil || paceOf(pb, "example.org") == nil {
		t.Errorf("B paces %v, want feeds.example and its configured example.org", paces(pb).rates)
	}
	// B changes it, on what it has applied so far; A follows.
	r = budget.Rate{N: 5, Per: time.Minute}
	pb.setOperator("feeds.example", r)
	if err := b.publishPace("feeds.example", r, false); err != nil {
		t.Fatal(err)
	}
	a.pollOnce()
	if got := rateOf(pa, "feeds.example"); got != "5/1m" {
		t.Errorf("A after B set 5/1m: %q", got)
	}
	c, pc := newInstance()
	c.pollOnce()
	if got := rateOf(pc, "feeds.example"); got != "5/1m" {
		t.Errorf("a later instance: %q, want 5/1m", got)
	}
	pa.clearOperator("feeds.example")
	if err := a.publishPace("feeds.example", budget.Rate{}, true); err != nil {
		t.Fatal(err)
	}
	b.pollOnce()
	c.pollOnce()
	if got := rateOf(pb, "feeds.example") + rateOf(pc, "feeds.example"); got != "" {
		t.Errorf("B and C after A cleared: %q, want none", got)
	}
	if paceOf(pb, "feeds.example") != nil || paceOf(pb, "example.org") == nil {
		t.Errorf("B paces %v after the clear, want the configured example.org only", paces(pb).rates)
	}
}
