package testmod

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/weirproxy/weir/core"
	"github.com/weirproxy/weir/core/admin"
)

// TestEngineExposition: what an engine serves at admin.path/metrics, after hits, misses,
// passes, a tripped breaker and shed requests, is read by Prometheus' own text parser, and
// holds every family an operator needs with the values the traffic made.
func TestEngineExposition(t *testing.T) {
	origin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/down") {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Cache-Control", "max-age=60")
		w.Write([]byte("body"))
	})
	s := core.Settings{AdminPath: "/_weir", AdminAccess: admin.Access{Token: "engine-metrics-token-24ch"}, Log: func(string) {}, Events: func(string) {}}
	s.Breaker.MinRequests = 2
	h, err := core.New("exposition-test", s, origin)
	if err != nil {
		t.Fatal(err)
	}
	serve := func(method, url string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, url, nil)
		r.RequestURI = r.URL.RequestURI()
		if strings.Contains(url, "/_weir/") {
			r.Header.Set("Authorization", "Bearer engine-metrics-token-24ch")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for _, u := range []string{"/a", "/a", "/a?q=1", "/a?q=1", "/b"} {
		serve("GET", "http://example.com"+u)
	}
	serve("POST", "http://example.com/form")
	for _, u := range []string{"/down1", "/down2", "/down3", "/down4"} {
		serve("GET", `http://down.example.com`+u)
	}
	w := serve("GET", "http://example.com/_weir/metrics")
	if w.Code != http.StatusOK {
		t.Fatalf("metrics: status %d", w.Code)
	}
	if got, want := w.Header().Get("Content-Type"), string(expfmt.NewFormat(expfmt.TypeTextPlain)); got != want {
		t.Errorf("Content-Type %q, want %q", got, want)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(w.Body.Bytes()))
	if err != nil {
		t.Fatalf("Prometheus cannot parse the exposition: %v\n%s", err, w.Body.String())
	}
	value := func(name string, labels map[string]string) (float64, bool) {
		f := families[name]
		if f == nil {
			return 0, false
		}
	next:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue next
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue(), true
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue(), true
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount()), true
			}
		}
		return 0, false
	}
	tests := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"weir_requests_total", map[string]string{"outcome": "hit"}, 2},
		{"weir_requests_total", map[string]string{"outcome": "miss"}, 5},
		{"weir_requests_total", map[string]string{"outcome": "pass"}, 1},
		{"weir_requests_total", map[string]string{"outcome": "shed"}, 2},
		{"weir_shed_total", map[string]string{"reason": "circuit-open"}, 2},
		{"weir_breaker_short_circuited_total", map[string]string{"scope": "down.example.com"}, 2},
		{"weir_breaker_state", map[string]string{"scope": "down.example.com"}, 1},
		{"weir_breaker_trips_total", map[string]string{"scope": "down.example.com"}, 1},
		{"weir_breaker_failure_ratio", map[string]string{"scope": "example.com"}, 0},
		{"weir_origin_in_flight", map[string]string{"pool": "fetch"}, 0},
		{"weir_origin_queued", map[string]string{"pool": "upload"}, 0},
		{"weir_origin_duration_seconds", map[string]string{"breaker_state": "closed"}, 6},
		{"weir_coalesced_total", nil, 0},
		{"weir_missrate_anomalies_total", nil, 0},
		{"weir_cache_entries", nil, 3},
		{"weir_cache_evictions_total", nil, 0},
	}
	for _, tt := range tests {
		got, ok := value(tt.name, tt.labels)
		if !ok || got != tt.want {
			t.Errorf("%s%v = %v (found %t), want %v", tt.name, tt.labels, got, ok, tt.want)
		}
	}
	for name, f := range families {
		if !strings.HasPrefix(name, "weir_") || f.GetHelp() == "" {
			t.Errorf("family %q: want a weir_ name and a help text", name)
		}
	}
}
