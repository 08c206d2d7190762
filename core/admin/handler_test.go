package admin

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestForbidden(t *testing.T) {
	h, f := newTestAdmin(t)
	tests := []struct {
		desc string
		q    request
	}{
		{desc: "no token, an address outside", q: request{path: "/_weir/api/state"}},
		{desc: "a wrong token", q: request{path: "/_weir/api/state", auth: "Bearer nope"}},
		{desc: "a forwarded address inside the allowed network",
			q: request{path: "/_weir/metrics", header: map[string]string{"X-Forwarded-For": "10.0.0.1"}}},
		{desc: "an action without credentials",
			q: request{method: http.MethodPost, path: "/_weir/api/breakers/close", body: `{"key":"a"}`, contentType: "application/json"}},
		{desc: "an unknown page without credentials", q: request{path: "/_weir/nothing"}},
		{desc: "the page without credentials", q: request{path: "/_weir/"}},
	}
	for _, tt := range tests {
		w := serve(t, h, tt.q)
		if w.Code != http.StatusForbidden {
			t.Errorf("%s: status %d, want 403", tt.desc, w.Code)
		}
		if strings.Contains(w.Body.String(), "weir_up") {
			t.Errorf("%s: the answer reveals the engine: %q", tt.desc, w.Body.String())
		}
	}
	if len(f.calls) != 0 {
		t.Errorf("the engine was called without credentials: %q", f.calls)
	}
}

func TestPages(t *testing.T) {
	h, _ := newTestAdmin(t)
	tests := []struct {
		desc       string
		q          request
		wantStatus int
		wantType   string
		wantBody   string
	}{
		{desc: "the page, from loopback", q: request{path: "/_weir/", remote: "127.0.0.1:40000", auth: "Bearer " + testToken},
			wantStatus: 200, wantType: "text/html", wantBody: `<table id="breakers">`},
		{desc: "the page, by token", q: request{path: "/_weir/", auth: "Bearer " + testToken},
			wantStatus: 200, wantType: "text/html", wantBody: `page.js`},
		{desc: "the script", q: request{path: "/_weir/page.js", auth: "Bearer " + testToken},
			wantStatus: 200, wantType: "text/javascript", wantBody: "api/state"},
		{desc: "the style sheet needs no credentials", q: request{path: "/_weir/page.css"},
			wantStatus: 200, wantType: "text/css", wantBody: "table"},
		{desc: "the base path goes to the folder", q: request{path: "/_weir"}, wantStatus: 301},
		{desc: "the login form comes with the 403", q: request{path: "/_weir/"},
			wantStatus: 403, wantType: "text/html", wantBody: `action="/_weir/login"`},
		{desc: "metrics", q: request{path: "/_weir/metrics", auth: "Bearer " + testToken},
			wantStatus: 200, wantType: "text/plain; version=0.0.4", wantBody: "weir_up 1"},
		{desc: "state", q: request{path: "/_weir/api/state", auth: "Bearer " + testToken},
			wantStatus: 200, wantType: "application/json", wantBody: `"middleware":"weir"`},
		{desc: "an unknown page", q: request{path: "/_weir/nothing", auth: "Bearer " + testToken},
			wantStatus: 404, wantType: "application/json"},
		{desc: "state takes no POST", q: request{method: http.MethodPost, path: "/_weir/api/state", auth: "Bearer " + testToken},
			wantStatus: 405},
		{desc: "actions take no GET", q: request{path: "/_weir/api/breakers/close", auth: "Bearer " + testToken},
			wantStatus: 405},
	}
	for _, tt := range tests {
		w := serve(t, h, tt.q)
		if w.Code != tt.wantStatus {
			t.Errorf("%s: status %d, want %d", tt.desc, w.Code, tt.wantStatus)
		}
		if got := w.Header().Get("Content-Type"); !strings.HasPrefix(got, tt.wantType) {
			t.Errorf("%s: Content-Type %q, want %q", tt.desc, got, tt.wantType)
		}
		if !strings.Contains(w.Body.String(), tt.wantBody) {
			t.Errorf("%s: body %q lacks %q", tt.desc, w.Body.String(), tt.wantBody)
		}
		if got := w.Header().Get("Cache-Control"); got != "no-store" {
			t.Errorf("%s: Cache-Control %q, want no-store", tt.desc, got)
		}
	}
}

func TestActions(t *testing.T) {
	tests := []struct {
		desc       string
		path, body string
		wantStatus int
		wantCall   string
		wantBody   string
	}{
		{desc: "open for a while", path: "/_weir/api/breakers/open", body: `{"key":"api.example.com","for":"30s"}`,
			wantStatus: 200, wantCall: "open api.example.com 30s"},
		{desc: "open for seconds", path: "/_weir/api/breakers/open", body: `{"key":"a","for":"1.5"}`,
			wantStatus: 200, wantCall: "open a 1.5s"},
		{desc: "open for the default", path: "/_weir/api/breakers/open", body: `{"key":"a"}`,
			wantStatus: 200, wantCall: "open a 0s"},
		{desc: "open for a bad duration", path: "/_weir/api/breakers/open", body: `{"key":"a","for":"soon"}`,
			wantStatus: 400, wantBody: `for: \"soon\"`},
		{desc: "open for a negative duration", path: "/_weir/api/breakers/open", body: `{"key":"a","for":"-1s"}`,
			wantStatus: 400},
		{desc: "close", path: "/_weir/api/breakers/close", body: `{"key":"a"}`, wantStatus: 200, wantCall: "close a"},
		{desc: "override", path: "/_weir/api/breakers/override", body: `{"key":"a","params":"window=30s failureRatio=0.3"}`,
			wantStatus: 200, wantCall: "override a: window=30s failureRatio=0.3"},
		{desc: "reset", path: "/_weir/api/breakers/reset", body: `{"key":"a"}`, wantStatus: 200, wantCall: "reset a"},
		{desc: "declare", path: "/_weir/api/breakers/declare", body: `{"key":" a "}`, wantStatus: 200, wantCall: "declare a"},
		{desc: "no key", path: "/_weir/api/breakers/close", body: `{}`, wantStatus: 400, wantBody: "key"},
		{desc: "an unknown field", path: "/_weir/api/breakers/close", body: `{"key":"a","hours":3}`, wantStatus: 400},
		{desc: "not JSON", path: "/_weir/api/breakers/close", body: `key=a`, wantStatus: 400},
		{desc: "an unknown action", path: "/_weir/api/breakers/explode", body: `{"key":"a"}`, wantStatus: 404},
		{desc: "purge a tag", path: "/_weir/api/purge", body: `{"tag":"product-42"}`,
			wantStatus: 200, wantCall: "purge {URL: Prefix: Host: Tag:product-42 All:false User:}", wantBody: `"purged":3`},
		{desc: "purge everything", path: "/_weir/api/purge", body: `{"all":true}`,
			wantStatus: 200, wantCall: "purge {URL: Prefix: Host: Tag: All:true User:}"},
		{desc: "purge a user", path: "/_weir/api/purge", body: `{"user":"s3cr3t"}`,
			wantStatus: 200, wantCall: "purge {URL: Prefix: Host: Tag: All:false User:s3cr3t}"},
		{desc: "purge a user's URL", path: "/_weir/api/purge", body: `{"user":"s3cr3t","url":"http://a/b"}`,
			wantStatus: 200, wantCall: "purge {URL:http://a/b Prefix: Host: Tag: All:false User:s3cr3t}"},
		{desc: "purge a user and a tag", path: "/_weir/api/purge", body: `{"user":"s3cr3t","tag":"a"}`, wantStatus: 400},
		{desc: "purge two things at once", path: "/_weir/api/purge", body: `{"tag":"a","host":"b"}`,
			wantStatus: 400, wantBody: "exactly one"},
		{desc: "purge nothing", path: "/_weir/api/purge", body: `{}`, wantStatus: 400},
		{desc: "pace", path: "/_weir/api/pacing", body: `{"name":" feeds.example.com ","rate":" 3/10s "}`,
			wantStatus: 200, wantCall: "pace feeds.example.com 3/10s"},
		{desc: "clear a pace", path: "/_weir/api/pacing", body: `{"name":"feeds.example.com","rate":""}`,
			wantStatus: 200, wantCall: "unpace feeds.example.com"},
		{desc: "clear a pace with off", path: "/_weir/api/pacing", body: `{"name":"feeds.example.com","rate":"Off"}`,
			wantStatus: 200, wantCall: "unpace feeds.example.com"},
		{desc: "pace without a name", path: "/_weir/api/pacing", body: `{"rate":"3/10s"}`,
			wantStatus: 400, wantBody: "name: a host or domain"},
		{desc: "pace with a breaker's field", path: "/_weir/api/pacing", body: `{"name":"a","rate":"1/1s","params":"x"}`,
			wantStatus: 200, wantCall: "pace a 1/1s"},
	}
	for _, tt := range tests {
		h, f := newTestAdmin(t)
		w := post(t, h, tt.path, tt.body)
		if w.Code != tt.wantStatus {
			t.Errorf("%s: status %d, want %d (%s)", tt.desc, w.Code, tt.wantStatus, w.Body.String())
		}
		got := strings.Join(f.calls, "; ")
		if got != tt.wantCall {
			t.Errorf("%s: engine calls %q, want %q", tt.desc, got, tt.wantCall)
		}
		if !strings.Contains(w.Body.String(), tt.wantBody) {
			t.Errorf("%s: body %q lacks %q", tt.desc, w.Body.String(), tt.wantBody)
		}
		var v map[string]interface{}
		if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
			t.Errorf("%s: body is not JSON: %v", tt.desc, err)
		}
	}
}

func TestActionErrors(t *testing.T) {
	h, f := newTestAdmin(t)
	f.err = errBoom
	w := post(t, h, "/_weir/api/breakers/override", `{"key":"a","params":"window=-1s"}`)
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "must be positive") {
		t.Errorf("got %d %q, want 400 with the engine's error", w.Code, w.Body.String())
	}
}

// TestActionsNeedJSON: an action sent as a form (what another site's page can make a
// logged-in browser send) is refused before it reaches the engine.
func TestActionsNeedJSON(t *testing.T) {
	for _, tt := range []struct{ desc, path, body string }{
		{desc: "close", path: "/_weir/api/breakers/close", body: "key=a"},
		{desc: "pacing", path: "/_weir/api/pacing", body: "name=feeds.example.com&rate=1/1s"},
	} {
		h, f := newTestAdmin(t)
		w := serve(t, h, request{method: http.MethodPost, path: tt.path, body: tt.body,
			contentType: "application/x-www-form-urlencoded", auth: "Bearer " + testToken})
		if w.Code != http.StatusUnsupportedMediaType || len(f.calls) != 0 {
			t.Errorf("%s: got %d and calls %q, want 415 and no call", tt.desc, w.Code, f.calls)
		}
	}
}

// TestPacingNeedsAccess: setting a pace takes the token or a session made with it, as every
// action does.
func TestPacingNeedsAccess(t *testing.T) {
	session, _ := newSession(testToken, testNow)
	tests := []struct {
		desc string
		q    request
		want int
	}{
		{desc: "nobody", q: request{}, want: http.StatusForbidden},
		{desc: "a wrong token", q: request{auth: "Bearer nope"}, want: http.StatusForbidden},
		{desc: "the token", q: request{auth: "Bearer " + testToken}, want: http.StatusOK},
		{desc: "an address alone", q: request{remote: "10.1.2.3:4000"}, want: http.StatusForbidden},
		{desc: "a session", q: request{header: map[string]string{"Cookie": cookieName + "=" + session}}, want: http.StatusOK},
		{desc: "the token as the cookie", q: request{header: map[string]string{"Cookie": cookieName + "=" + testToken}}, want: http.StatusForbidden},
	}
	for _, tt := range tests {
		h, f := newTestAdmin(t)
		q := tt.q
		q.method, q.path, q.body, q.contentType = http.MethodPost, "/_weir/api/pacing", `{"name":"a.example","rate":"2/1s"}`, "application/json"
		w := serve(t, h, q)
		if w.Code != tt.want {
			t.Errorf("%s: status %d, want %d", tt.desc, w.Code, tt.want)
		}
		if calls := len(f.calls); (calls == 1) != (tt.want == http.StatusOK) {
			t.Errorf("%s: engine calls %q", tt.desc, f.calls)
		}
	}
}

func TestLogin(t *testing.T) {
	h, _ := newTestAdmin(t)
	w := serve(t, h, request{method: http.MethodPost, path: "/_weir/login", body: "token=wrong",
		contentType: "application/x-www-form-urlencoded"})
	if w.Code != http.StatusForbidden || len(w.Result().Cookies()) != 0 {
		t.Fatalf("a wrong token: got %d with cookies %v, want 403 and none", w.Code, w.Result().Cookies())
	}
	w = serve(t, h, request{method: http.MethodPost, path: "/_weir/login", body: "token=" + testToken,
		contentType: "application/x-www-form-urlencoded"})
	if w.Code != http.StatusSeeOther {
		t.Fatalf("the right token: status %d, want 303", w.Code)
	}
	cookies := w.Result().Cookies()
	if len(cookies) != 1 || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode || cookies[0].Path != "/_weir/" ||
		cookies[0].MaxAge != int(SessionLifetime/time.Second) || cookies[0].Secure {
		t.Fatalf("cookie %+v, want one HttpOnly, SameSite=Strict cookie for /_weir/ of Max-Age 12h, not Secure over plain HTTP", cookies)
	}
	if strings.Contains(cookies[0].Value, testToken) {
		t.Errorf("cookie %q holds the token", cookies[0].Value)
	}
	w = serve(t, h, request{path: "/_weir/api/state", header: map[string]string{"Cookie": cookies[0].Name + "=" + cookies[0].Value}})
	if w.Code != http.StatusOK {
		t.Errorf("with the cookie: status %d, want 200", w.Code)
	}
}

// TestNoTokenNoLogin: without a token there is nothing to sign in with, whatever
// admin.allow says.
func TestNoTokenNoLogin(t *testing.T) {
	allow, _ := ParseAllow([]string{"10.0.0.0/8"})
	h := NewHandler("/_weir", &Access{Allow: allow}, &fakeEngine{}, nil)
	w := serve(t, h, request{method: http.MethodPost, path: "/_weir/login", body: "token=",
		contentType: "application/x-www-form-urlencoded", remote: "10.0.0.1:1"})
	if w.Code != http.StatusForbidden {
		t.Errorf("status %d, want 403", w.Code)
	}
	w = serve(t, h, request{path: "/_weir/", remote: "10.0.0.1:1"})
	if w.Code != http.StatusForbidden || strings.Contains(w.Body.String(), "<form") {
		t.Errorf("status %d, body %q: want a plain 403 without a login form", w.Code, w.Body.String())
	}
}
