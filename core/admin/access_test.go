package admin

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestParseAllow(t *testing.T) {
	tests := []struct {
		desc    string
		in      []string
		wantLen int
		wantErr bool
	}{
		{desc: "none", in: nil, wantLen: 0},
		{desc: "v4 and v6 CIDRs", in: []string{"10.0.0.0/8", "2001:db8::/32"}, wantLen: 2},
		{desc: "a comma string, as labels give lists", in: []string{"10.0.0.0/8, 192.168.0.0/16"}, wantLen: 2},
		{desc: "a single address", in: []string{"127.0.0.1", "::1"}, wantLen: 2},
		{desc: "empty items are skipped", in: []string{"", " , "}, wantLen: 0},
		{desc: "not an address", in: []string{"example.com"}, wantErr: true},
		{desc: "a bad prefix length", in: []string{"10.0.0.0/33"}, wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseAllow(tt.in)
		if tt.wantErr {
			if !errors.Is(err, ErrSettings) {
				t.Errorf("%s: ParseAllow(%q) error = %v, want ErrSettings", tt.desc, tt.in, err)
			}
			continue
		}
		if err != nil || len(got) != tt.wantLen {
			t.Errorf("%s: ParseAllow(%q) = %d networks, %v; want %d", tt.desc, tt.in, len(got), err, tt.wantLen)
		}
	}
}

// TestCheck: every way in needs the token; admin.allow narrows who may present it and never
// stands in for it.
func TestCheck(t *testing.T) {
	allow, err := ParseAllow([]string{"10.0.0.0/8", "2001:db8::/32"})
	if err != nil {
		t.Fatal(err)
	}
	tokenOnly := &Access{Token: testToken}
	both := &Access{Token: testToken, Allow: allow}
	session, _ := newSession(testToken, testNow)
	bearer := map[string]string{"Authorization": "Bearer " + testToken}
	tests := []struct {
		desc   string
		access *Access
		remote string
		header map[string]string
		cookie string
		want   int
	}{
		{desc: "the zero access lets no one in", access: &Access{}, remote: "10.1.2.3:1", want: Refused},
		{desc: "a nil access lets no one in", access: nil, remote: "10.1.2.3:1", want: Refused},
		{desc: "allow alone lets no one in, not even from inside", access: &Access{Allow: allow}, remote: "10.1.2.3:1", want: Refused},
		{desc: "inside allow without the token", access: both, remote: "10.1.2.3:1", want: Refused},
		{desc: "inside allow with the token, v4", access: both, remote: "10.1.2.3:1", header: bearer, want: Granted},
		{desc: "inside allow with the token, v6", access: both, remote: "[2001:db8::5]:1", header: bearer, want: Granted},
		{desc: "outside allow with the token", access: both, remote: "192.0.2.1:1", header: bearer, want: Refused},
		{desc: "outside allow with a session", access: both, remote: "192.0.2.1:1", cookie: session, want: Refused},
		{desc: "a forwarded header is never believed", access: both, remote: "192.0.2.1:1",
			header: map[string]string{"X-Forwarded-For": "10.1.2.3", "X-Real-Ip": "10.1.2.3", "Authorization": "Bearer " + testToken}, want: Refused},
		{desc: "the bearer token", access: tokenOnly, remote: "192.0.2.1:1", header: bearer, want: Granted},
		{desc: "the scheme in any case", access: tokenOnly, remote: "192.0.2.1:1",
			header: map[string]string{"Authorization": "bearer " + testToken}, want: Granted},
		{desc: "a wrong token", access: tokenOnly, remote: "192.0.2.1:1",
			header: map[string]string{"Authorization": "Bearer " + testToken + "x"}, want: Refused},
		{desc: "a prefix of the token", access: tokenOnly, remote: "192.0.2.1:1",
			header: map[string]string{"Authorization": "Bearer s3cret"}, want: Refused},
		{desc: "an empty token", access: tokenOnly, remote: "192.0.2.1:1",
			header: map[string]string{"Authorization": "Bearer "}, want: Refused},
		{desc: "basic auth is not the token", access: tokenOnly, remote: "192.0.2.1:1",
			header: map[string]string{"Authorization": "Basic " + testToken}, want: Refused},
		{desc: "a session cookie", access: tokenOnly, remote: "192.0.2.1:1", cookie: session, want: Granted},
		{desc: "the raw token as the cookie is no session", access: tokenOnly, remote: "192.0.2.1:1", cookie: testToken, want: Refused},
		{desc: "a wrong cookie", access: tokenOnly, remote: "192.0.2.1:1", cookie: "guess", want: Refused},
		{desc: "a remote address without a port", access: both, remote: "10.9.9.9", header: bearer, want: Granted},
		{desc: "a garbled remote address", access: both, remote: "nonsense", header: bearer, want: Refused},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(http.MethodGet, "http://example.com/_weir/", nil)
		r.RemoteAddr = tt.remote
		for k, v := range tt.header {
			r.Header.Set(k, v)
		}
		if tt.cookie != "" {
			r.AddCookie(&http.Cookie{Name: cookieName, Value: tt.cookie})
		}
		if got := tt.access.Check(r, testNow).Result; got != tt.want {
			t.Errorf("%s: Check = %d, want %d", tt.desc, got, tt.want)
		}
		if got := tt.access.Allowed(r, testNow); got != (tt.want == Granted) {
			t.Errorf("%s: Allowed = %t, want %t", tt.desc, got, tt.want == Granted)
		}
	}
}

func TestUnder(t *testing.T) {
	tests := []struct {
		desc, base, path string
		want             bool
	}{
		{desc: "the path itself", base: "/_weir", path: "/_weir", want: true},
		{desc: "below it", base: "/_weir", path: "/_weir/metrics", want: true},
		{desc: "with a query", base: "/_weir", path: "/_weir?x=1", want: true},
		{desc: "a longer name", base: "/_weir", path: "/_weirdo", want: false},
		{desc: "elsewhere", base: "/_weir", path: "/page", want: false},
		{desc: "admin off", base: "", path: "/_weir", want: false},
	}
	for _, tt := range tests {
		if got := Under(tt.base, tt.path); got != tt.want {
			t.Errorf("%s: Under(%q, %q) = %t, want %t", tt.desc, tt.base, tt.path, got, tt.want)
		}
	}
}
