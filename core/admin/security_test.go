package admin

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// clockAdmin is an admin whose clock a test moves, and the failures its access reported.
type clockAdmin struct {
	h        *Handler
	access   *Access
	now      time.Time
	failures []Failure
	throttle int
}

// newClockAdmin serves a fake engine under /_weir for access, with a brake and a clock the
// test moves.
func newClockAdmin(t *testing.T, access *Access) *clockAdmin {
	t.Helper()
	c := &clockAdmin{access: access, now: testNow}
	if access.Brake == nil {
		access.Brake = NewBrake(0)
	}
	access.OnFailure = func(f Failure) { c.failures = append(c.failures, f) }
	access.OnThrottled = func() { c.throttle++ }
	c.h = NewHandler("/_weir", access, &fakeEngine{state: State{Middleware: "weir"}}, func() time.Time { return c.now })
	return c
}

// signIn posts token to the sign-in form and returns the answer.
func signIn(t *testing.T, h http.Handler, token, remote string, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	return serve(t, h, request{method: http.MethodPost, path: "/_weir/login", body: "token=" + token,
		contentType: "application/x-www-form-urlencoded", remote: remote, header: header})
}

// sessionCookie is the session cookie a's sign-in set; it fails the test when there is none.
func sessionCookie(t *testing.T, w *httptest.ResponseRecorder) *http.Cookie {
	t.Helper()
	for _, c := range w.Result().Cookies() {
		if c.Name == cookieName {
			return c
		}
	}
	t.Fatalf("no %s cookie in %d answer %q (Set-Cookie %q)", cookieName, w.Code, w.Body.String(), w.Header()["Set-Cookie"])
	return nil
}

// withCookie is a request header carrying c.
func withCookie(c *http.Cookie) map[string]string {
	return map[string]string{"Cookie": c.Name + "=" + c.Value}
}

// TestAllowNarrowsToken: admin.allow no longer lets an address in by itself; from outside it
// even the token is refused, without being checked, and no sign-in form is offered.
func TestAllowNarrowsToken(t *testing.T) {
	allow, err := ParseAllow([]string{"10.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	c := newClockAdmin(t, &Access{Token: testToken, Allow: allow})
	tests := []struct {
		desc     string
		q        request
		want     int
		wantBody string
	}{
		{desc: "inside, no token", q: request{path: "/_weir/api/state", remote: "10.0.0.1:1"}, want: 403, wantBody: "send the token"},
		{desc: "inside, the page without the token offers the form", q: request{path: "/_weir/", remote: "10.0.0.1:1"}, want: 403, wantBody: "<form"},
		{desc: "inside, the token", q: request{path: "/_weir/api/state", remote: "10.0.0.1:1", auth: "Bearer " + testToken}, want: 200},
		{desc: "outside, the token", q: request{path: "/_weir/api/state", remote: "192.0.2.1:1", auth: "Bearer " + testToken}, want: 403, wantBody: "not in admin.allow"},
		{desc: "outside, the page: no form", q: request{path: "/_weir/", remote: "192.0.2.1:1"}, want: 403, wantBody: "not in admin.allow"},
		{desc: "outside, a wrong token", q: request{path: "/_weir/api/state", remote: "192.0.2.1:1", auth: "Bearer wrong"}, want: 403},
	}
	for _, tt := range tests {
		w := serve(t, c.h, tt.q)
		if w.Code != tt.want || !strings.Contains(w.Body.String(), tt.wantBody) {
			t.Errorf("%s: %d %q, want %d with %q", tt.desc, w.Code, w.Body.String(), tt.want, tt.wantBody)
		}
	}
	if w := signIn(t, c.h, testToken, "192.0.2.1:1", nil); w.Code != 403 || len(w.Result().Cookies()) != 0 {
		t.Errorf("sign-in from outside with the token: %d, cookies %v; want 403 and none", w.Code, w.Result().Cookies())
	}
	if len(c.failures) != 0 {
		t.Errorf("failures %+v: a token from outside admin.allow is not even checked", c.failures)
	}
}

// TestSession: the sign-in cookie is "<expiry>.<MAC>", not the token; it lets its browser in
// for 12 hours, is Secure when the page was reached over HTTPS, and ends with a change of
// token. A tampered one counts as a failure; an expired one is only dropped.
func TestSession(t *testing.T) {
	c := newClockAdmin(t, &Access{Token: testToken})
	w := signIn(t, c.h, testToken, "192.0.2.7:1", nil)
	if w.Code != http.StatusSeeOther {
		t.Fatalf("sign-in: %d %q, want 303", w.Code, w.Body.String())
	}
	ck := sessionCookie(t, w)
	expiry, mac, ok := strings.Cut(ck.Value, ".")
	if !ok || expiry != strconv.FormatInt(testNow.Add(12*time.Hour).Unix(), 10) || mac == "" {
		t.Errorf("cookie value %q, want <unix expiry 12h on>.<MAC>", ck.Value)
	}
	if strings.Contains(ck.Value, testToken) || strings.Contains(ck.Value, "s3cret") {
		t.Errorf("cookie value %q holds the token", ck.Value)
	}
	if ck.MaxAge != 12*3600 || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/_weir/" || ck.Secure {
		t.Errorf("cookie %+v: want Max-Age 43200, HttpOnly, SameSite=Strict, Path /_weir/, not Secure over plain HTTP", ck)
	}
	if w := serve(t, c.h, request{path: "/_weir/api/state", header: withCookie(ck)}); w.Code != 200 {
		t.Errorf("with the session: %d, want 200", w.Code)
	}
	c.now = testNow.Add(12*time.Hour - time.Second)
	if w := serve(t, c.h, request{path: "/_weir/api/state", header: withCookie(ck)}); w.Code != 200 {
		t.Errorf("with the session a second before it ends: %d, want 200", w.Code)
	}

	// A change of token ends every session: the key is derived from the token.
	other := newClockAdmin(t, &Access{Token: testToken + "-changed"})
	w = serve(t, other.h, request{path: "/_weir/api/state", header: withCookie(ck)})
	if w.Code != 403 || !strings.Contains(w.Header().Get("Set-Cookie"), "Max-Age=0") {
		t.Errorf("the session after a change of token: %d, Set-Cookie %q; want 403 and the cookie dropped", w.Code, w.Header().Get("Set-Cookie"))
	}
	if len(other.failures) != 1 || other.failures[0].Way != WayCookie {
		t.Errorf("failures after a change of token: %+v, want one by cookie", other.failures)
	}

	// A tampered expiry fails the MAC.
	forged := &http.Cookie{Name: cookieName, Value: strconv.FormatInt(testNow.Add(48*time.Hour).Unix(), 10) + "." + mac}
	if w := serve(t, c.h, request{path: "/_weir/api/state", header: withCookie(forged)}); w.Code != 403 {
		t.Errorf("a session with its expiry moved: %d, want 403", w.Code)
	}
	if len(c.failures) != 1 || c.failures[0].Way != WayCookie {
		t.Errorf("failures after a forged session: %+v, want one by cookie", c.failures)
	}

	c.now = testNow.Add(12 * time.Hour)
	w = serve(t, c.h, request{path: "/_weir/api/state", header: withCookie(ck)})
	if w.Code != 403 || !strings.Contains(w.Body.String(), "expired") || !strings.Contains(w.Header().Get("Set-Cookie"), "Max-Age=0") {
		t.Errorf("the session at its end: %d %q, Set-Cookie %q; want 403, expired, the cookie dropped", w.Code, w.Body.String(), w.Header().Get("Set-Cookie"))
	}
	if len(c.failures) != 1 {
		t.Errorf("an expired session counted as a failure: %+v", c.failures)
	}
}

// TestSessionSecure: the cookie is Secure when the page was reached over HTTPS: Traefik's
// own TLS, or a proxy before it saying so in X-Forwarded-Proto.
func TestSessionSecure(t *testing.T) {
	tests := []struct {
		desc   string
		header map[string]string
		tls    bool
		want   bool
	}{
		{desc: "plain HTTP", want: false},
		{desc: "TLS", tls: true, want: true},
		{desc: "X-Forwarded-Proto: https", header: map[string]string{"X-Forwarded-Proto": "https"}, want: true},
		{desc: "X-Forwarded-Proto: HTTPS, http", header: map[string]string{"X-Forwarded-Proto": "HTTPS, http"}, want: true},
		{desc: "X-Forwarded-Proto: http", header: map[string]string{"X-Forwarded-Proto": "http"}, want: false},
	}
	for _, tt := range tests {
		c := newClockAdmin(t, &Access{Token: testToken})
		target := "http://example.com/_weir/login"
		if tt.tls {
			// httptest gives a request to an https URL a TLS connection state.
			target = "https://example.com/_weir/login"
		}
		r := httptest.NewRequest(http.MethodPost, target, strings.NewReader("token="+testToken))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range tt.header {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		c.h.ServeHTTP(w, r)
		if got := sessionCookie(t, w).Secure; got != tt.want {
			t.Errorf("%s: Secure %t, want %t", tt.desc, got, tt.want)
		}
	}
}

// TestSignInWarning: the sign-in form warns when served over plain HTTP to an address that is
// not loopback, and only then.
func TestSignInWarning(t *testing.T) {
	tests := []struct {
		desc   string
		remote string
		header map[string]string
		want   bool
	}{
		{desc: "plain HTTP, a remote address", remote: "192.0.2.7:1", want: true},
		{desc: "plain HTTP, v4 loopback", remote: "127.0.0.1:1", want: false},
		{desc: "plain HTTP, v6 loopback", remote: "[::1]:1", want: false},
		{desc: "behind an HTTPS proxy", remote: "192.0.2.7:1", header: map[string]string{"X-Forwarded-Proto": "https"}, want: false},
	}
	for _, tt := range tests {
		c := newClockAdmin(t, &Access{Token: testToken})
		w := serve(t, c.h, request{path: "/_weir/", remote: tt.remote, header: tt.header})
		if w.Code != 403 || !strings.Contains(w.Body.String(), "<form") {
			t.Fatalf("%s: %d %q, want the sign-in form", tt.desc, w.Code, w.Body.String())
		}
		if got := strings.Contains(w.Body.String(), "plain HTTP"); got != tt.want {
			t.Errorf("%s: warning shown %t, want %t", tt.desc, got, tt.want)
		}
		if strings.Contains(w.Body.String(), "{{") {
			t.Errorf("%s: a placeholder left in %q", tt.desc, w.Body.String())
		}
	}
}

// TestBrake: ten failed attempts a minute from one address, by any way, then 429 with
// Retry-After and the reason in Cache-Status, even for the right token, until the minute
// ends; other addresses are not held back, and requests without credentials never count.
func TestBrake(t *testing.T) {
	c := newClockAdmin(t, &Access{Token: testToken})
	const attacker = "192.0.2.66:4000"
	for i := 0; i < 3; i++ {
		if w := serve(t, c.h, request{path: "/_weir/api/state", remote: attacker}); w.Code != 403 {
			t.Fatalf("no credentials: %d, want 403", w.Code)
		}
	}
	forged := &http.Cookie{Name: cookieName, Value: "1.x"}
	for i := 1; i <= BrakeFailures; i++ {
		var w *httptest.ResponseRecorder
		switch i % 3 {
		case 0:
			w = serve(t, c.h, request{path: "/_weir/api/state", remote: attacker, auth: fmt.Sprintf("Bearer guess-%d", i)})
		case 1:
			w = signIn(t, c.h, fmt.Sprintf("guess-%d", i), attacker, nil)
		default:
			w = serve(t, c.h, request{path: "/_weir/api/state", remote: attacker, header: withCookie(forged)})
		}
		if w.Code != 403 {
			t.Fatalf("failure %d: %d, want 403", i, w.Code)
		}
		c.now = c.now.Add(time.Second)
	}
	if len(c.failures) != BrakeFailures {
		t.Fatalf("failures reported %d, want %d", len(c.failures), BrakeFailures)
	}
	last := c.failures[BrakeFailures-1]
	if last.Client != "192.0.2.66" || last.Failures != BrakeFailures || !last.Throttled || c.failures[0].Throttled {
		t.Errorf("failures %+v: want the address, counts 1..10, throttled at the tenth", c.failures)
	}
	ways := map[string]bool{}
	for _, f := range c.failures {
		ways[f.Way] = true
	}
	if !ways[WayBearer] || !ways[WayForm] || !ways[WayCookie] {
		t.Errorf("ways counted %v, want bearer, form and cookie", ways)
	}

	// Ten seconds into the minute: 50 seconds to wait, whatever is presented.
	for _, q := range []request{
		{path: "/_weir/api/state", remote: attacker, auth: "Bearer " + testToken},
		{path: "/_weir/api/state", remote: attacker, auth: "Bearer another-guess"},
		{method: http.MethodPost, path: "/_weir/login", remote: attacker, body: "token=" + testToken, contentType: "application/x-www-form-urlencoded"},
	} {
		w := serve(t, c.h, q)
		if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "50" ||
			w.Header().Get("Cache-Status") != "Weir; fwd=bypass; detail=auth-throttled" ||
			!strings.Contains(w.Body.String(), `"error":"auth-throttled"`) || !strings.Contains(w.Body.String(), `"retryAfter":50`) {
			t.Errorf("%s %s while held: %d, Retry-After %q, Cache-Status %q, body %q; want 429, 50, auth-throttled",
				q.method, q.path, w.Code, w.Header().Get("Retry-After"), w.Header().Get("Cache-Status"), w.Body.String())
		}
	}
	if len(c.failures) != BrakeFailures || c.throttle != 3 {
		t.Errorf("while held: %d failures, %d throttled; want attempts neither checked nor counted, 3 throttled", len(c.failures), c.throttle)
	}
	if w := serve(t, c.h, request{path: "/_weir/api/state", remote: "192.0.2.67:1", auth: "Bearer " + testToken}); w.Code != 200 {
		t.Errorf("another address with the token: %d, want 200", w.Code)
	}
	c.now = testNow.Add(BrakeWindow)
	if w := serve(t, c.h, request{path: "/_weir/api/state", remote: attacker, auth: "Bearer " + testToken}); w.Code != 200 {
		t.Errorf("the token once the minute is over: %d, want 200", w.Code)
	}
}

// TestBrakeBounded: the brake forgets the address whose window began first once it tracks
// its size; an IPv6 client counts by its /64.
func TestBrakeBounded(t *testing.T) {
	b := NewBrake(3)
	now := testNow
	for i := 0; i < BrakeFailures; i++ {
		b.fail("192.0.2.1", now)
	}
	if b.wait("192.0.2.1", now) != BrakeWindow {
		t.Fatalf("wait after %d failures = %v, want %v", BrakeFailures, b.wait("192.0.2.1", now), BrakeWindow)
	}
	for i := 2; i <= 4; i++ {
		now = now.Add(time.Second)
		b.fail(fmt.Sprintf("192.0.2.%d", i), now)
	}
	if b.Len() != 3 {
		t.Errorf("Len = %d, want 3, its size", b.Len())
	}
	if w := b.wait("192.0.2.1", now); w != 0 {
		t.Errorf("the oldest address after eviction waits %v, want 0 (forgotten)", w)
	}
	big := NewBrake(0)
	for i := 0; i < 2*DefaultBrakeClients; i++ {
		big.fail(fmt.Sprintf("10.%d.%d.1", i/256, i%256), testNow)
	}
	if big.Len() != DefaultBrakeClients {
		t.Errorf("Len after %d addresses = %d, want %d", 2*DefaultBrakeClients, big.Len(), DefaultBrakeClients)
	}
	keys := []struct{ remote, want string }{
		{"192.0.2.1:80", "192.0.2.1"},
		{"[2001:db8:1:2:3:4:5:6]:80", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::1]:443", "2001:db8:1:2::/64"},
		{"[::ffff:192.0.2.1]:80", "192.0.2.1"},
		{"nonsense", "nonsense"},
	}
	for _, k := range keys {
		if got := clientKey(k.remote); got != k.want {
			t.Errorf("clientKey(%q) = %q, want %q", k.remote, got, k.want)
		}
	}
}

// TestHosts: with admin.hosts the admin answers only under those names; any other Host gets
// the 404 of a path nothing serves, revealing no admin.
func TestHosts(t *testing.T) {
	hosts, err := ParseHosts([]string{"Ops.Example.com., ops.internal"})
	if err != nil {
		t.Fatal(err)
	}
	c := newClockAdmin(t, &Access{Token: testToken, Hosts: hosts})
	tests := []struct {
		desc, host, path string
		want             int
	}{
		{desc: "a listed name", host: "ops.example.com", path: "/_weir/api/state", want: 200},
		{desc: "with a port, in capitals, with a trailing dot", host: "OPS.example.COM.:8443", path: "/_weir/api/state", want: 200},
		{desc: "the other listed name", host: "ops.internal", path: "/_weir/api/state", want: 200},
		{desc: "another name", host: "www.example.com", path: "/_weir/api/state", want: 404},
		{desc: "another name, the page", host: "www.example.com", path: "/_weir/", want: 404},
		{desc: "another name, the style sheet", host: "www.example.com", path: "/_weir/page.css", want: 404},
		{desc: "another name, the base path", host: "www.example.com", path: "/_weir", want: 404},
		{desc: "an address", host: "192.0.2.1", path: "/_weir/api/state", want: 404},
	}
	for _, tt := range tests {
		w := serve(t, c.h, request{path: tt.path, auth: "Bearer " + testToken, header: map[string]string{"Host": tt.host}})
		if w.Code != tt.want {
			t.Errorf("%s: Host %q: %d, want %d", tt.desc, tt.host, w.Code, tt.want)
		}
		if tt.want == 404 && (strings.Contains(w.Body.String(), "admin") || strings.Contains(w.Header().Get("Cache-Status"), "admin")) {
			t.Errorf("%s: the 404 reveals the admin: %q, Cache-Status %q", tt.desc, w.Body.String(), w.Header().Get("Cache-Status"))
		}
	}
	if w := signIn(t, c.h, testToken, "", map[string]string{"Host": "www.example.com"}); w.Code != 404 {
		t.Errorf("sign-in under another name: %d, want 404", w.Code)
	}
}

func TestParseHosts(t *testing.T) {
	tests := []struct {
		desc    string
		in      []string
		want    string
		wantErr bool
	}{
		{desc: "none", in: nil, want: ""},
		{desc: "names, lowercased, trailing dot dropped", in: []string{"Ops.Example.com.", "ops.internal"}, want: "ops.example.com ops.internal"},
		{desc: "a comma string, as labels give lists", in: []string{"a.example, b.example"}, want: "a.example b.example"},
		{desc: "addresses", in: []string{"192.0.2.1", "[2001:db8::1]"}, want: "192.0.2.1 2001:db8::1"},
		{desc: "a port", in: []string{"ops.example.com:8443"}, wantErr: true},
		{desc: "a URL", in: []string{"https://ops.example.com/"}, wantErr: true},
		{desc: "a wildcard", in: []string{"*.example.com"}, wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseHosts(tt.in)
		if tt.wantErr {
			if !errors.Is(err, ErrSettings) || !strings.Contains(err.Error(), "admin.hosts") {
				t.Errorf("%s: ParseHosts(%q) error = %v, want ErrSettings naming admin.hosts", tt.desc, tt.in, err)
			}
			continue
		}
		if err != nil || strings.Join(got, " ") != tt.want {
			t.Errorf("%s: ParseHosts(%q) = %q, %v; want %q", tt.desc, tt.in, got, err, tt.want)
		}
	}
}
