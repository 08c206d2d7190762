package core

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/weirproxy/weir/core/admin"
	"github.com/weirproxy/weir/core/limit"
)

const adminToken = "operator-token-of-24-chars"

// adminSettings turns the admin on at /_weir for adminToken.
func adminSettings(s Settings) Settings {
	s.AdminPath = "/_weir"
	s.AdminAccess = admin.Access{Token: adminToken}
	return s
}

// adminDo sends one request with the token, or without it when token is "".
func adminDo(t *testing.T, h *Handler, method, url, body, token string) *httptest.ResponseRecorder {
	t.Helper()
	r := newBodyRequest(method, url, body, "Content-Type", "application/json")
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestAdminNeverReachesOrigin: whatever the method, whoever asks, nothing under admin.path
// reaches the origin or is stored; a longer name that starts the same is the site's.
func TestAdminNeverReachesOrigin(t *testing.T) {
	o := staticOrigin(t, 200, []string{"Cache-Control", "max-age=60"}, "origin")
	h := newTestHandler(t, adminSettings(Settings{Now: newFakeClock().Now, Log: discardLog}), o)
	tests := []struct {
		desc, method, url, token string
		want                     int
	}{
		{desc: "the page without the token", method: "GET", url: "http://example.com/_weir/", want: 403},
		{desc: "the base path", method: "GET", url: "http://example.com/_weir", want: 301},
		{desc: "metrics with the token", method: "GET", url: "http://example.com/_weir/metrics", token: adminToken, want: 200},
		{desc: "a query string", method: "GET", url: "http://example.com/_weir/api/state?x=1", token: adminToken, want: 200},
		{desc: "an unknown page", method: "GET", url: "http://example.com/_weir/x", token: adminToken, want: 404},
		{desc: "an action without the token", method: "POST", url: "http://example.com/_weir/api/breakers/close", want: 403},
		{desc: "a DELETE", method: "DELETE", url: "http://example.com/_weir/metrics", token: adminToken, want: 405},
		{desc: "HEAD", method: "HEAD", url: "http://example.com/_weir/metrics", token: adminToken, want: 200},
	}
	for _, tt := range tests {
		for i := 0; i < 2; i++ {
			w := adminDo(t, h, tt.method, tt.url, `{"key":"example.com"}`, tt.token)
			if w.Code != tt.want {
				t.Errorf("%s (%d): status %d, want %d", tt.desc, i, w.Code, tt.want)
			}
			if got := w.Header().Get("Cache-Control"); got != "no-store" {
				t.Errorf("%s: Cache-Control %q, want no-store", tt.desc, got)
			}
		}
	}
	if n := o.callCount(); n != 0 {
		t.Errorf("the origin was called %d times for admin requests, want 0", n)
	}
	wantCode(t, "a longer name", adminDo(t, h, "GET", "http://example.com/_weirdo", "", ""), 200)
	if n := o.count("/_weirdo"); n != 1 {
		t.Errorf("the origin saw /_weirdo %d times, want 1", n)
	}
}

// TestAdminHidesStoredEntry: an answer the origin gave under the admin's path before the
// admin was turned on is never served from the cache once it is.
func TestAdminHidesStoredEntry(t *testing.T) {
	clock := newFakeClock()
	name := uniqueEngineName(t)
	o := staticOrigin(t, 200, []string{"Cache-Control", "max-age=600"}, "origin's page")
	off := mustNew(t, name, Settings{Now: clock.Now, Log: discardLog}, o)
	do(t, off, "GET", "http://example.com/_weir/metrics")
	if w := do(t, off, "GET", "http://example.com/_weir/metrics"); !strings.Contains(w.Header().Get("Cache-Status"), "hit") {
		t.Fatalf("before the admin: Cache-Status %q, want a hit", w.Header().Get("Cache-Status"))
	}
	on := mustNew(t, name, adminSettings(Settings{Now: clock.Now, Log: discardLog}), o)
	w := adminDo(t, on, "GET", "http://example.com/_weir/metrics", "", "")
	if w.Code != 403 || strings.Contains(w.Body.String(), "origin's page") {
		t.Errorf("with the admin: %d %q, want 403 and not the stored page", w.Code, w.Body.String())
	}
}

func TestAdminState(t *testing.T) {
	clock := newFakeClock()
	o := staticOrigin(t, 503, nil, "down")
	s := adminSettings(Settings{Now: clock.Now, Log: discardLog})
	s.Breaker.MinRequests = 2
	h := newTestHandler(t, s, o)
	for i := 0; i < 3; i++ {
		do(t, h, "GET", "http://api.example.com/p"+itoa(int64(i)))
	}
	w := adminDo(t, h, "GET", "http://api.example.com/_weir/api/state", "", adminToken)
	wantCode(t, "state", w, 200)
	var st admin.State
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
		t.Fatalf("state is not JSON: %v", err)
	}
	if len(st.Breakers) != 1 || st.Breakers[0].Key != "api.example.com" || st.Breakers[0].State != "open" {
		t.Fatalf("breakers %+v, want api.example.com open", st.Breakers)
	}
	if st.Store.Kind != "memory" || st.Limiter.MaxConcurrent == 0 || st.Limiter.MaxQueue != limit.DefaultMaxQueue {
		t.Errorf("store %+v limiter %+v, want memory and the limiter's size", st.Store, st.Limiter)
	}
	wantCode(t, "close", adminDo(t, h, "POST", "http://api.example.com/_weir/api/breakers/close", `{"key":"api.example.com"}`, adminToken), 200)
	w = adminDo(t, h, "GET", "http://api.example.com/_weir/api/state", "", adminToken)
	st = admin.State{}
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
		t.Fatalf("state is not JSON: %v", err)
	}
	if len(st.Breakers) != 1 || st.Breakers[0].State != "closed" || st.Breakers[0].Requests != 0 {
		t.Errorf("after close: %+v, want closed with its window cleared", st.Breakers)
	}
	wantCode(t, "open", adminDo(t, h, "POST", "http://api.example.com/_weir/api/breakers/open", `{"key":"api.example.com","for":"30s"}`, adminToken), 200)
	w = do(t, h, "GET", "http://api.example.com/other")
	wantCode(t, "a request while opened by hand", w, 503)
	if ra := w.Header().Get("Retry-After"); ra != "30" {
		t.Errorf("Retry-After %q, want 30", ra)
	}
}

func TestAdminSettings(t *testing.T) {
	tests := []struct {
		desc    string
		s       Settings
		wantErr string
	}{
		{desc: "a path without credentials", s: Settings{AdminPath: "/_weir"}, wantErr: "admin.path"},
		{desc: "a relative path", s: Settings{AdminPath: "_weir", AdminAccess: admin.Access{Token: adminToken}}, wantErr: "admin.path"},
		{desc: "the root", s: Settings{AdminPath: "/", AdminAccess: admin.Access{Token: adminToken}}, wantErr: "admin.path"},
		{desc: "purge without credentials", s: Settings{AllowPurge: true}, wantErr: "cache.allowPurge"},
		{desc: "purge with a token", s: Settings{AllowPurge: true, AdminAccess: admin.Access{Token: adminToken}}},
		{desc: "a path with a token", s: Settings{AdminPath: "/_weir/", AdminAccess: admin.Access{Token: adminToken}}},
	}
	for _, tt := range tests {
		_, err := New(uniqueEngineName(t), tt.s, http.NotFoundHandler())
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: New: %v, want no error", tt.desc, err)
		case tt.wantErr != "" && (!errors.Is(err, ErrSettings) || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: New: %v, want ErrSettings naming %s", tt.desc, err, tt.wantErr)
		}
	}
}

// TestPurgeNeedsCredentials: an unauthenticated client must never empty the cache.
func TestPurgeNeedsCredentials(t *testing.T) {
	o := staticOrigin(t, 200, []string{"Cache-Control", "max-age=60"}, "page")
	s := Settings{Now: newFakeClock().Now, Log: discardLog, AllowPurge: true, AdminAccess: admin.Access{Token: adminToken}}
	h := newTestHandler(t, s, o)
	do(t, h, "GET", "http://example.com/p")
	for _, token := range []string{"", "wrong"} {
		w := adminDo(t, h, "PURGE", "http://example.com/p", "", token)
		if w.Code != http.StatusForbidden {
			t.Errorf("PURGE with token %q: status %d, want 403", token, w.Code)
		}
	}
	if w := do(t, h, "GET", "http://example.com/p"); !strings.Contains(w.Header().Get("Cache-Status"), "hit") {
		t.Errorf("after refused purges: Cache-Status %q, want a hit", w.Header().Get("Cache-Status"))
	}
	wantCode(t, "PURGE with the token", adminDo(t, h, "PURGE", "http://example.com/p", "", adminToken), 200)
	if w := do(t, h, "GET", "http://example.com/p"); strings.Contains(w.Header().Get("Cache-Status"), "hit") {
		t.Errorf("after the purge: Cache-Status %q, want a miss", w.Header().Get("Cache-Status"))
	}
	if n := o.callCount(); n != 2 {
		t.Errorf("origin calls %d, want 2", n)
	}
}
