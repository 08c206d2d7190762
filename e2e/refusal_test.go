package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// browserAccept is the Accept a browser sends for a page.
const browserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"

// refusalPage is the refusal.body of TestRefusalBodies.
// Its placeholders are no Go template actions: Traefik's file provider renders each file as
// a Go template first, and the page goes through it as written.
const refusalPage = `<!doctype html><title>Back soon</title><h1>Back in {retryAfter}s</h1><p>{detail} ({status})</p>`

// The bodies a refusal may take.
const (
	refusalText = "text"
	refusalJSON = "json"
	refusalHTML = "html"
)

// wantRefusalBody fails unless r, a refusal or a negative entry's answer with detail (as in
// its JSON error) and status, has the body kind asks for with its Content-Type, saying what
// its Retry-After says.
func wantRefusalBody(t *testing.T, what string, r reply, status int, detail, kind string) {
	t.Helper()
	ra, err := strconv.Atoi(r.header.Get("Retry-After"))
	if r.status != status || err != nil || ra < 1 {
		t.Fatalf("%s: %d, Retry-After %q, Cache-Status %q; want %d with Retry-After", what, r.status, r.header.Get("Retry-After"), r.cacheStatus(), status)
	}
	var want, contentType string
	switch kind {
	case refusalJSON:
		contentType = "application/json"
		want = fmt.Sprintf(`{"error":%q,"retryAfter":%d}`+"\n", detail, ra)
		var got struct {
			Error      string `json:"error"`
			RetryAfter int    `json:"retryAfter"`
		}
		if err := json.Unmarshal([]byte(r.body), &got); err != nil || got.Error != detail || got.RetryAfter != ra {
			t.Errorf("%s: JSON body %q (%v), want error %q and retryAfter %d, the Retry-After", what, r.body, err, detail, ra)
		}
	case refusalHTML:
		contentType = "text/html; charset=utf-8"
		want = strings.NewReplacer("{retryAfter}", strconv.Itoa(ra), "{detail}", detail, "{status}", strconv.Itoa(status)).Replace(refusalPage)
	default:
		contentType = "text/plain; charset=utf-8"
		want = "origin unavailable, retry later\n"
	}
	if got := r.header.Get("Content-Type"); got != contentType {
		t.Errorf("%s: Content-Type %q, want %q", what, got, contentType)
	}
	if r.body != want {
		t.Errorf("%s: body %q, want %q", what, r.body, want)
	}
	if got := r.header.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("%s: X-Content-Type-Options %q, want nosniff", what, got)
	}
}

// TestRefusalBodies: through Traefik, a refusal keeps its status, Retry-After and
// Cache-Status, and its body follows the client's Accept: JSON naming the reason and the
// Retry-After for an API client, the page of refusal.body for a browser when it is set, the
// line of text otherwise. A negative entry's answer takes the same bodies. Nothing refused
// reaches the origin.
func TestRefusalBodies(t *testing.T) {
	const (
		openHost = "api.rb.test"
		negHost  = "neg.rb.test"
	)
	o := newOrigin(t)
	for _, prefix := range []string{"/rb", "/rt"} {
		o.Handle(prefix+"/page", answer("max-age=60", "page"))
		o.Handle(prefix+"/neg", func(w http.ResponseWriter, r *http.Request) {
			// A 502 without Retry-After: remembered by the negative cache, and not enough for
			// the breaker to open.
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, "origin's own 502")
		})
	}
	middleware := func(prefix, page string) map[string]interface{} {
		conf := specConfig(t)
		conf["admin"] = map[string]interface{}{"path": prefix + "/_weir", "token": adminTestToken}
		conf["negative"] = map[string]interface{}{"ttl": "30s"}
		if page != "" {
			conf["refusal"] = map[string]interface{}{"body": page}
		}
		return conf
	}
	tr := startTraefik(t, o, Dynamic{
		Routes: []Route{
			{Name: "rb", Rule: "PathPrefix(`/rb`)", Middleware: "weir-rb"},
			{Name: "rt", Rule: "PathPrefix(`/rt`)", Middleware: "weir-rt"},
		},
		Middlewares: map[string]map[string]interface{}{
			"weir-rb": middleware("/rb", refusalPage),
			"weir-rt": middleware("/rt", ""),
		},
	})
	for _, prefix := range []string{"/rb", "/rt"} {
		adminAction(t, tr, prefix+"/_weir", "breakers/open", `{"key":"`+openHost+`","for":"60s"}`)
		if r := send(t, tr, "GET", prefix+"/neg", map[string]string{"Host": negHost}); r.status != http.StatusBadGateway || r.cacheStatus().hit() {
			t.Fatalf("GET %s/neg: %d, Cache-Status %q; want the origin's 502", prefix, r.status, r.cacheStatus())
		}
	}

	tests := []struct {
		desc   string
		path   string
		host   string
		accept string
		status int
		detail string
		kind   string
	}{
		{desc: "an API client gets JSON", path: "/rb/page", host: openHost, accept: "application/json",
			status: http.StatusServiceUnavailable, detail: "circuit-open; key=" + openHost, kind: refusalJSON},
		{desc: "a browser gets the refusal page", path: "/rb/page", host: openHost, accept: browserAccept,
			status: http.StatusServiceUnavailable, detail: "circuit-open; key=" + openHost, kind: refusalHTML},
		{desc: "no Accept gets the line of text", path: "/rb/page", host: openHost,
			status: http.StatusServiceUnavailable, detail: "circuit-open; key=" + openHost, kind: refusalText},
		{desc: "curl's */* gets the line of text", path: "/rb/page", host: openHost, accept: "*/*",
			status: http.StatusServiceUnavailable, detail: "circuit-open; key=" + openHost, kind: refusalText},
		{desc: "JSON weighed below HTML gets the page", path: "/rb/page", host: openHost, accept: "application/json;q=0.5, text/html",
			status: http.StatusServiceUnavailable, detail: "circuit-open; key=" + openHost, kind: refusalHTML},
		{desc: "without refusal.body an API client gets JSON", path: "/rt/page", host: openHost, accept: "application/json",
			status: http.StatusServiceUnavailable, detail: "circuit-open; key=" + openHost, kind: refusalJSON},
		{desc: "without refusal.body a browser gets the line of text", path: "/rt/page", host: openHost, accept: browserAccept,
			status: http.StatusServiceUnavailable, detail: "circuit-open; key=" + openHost, kind: refusalText},
		{desc: "a negative entry for an API client", path: "/rb/neg", host: negHost, accept: "application/json",
			status: http.StatusBadGateway, detail: "negative", kind: refusalJSON},
		{desc: "a negative entry for a browser", path: "/rb/neg", host: negHost, accept: browserAccept,
			status: http.StatusBadGateway, detail: "negative", kind: refusalHTML},
		{desc: "a negative entry without Accept", path: "/rb/neg", host: negHost,
			status: http.StatusBadGateway, detail: "negative", kind: refusalText},
		{desc: "a negative entry without refusal.body for a browser", path: "/rt/neg", host: negHost, accept: browserAccept,
			status: http.StatusBadGateway, detail: "negative", kind: refusalText},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			header := map[string]string{"Host": tc.host}
			if tc.accept != "" {
				header["Accept"] = tc.accept
			}
			before := o.Count(tc.path)
			r := send(t, tr, "GET", tc.path, header)
			cs := r.cacheStatus()
			reason, _, _ := strings.Cut(tc.detail, ";")
			if cs.params["detail"] != reason || (reason == "circuit-open" && cs.params["key"] != tc.host) {
				t.Errorf("Cache-Status %q, want detail=%s", cs, tc.detail)
			}
			wantRefusalBody(t, "GET "+tc.path, r, tc.status, tc.detail, tc.kind)
			if got := o.Count(tc.path); got != before {
				t.Errorf("the refused request reached the origin (%d requests for %s, %d before)", got, tc.path, before)
			}
		})
	}
	for _, p := range []string{"/rb/page", "/rt/page"} {
		wantCount(t, o, p, 0)
	}
	for _, p := range []string{"/rb/neg", "/rt/neg"} {
		wantCount(t, o, p, 1)
	}
}
