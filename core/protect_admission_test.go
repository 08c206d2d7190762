package core

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/admit"
)

// TestAdmission: past the knee of requests in flight, the host holding more than its share
// and a name never seen are refused with 503 at once, while another host is served; with
// scheduler lag past the limit, only protected paths (admission.protect, admin.path) are.
func TestAdmission(t *testing.T) {
	o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Write([]byte("ok"))
	})
	var lag int64
	s := Settings{Log: discardLog, Admission: AdmissionSettings{
		KneeInFlight: 2, HostKneeInFlight: 1, Protect: []string{"/health"},
		Lag: func() time.Duration { return time.Duration(atomic.LoadInt64(&lag)) },
	}}
	h := newTestHandler(t, s, o)
	front := h.Front()
	serve := func(url string) *pendingAnswer { return serveAsync(front, newRequest("GET", url)) }
	// Names seen under the knee.
	wantCode(t, "flood host under the knee", awaitAnswer(t, serve("http://flood.test/x")), 200)
	wantCode(t, "calm host under the knee", awaitAnswer(t, serve("http://calm.test/y")), 200)

	o.hold(3)
	o.hold(4)
	first := serve("http://flood.test/p1")
	second := serve("http://flood.test/p2")
	o.waitEntered(t, 3)
	o.waitEntered(t, 4)

	steps := []struct {
		desc   string
		url    string
		status int
		detail string
	}{
		{desc: "the flood host past the knee", url: "http://flood.test/p3", status: 503, detail: reasonAdmissionHost.name},
		{desc: "a name no router expects", url: "http://random.test/", status: 503, detail: reasonAdmissionName.name},
		{desc: "another host", url: "http://calm.test/y", status: 200},
	}
	for _, st := range steps {
		w := awaitAnswer(t, serve(st.url))
		wantCode(t, st.desc, w, st.status)
		checkCacheStatusShape(t, w.Header().Get("Cache-Status"))
		if st.detail == "" {
			continue
		}
		if got, want := w.Header().Get("Cache-Status"), "Weir; detail="+st.detail; got != want {
			t.Errorf("%s: Cache-Status %q, want %q", st.desc, got, want)
		}
		if got := w.Header().Get("Retry-After"); got != "1" {
			t.Errorf("%s: Retry-After %q, want 1", st.desc, got)
		}
	}
	atomic.StoreInt64(&lag, int64(60*time.Millisecond))
	wantCode(t, "another host past the lag limit", awaitAnswer(t, serve("http://calm.test/y")), 503)
	wantCode(t, "a protected path past the lag limit", awaitAnswer(t, serve("http://flood.test/health")), 200)
	wantCode(t, "a path under a protected prefix past the lag limit", awaitAnswer(t, serve("http://flood.test/health/live")), 200)
	wantCode(t, "a longer name than a protected prefix past the lag limit", awaitAnswer(t, serve("http://flood.test/healthz")), 503)
	atomic.StoreInt64(&lag, 0)

	o.release(3)
	o.release(4)
	wantCode(t, "held flood request", awaitAnswer(t, first), 200)
	wantCode(t, "held flood request", awaitAnswer(t, second), 200)
	if n := h.admission.InFlight(); n != 0 {
		t.Errorf("in flight after every answer: %d, want 0", n)
	}
	if got := h.e.metrics.shed[shedIndex(t, reasonAdmissionHost.name)].N; got != 1 {
		t.Errorf("shed admission-host counted %d, want 1", got)
	}
}

// TestAdmissionOneLagSampler: every middleware with admission reads the process's one lag
// sampler; a sampler is held by each engine's controller across reloads that keep it, handed
// from the old controller to the new by reloads that replace it, stops ticking while no
// request is in flight, and stops for good when the last engine using it turns admission off.
func TestAdmissionOneLagSampler(t *testing.T) {
	o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Write([]byte("ok"))
	})
	procA := newTestHandler(t, Settings{Log: discardLog, Admission: AdmissionSettings{KneeInFlight: 8}}, o)
	procB := newTestHandler(t, Settings{Log: discardLog, Admission: AdmissionSettings{KneeInFlight: 9}}, o)
	if procA.admission.Sampler() != admit.ProcessLag() || procB.admission.Sampler() != admit.ProcessLag() {
		t.Errorf("two middlewares' samplers: %p and %p, want the process's %p",
			procA.admission.Sampler(), procB.admission.Sampler(), admit.ProcessLag())
	}

	starts := make(chan chan time.Time, 16)
	stops := make(chan struct{}, 16)
	// The parameter named: Yaegi v0.16.1 calls a func literal with an unnamed parameter, from
	// another package, with its results shifted (a Duration set into the channel).
	l := admit.NewLagSampler(admit.LagSettings{Ticker: func(every time.Duration) (<-chan time.Time, func()) {
		c := make(chan time.Time)
		starts <- c
		return c, func() { stops <- struct{}{} }
	}})
	settings := func(knee int) Settings {
		return Settings{Log: discardLog, Admission: AdmissionSettings{KneeInFlight: knee, LagKnee: time.Hour, LagLimit: time.Hour, LagSampler: l}}
	}
	users := func(what string, want int) {
		t.Helper()
		if got := l.Users(); got != want {
			t.Errorf("%s: %d controllers hold the sampler, want %d", what, got, want)
		}
	}
	nameA, nameB := uniqueEngineName(t), uniqueEngineName(t)
	a := mustNew(t, nameA, settings(8), o)
	mustNew(t, nameB, settings(8), o)
	users("two middlewares", 2)
	if !l.Sleeping() {
		t.Errorf("nothing in flight: the sampler ticks")
	}

	o.hold(1)
	first := serveAsync(a.Front(), newRequest("GET", "http://a.test/x"))
	o.waitEntered(t, 1)
	var ticks chan time.Time
	select {
	case c := <-starts:
		ticks = c
	case <-time.After(5 * time.Second):
		t.Fatalf("a request in flight: no ticker started: hangs")
	}
	if l.InFlight() != 1 {
		t.Errorf("in flight: %d, want 1", l.InFlight())
	}
	o.release(1)
	wantCode(t, "the request that woke the sampler", awaitAnswer(t, first), 200)
	now := time.Now()
	select {
	case ticks <- now:
		select {
		case <-stops:
		case <-time.After(5 * time.Second):
			t.Fatalf("a tick with nothing in flight: the ticker is not stopped: hangs")
		}
	case <-stops:
	case <-time.After(5 * time.Second):
		t.Fatalf("nothing in flight: the sampler takes no tick: hangs")
	}
	if !l.Sleeping() || l.Lag() != 0 {
		t.Errorf("after the request: sleeping %t, lag %v; want asleep, no lag", l.Sleeping(), l.Lag())
	}

	mustNew(t, nameA, settings(8), o)
	users("a reload keeping admission", 2)
	mustNew(t, nameA, settings(16), o)
	users("a reload replacing a's controller", 2)
	mustNew(t, nameA, Settings{Log: discardLog}, o)
	users("a's admission off", 1)
	mustNew(t, nameB, Settings{Log: discardLog}, o)
	users("b's admission off", 0)
	if n := len(starts); n != 0 {
		t.Errorf("%d tickers started while nothing was in flight, want none", n)
	}
}
