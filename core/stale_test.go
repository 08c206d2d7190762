package core

import (
	"bytes"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestStalePolicyIfError: stale.ifError gives a stored answer whose origin sent no
// stale-if-error of its own that window: past freshness, it answers an origin that fails,
// with its Age, the reason in Cache-Status, and counted as stale; the origin's own directives
// come first.
func TestStalePolicyIfError(t *testing.T) {
	tests := []struct {
		desc      string
		policy    time.Duration
		cc        string
		errStatus int
		advance   time.Duration
		status    int
		cs        string
		body      string
	}{
		{desc: "a 503", policy: time.Hour, cc: "max-age=10", errStatus: 503, advance: 20 * time.Second,
			status: 200, cs: "Weir; hit; ttl=-10; detail=stale-if-error", body: "good"},
		{desc: "a 502: a dropped or refused connection through Traefik", policy: time.Hour, cc: "max-age=10", errStatus: 502, advance: 20 * time.Second,
			status: 200, cs: "Weir; hit; ttl=-10; detail=stale-if-error", body: "good"},
		{desc: "a 504: a timeout through Traefik", policy: time.Hour, cc: "max-age=10", errStatus: 504, advance: 20 * time.Second,
			status: 200, cs: "Weir; hit; ttl=-10; detail=stale-if-error", body: "good"},
		{desc: "a 500", policy: time.Hour, cc: "max-age=10", errStatus: 500, advance: 20 * time.Second,
			status: 200, cs: "Weir; hit; ttl=-10; detail=stale-if-error", body: "good"},
		{desc: "an answer fresh by cache.defaultTTL", policy: time.Hour, errStatus: 503, advance: 20 * time.Second,
			status: 200, cs: "Weir; hit; ttl=-10; detail=stale-if-error", body: "good"},
		{desc: "no policy", cc: "max-age=10", errStatus: 503, advance: 20 * time.Second,
			status: 503, cs: "Weir; fwd=uri-miss; detail=origin-error", body: "down"},
		{desc: "past the window", policy: time.Minute, cc: "max-age=10", errStatus: 503, advance: 2 * time.Minute,
			status: 503, cs: "Weir; fwd=uri-miss; detail=origin-error", body: "down"},
		{desc: "the origin's stale-if-error first", policy: time.Hour, cc: "max-age=10, stale-if-error=5", errStatus: 503, advance: 20 * time.Second,
			status: 503, cs: "Weir; fwd=uri-miss; detail=origin-error", body: "down"},
		{desc: "must-revalidate turns it off", policy: time.Hour, cc: "max-age=10, must-revalidate", errStatus: 503, advance: 20 * time.Second,
			status: 503, cs: "Weir; fwd=uri-miss; detail=origin-error", body: "down"},
		{desc: "s-maxage turns it off", policy: time.Hour, cc: "s-maxage=10", errStatus: 503, advance: 20 * time.Second,
			status: 503, cs: "Weir; fwd=uri-miss; detail=origin-error", body: "down"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			clock := newFakeClock()
			var header []string
			if tc.cc != "" {
				header = []string{"Cache-Control", tc.cc}
			}
			o := failingOrigin(t, 1, header, "good", tc.errStatus)
			h := newTestHandler(t, Settings{Now: clock.Now, DefaultTTL: 10 * time.Second, Stale: StaleSettings{IfError: tc.policy}}, o)
			const url = "http://example.com/policy"
			do(t, h, http.MethodGet, url)
			clock.Add(tc.advance)
			w := do(t, h, http.MethodGet, url)
			wantAnswer(t, w, tc.status, tc.cs, tc.body)
			if tc.status != 200 {
				return
			}
			if got := w.Header().Get("Age"); got != "20" {
				t.Errorf("Age = %q, want 20", got)
			}
			wantMetric(t, h, `weir_requests_total{outcome="stale"} 1`)
			wantMetric(t, h, `weir_stale_total{reason="stale-if-error"} 1`)
		})
	}
}

// TestStalePolicyWhileRevalidate: stale.whileRevalidate answers at once with the stale copy
// while one background refresh goes to the origin.
func TestStalePolicyWhileRevalidate(t *testing.T) {
	clock := newFakeClock()
	o := countingOrigin(t, []string{"Cache-Control", "max-age=10"})
	h := newTestHandler(t, Settings{Now: clock.Now, Stale: StaleSettings{WhileRevalidate: time.Minute}}, o)
	const url = "http://example.com/swr-policy"
	do(t, h, http.MethodGet, url)
	clock.Add(15 * time.Second)
	o.hold(2)
	for i := 0; i < 3; i++ {
		w := awaitAnswer(t, serveAsync(h, newRequest(http.MethodGet, url)))
		wantAnswer(t, w, 200, "Weir; hit; ttl=-5; detail=stale-while-revalidate", "v1")
	}
	o.waitEntered(t, 2)
	o.release(2)
	waitIdle(t, h)
	wantAnswer(t, do(t, h, http.MethodGet, url), 200, "Weir; hit; ttl=10", "v2")
	wantCalls(t, o, 2)
	wantMetric(t, h, `weir_stale_total{reason="stale-while-revalidate"} 3`)
}

// TestStalePolicyAnswersRefusals: within stale.ifError a stale copy answers what a
// protection refuses: an open breaker, admission.
func TestStalePolicyAnswersRefusals(t *testing.T) {
	t.Run("an open breaker", func(t *testing.T) {
		clock := newFakeClock()
		o := countingOrigin(t, []string{"Cache-Control", "max-age=10"})
		h := newTestHandler(t, Settings{Now: clock.Now, Stale: StaleSettings{IfError: time.Hour}}, o)
		const url = "http://example.com/open"
		do(t, h, http.MethodGet, url)
		clock.Add(20 * time.Second)
		if err := (operator{e: h.e, s: *h.s}).OpenBreaker("example.com", time.Minute); err != nil {
			t.Fatal(err)
		}
		wantAnswer(t, do(t, h, http.MethodGet, url), 200, "Weir; hit; ttl=-10; detail=circuit-open", "v1")
		wantCalls(t, o, 1)
		wantMetric(t, h, `weir_stale_total{reason="circuit-open"} 1`)
	})
	t.Run("admission past its limit", func(t *testing.T) {
		clock := newFakeClock()
		o := countingOrigin(t, []string{"Cache-Control", "max-age=10"})
		var lag int64
		h := newTestHandler(t, Settings{Now: clock.Now, Log: discardLog, Stale: StaleSettings{IfError: time.Hour},
			Admission: AdmissionSettings{KneeInFlight: 10, Lag: func() time.Duration { return time.Duration(atomic.LoadInt64(&lag)) }}}, o)
		front := h.Front()
		const url = "http://example.com/admitted"
		wantCode(t, "under the knee", serveRequest(t, front, newRequest(http.MethodGet, url)), 200)
		clock.Add(20 * time.Second)
		atomic.StoreInt64(&lag, int64(time.Second))
		wantAnswer(t, serveRequest(t, front, newRequest(http.MethodGet, url)), 200, "Weir; hit; ttl=-10; detail=admission", "v1")
		w := serveRequest(t, front, newRequest(http.MethodGet, "http://example.com/never-stored"))
		wantAnswer(t, w, 503, "Weir; detail=admission", "overloaded, retry later\n")
		if got := w.Header().Get("Retry-After"); got != "1" {
			t.Errorf("Retry-After %q, want 1", got)
		}
		wantCalls(t, o, 1)
	})
}

// wantMetric fails unless h's metrics hold the line sample.
func wantMetric(t *testing.T, h *Handler, sample string) {
	t.Helper()
	var text bytes.Buffer
	if err := writeMetrics(h.e, &text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "\n"+sample+"\n") {
		t.Errorf("metrics lack %q", sample)
	}
}
