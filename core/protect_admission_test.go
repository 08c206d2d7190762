package core

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"
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
