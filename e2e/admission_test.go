package e2e

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestAdmissionShedsFloodFirst: past admission.kneeInFlight (8) requests in flight, the
// host flooding a slow path holds more than its share (4) and gets immediate 503s with
// Retry-After and detail=admission-host, a name seen for the first time gets
// detail=admission-name, while another host's requests are all served. Lag bounds are set
// high: the machine is shared, and the test is of the in-flight signal.
func TestAdmissionShedsFloodFirst(t *testing.T) {
	const (
		floodClients = 24
		floodFor     = 3 * time.Second
		slow         = 500 * time.Millisecond
	)
	o := newOrigin(t)
	var flood inFlight
	o.Handle("/adm/slow", flood.count(delayed(slow, answer("no-store", "slow"))))
	o.Handle("/adm/calm", answer("no-store", "calm"))
	conf := map[string]interface{}{
		"admission": map[string]interface{}{
			"kneeInFlight": "8", "hostKneeInFlight": "4", "lagKnee": "1s", "lagLimit": "2s",
		},
	}
	tr := startTraefik(t, o, cachedRoute("adm", "/adm/", "weir-adm", conf))
	host := func(h string) map[string]string { return map[string]string{"Host": h} }
	// The names real traffic uses, seen under the knee.
	wantReply(t, "calm host under the knee", send(t, tr, http.MethodGet, "/adm/calm", host("calm.test")), 200, "calm")
	wantReply(t, "flood host under the knee", send(t, tr, http.MethodGet, "/adm/slow", host("flood.test")), 200, "slow")

	var ok, shed, other int64
	var mu sync.Mutex
	var odd []string
	stop := time.Now().Add(floodFor)
	var wg sync.WaitGroup
	for c := 0; c < floodClients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for i := 0; time.Now().Before(stop); i++ {
				r, err := fetch(context.Background(), tr.Client(), requestTimeout, http.MethodGet,
					tr.URL(fmt.Sprintf("/adm/slow?c=%d&i=%d", c, i)), host("flood.test"))
				switch {
				case err == nil && r.status == 200:
					atomic.AddInt64(&ok, 1)
				case err == nil && r.status == 503 && r.cacheStatus().params["detail"] == "admission-host" && r.header.Get("Retry-After") != "":
					atomic.AddInt64(&shed, 1)
					time.Sleep(20 * time.Millisecond)
				default:
					atomic.AddInt64(&other, 1)
					mu.Lock()
					odd = append(odd, fmt.Sprintf("%d %q %v", r.status, r.header.Get("Cache-Status"), err))
					mu.Unlock()
				}
			}
		}(c)
	}
	time.Sleep(500 * time.Millisecond)
	calmOK := 0
	var worst time.Duration
	for i := 0; i < 20; i++ {
		r := send(t, tr, http.MethodGet, "/adm/calm", host("calm.test"))
		if r.status == 200 {
			calmOK++
		} else {
			t.Errorf("calm host's request %d during the flood: status %d, Cache-Status %q; want 200", i+1, r.status, r.header.Get("Cache-Status"))
		}
		if r.took > worst {
			worst = r.took
		}
		time.Sleep(50 * time.Millisecond)
	}
	r := send(t, tr, http.MethodGet, "/adm/calm", host("random-name.test"))
	if r.status != 503 || r.cacheStatus().params["detail"] != "admission-name" {
		t.Errorf("a name first seen during the flood: status %d, Cache-Status %q; want 503 admission-name", r.status, r.header.Get("Cache-Status"))
	}
	wg.Wait()
	t.Logf("flood: %d served, %d shed (admission-host), %d other; origin peak in flight %d; calm host %d/20 served, slowest %v",
		ok, shed, other, flood.most(), calmOK, worst.Round(time.Millisecond))
	if shed == 0 {
		t.Error("no flood request was shed with admission-host")
	}
	if other > 0 {
		t.Errorf("%d flood requests answered otherwise, e.g. %v", other, odd[:min(3, len(odd))])
	}
	if p := flood.most(); p > 8 {
		t.Errorf("origin peak in flight for the flood host %d, want at most the knee (8)", p)
	}
}
