package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/weirproxy/weir/core/admin"
)

// breaker.maxFailures, the count rule, through a real Traefik: a few failures among many
// successes open the breaker whatever the ratio and minRequests, configured for every host or
// for one through breaker.overrides, and the admin's state shows the parameter and the reason.

// mfToken is the admin's token in these tests.
const mfToken = "e2e-max-failures-token-24ch"

// mfOrigin answers prefix+"/ok" with a cacheable 200 and prefix+"/fail" with a 503 without
// Retry-After (a failure the breaker counts, not one that opens it at once), for hosts each
// with paths of their own: prefix+"/"+host+"/ok" and prefix+"/"+host+"/fail".
func mfOrigin(t *testing.T, prefix string, hosts ...string) *Origin {
	o := newOrigin(t)
	for _, host := range hosts {
		o.Handle(prefix+"/"+host+"/ok", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Cache-Control", "max-age=60")
			io.WriteString(w, "ok")
		})
		o.Handle(prefix+"/"+host+"/fail", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "failing")
		})
	}
	return o
}

// mfRoute is the route prefix through a Weir middleware whose breaker has settings b, with
// the admin at prefix+"/_weir".
func mfRoute(t *testing.T, prefix string, b map[string]interface{}) Dynamic {
	conf := specConfig(t)
	conf["breaker"] = b
	conf["admin"] = map[string]interface{}{"path": prefix + "/_weir", "token": mfToken}
	return cachedRoute(strings.Trim(prefix, "/"), prefix, "weir-"+strings.Trim(prefix, "/"), conf)
}

// mfClient sends requests for one host to its paths under prefix, each URL new.
type mfClient struct {
	t      *testing.T
	tr     *Traefik
	o      *Origin
	prefix string
	host   string
	n      int
}

// send asks for a new URL of the host's ok or fail path.
func (c *mfClient) send(kind string) reply {
	c.t.Helper()
	c.n++
	return send(c.t, c.tr, "GET", fmt.Sprintf("%s/%s/%s?i=%d", c.prefix, c.host, kind, c.n), map[string]string{"Host": c.host})
}

// fromOrigin sends one request and fails the test unless the origin answered it: a 200 for
// "ok", its 503 for "fail", neither refused by the breaker.
func (c *mfClient) fromOrigin(what, kind string) {
	c.t.Helper()
	want := http.StatusOK
	if kind == "fail" {
		want = http.StatusServiceUnavailable
	}
	before := c.hits()
	r := c.send(kind)
	if r.status != want || r.cacheStatus().params["detail"] == "circuit-open" || c.hits() != before+1 {
		c.t.Fatalf("%s (%s): %d %q, origin hits %d to %d; want the origin's %d", what, c.host, r.status, r.cacheStatus(),
			before, c.hits(), want)
	}
}

// hits is how many requests of the host reached the origin.
func (c *mfClient) hits() int64 {
	return c.o.Count(c.prefix+"/"+c.host+"/ok") + c.o.Count(c.prefix+"/"+c.host+"/fail")
}

// breakerState reads the admin's state of the breaker of key under prefix; the zero Breaker
// if there is none.
func breakerState(t *testing.T, tr *Traefik, prefix, key string) admin.Breaker {
	t.Helper()
	r := send(t, tr, "GET", prefix+"/_weir/api/state", map[string]string{"Authorization": "Bearer " + mfToken})
	var st admin.State
	if err := json.Unmarshal([]byte(r.body), &st); r.status != http.StatusOK || err != nil {
		t.Fatalf("GET %s/_weir/api/state: %d %v: %s", prefix, r.status, err, short(r.body))
	}
	for _, b := range st.Breakers {
		if b.Key == key {
			return b
		}
	}
	return admin.Breaker{}
}

// paramOf is the breaker's parameter name as the admin lists it; the zero Param if none.
func paramOf(b admin.Breaker, name string) admin.Param {
	for _, p := range b.Params {
		if p.Name == name {
			return p
		}
	}
	return admin.Param{}
}

// wantOpenForAnHour fails the test unless r is the breaker's 503 naming key, with a
// Retry-After of about an hour: breaker.openFor 1h, shortened by up to 20% (the jitter,
// reflected below breaker.maxOpenFor 1h), never longer.
func wantOpenForAnHour(t *testing.T, what string, r reply, key string) {
	t.Helper()
	ra, err := strconv.Atoi(r.header.Get("Retry-After"))
	if !circuitOpenAt(r, key) || err != nil || ra < 2880 || ra > 3600 {
		t.Errorf("%s: %d, Cache-Status %q, Retry-After %q; want 503 circuit-open naming %s with Retry-After 2880 to 3600",
			what, r.status, r.cacheStatus(), r.header.Get("Retry-After"), key)
	}
}

// TestBreakerMaxFailures: "more than 2 errors in 60s opens for an hour". With window 60s,
// maxFailures 3, openFor and maxOpenFor 1h, and minRequests and failureRatio at their
// defaults (20, 0.5), two failed origin answers among successes leave the breaker closed; the
// third, with 19 results in the window and a sixth of them failed, opens it: the next request
// gets 503 circuit-open with Retry-After close to 3600, and nothing more reaches the origin.
func TestBreakerMaxFailures(t *testing.T) {
	const prefix, host = "/mf", "mf.example.com"
	o := mfOrigin(t, prefix, host)
	tr := startTraefik(t, o, mfRoute(t, prefix, map[string]interface{}{
		"window": "60s", "maxFailures": "3", "openFor": "1h", "maxOpenFor": "1h",
	}))
	c := &mfClient{t: t, tr: tr, o: o, prefix: prefix, host: host}
	for i, kind := range []string{"ok", "ok", "ok", "ok", "ok", "fail", "ok", "ok", "ok", "ok", "ok", "fail",
		"ok", "ok", "ok", "ok", "ok", "ok"} {
		c.fromOrigin(fmt.Sprintf("request %d, before the third failure", i+1), kind)
	}
	if b := breakerState(t, tr, prefix, host); b.State != "closed" || b.Failures != 2 || b.Requests != 18 {
		t.Errorf("after two failures: breaker %+v, want closed with 2 failures of 18", b)
	}
	c.fromOrigin("the third failure", "fail")
	hits := c.hits()
	wantOpenForAnHour(t, "the request after the third failure", c.send("ok"), host)
	for i := 0; i < 10; i++ {
		kind := []string{"ok", "fail"}[i%2]
		if r := c.send(kind); !circuitOpenAt(r, host) {
			t.Errorf("request %d while open (%s): %d %q, want 503 circuit-open", i+1, kind, r.status, r.cacheStatus())
		}
	}
	if got := c.hits(); got != hits {
		t.Errorf("the origin saw %d requests after the breaker opened, want none", got-hits)
	}
	b := breakerState(t, tr, prefix, host)
	if b.State != "open" || b.Reason != "max-failures" || b.OpenedBy != "auto" {
		t.Errorf("breaker %+v, want open on its own by max-failures", b)
	}
	if p := paramOf(b, "maxFailures"); p.Value != "3" || p.Override {
		t.Errorf("the admin lists maxFailures as %+v, want 3, the configuration's", p)
	}
	if log := tr.LogTail(200); !strings.Contains(log, "reason=max-failures failures=3 requests=19 window=1m0s") {
		t.Errorf("no breaker_opened event with reason=max-failures failures=3 requests=19 window=1m0s in Traefik's log")
	}
	t.Logf("opened by the third failure of 19 results (minRequests 20): %s open for %.0fs", host, b.OpenLeft)
}

// TestBreakerMaxFailuresOverride: breaker.overrides gives one host maxFailures 2; its breaker
// opens at its second failure among successes, while another host's, on the ratio alone,
// takes three failures and keeps reaching the origin.
func TestBreakerMaxFailuresOverride(t *testing.T) {
	const prefix, strictHost, lenientHost = "/mo", "strict.example.com", "lenient.example.com"
	o := mfOrigin(t, prefix, strictHost, lenientHost)
	tr := startTraefik(t, o, mfRoute(t, prefix, map[string]interface{}{
		"window": "60s", "openFor": "1h", "maxOpenFor": "1h",
		"overrides": []string{strictHost + ": maxFailures=2"},
	}))
	strict := &mfClient{t: t, tr: tr, o: o, prefix: prefix, host: strictHost}
	lenient := &mfClient{t: t, tr: tr, o: o, prefix: prefix, host: lenientHost}
	for _, c := range []*mfClient{strict, lenient} {
		for i, kind := range []string{"ok", "ok", "ok", "fail", "ok", "ok", "ok", "fail"} {
			c.fromOrigin(fmt.Sprintf("request %d", i+1), kind)
		}
	}
	hits := strict.hits()
	wantOpenForAnHour(t, strictHost+" after two failures", strict.send("ok"), strictHost)
	if got := strict.hits(); got != hits {
		t.Errorf("the origin saw %d requests of %s after its breaker opened, want none", got-hits, strictHost)
	}
	for i, kind := range []string{"ok", "fail", "ok", "ok"} {
		lenient.fromOrigin(fmt.Sprintf("%s request %d after two failures", lenientHost, i+1), kind)
	}
	b := breakerState(t, tr, prefix, strictHost)
	if p := paramOf(b, "maxFailures"); b.Reason != "max-failures" || p.Value != "2" || !p.Override {
		t.Errorf("%s: reason %q, maxFailures %+v; want max-failures, 2 of its own", strictHost, b.Reason, p)
	}
	b = breakerState(t, tr, prefix, lenientHost)
	if p := paramOf(b, "maxFailures"); b.State != "closed" || b.Failures != 3 || p.Value != "0" || p.Override {
		t.Errorf("%s: %s with %d failures, maxFailures %+v; want closed with 3, maxFailures 0, the group's", lenientHost, b.State, b.Failures, p)
	}
}
