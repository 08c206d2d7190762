package core

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/admin"
)

// writeSecret writes content to a file of its own under t's temporary directory and returns
// its path.
func writeSecret(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestAdminAccessSettings: admin.allow needs admin.token, which it narrows and no longer
// replaces; a token is at least 24 characters, and an error about it never prints it.
func TestAdminAccessSettings(t *testing.T) {
	allow, err := admin.ParseAllow([]string{"10.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	const short = "short-secret"
	tests := []struct {
		desc    string
		s       Settings
		wantErr string
	}{
		{desc: "allow without a token", s: Settings{AdminPath: "/_weir", AdminAccess: admin.Access{Allow: allow}},
			wantErr: "admin.allow: needs admin.token: the allow list narrows who may present the token, it no longer replaces it"},
		{desc: "allow without a token, no admin.path", s: Settings{AdminAccess: admin.Access{Allow: allow}},
			wantErr: "admin.allow: needs admin.token"},
		{desc: "allow and purge without a token", s: Settings{AllowPurge: true, AdminAccess: admin.Access{Allow: allow}},
			wantErr: "admin.allow: needs admin.token"},
		{desc: "a short token", s: Settings{AdminPath: "/_weir", AdminAccess: admin.Access{Token: short}},
			wantErr: "admin.token: 12 characters; at least 24"},
		{desc: "23 characters", s: Settings{AdminPath: "/_weir", AdminAccess: admin.Access{Token: strings.Repeat("x", 23)}},
			wantErr: "admin.token: 23 characters; at least 24"},
		{desc: "24 characters", s: Settings{AdminPath: "/_weir", AdminAccess: admin.Access{Token: strings.Repeat("x", 24)}}},
		{desc: "allow with a token", s: Settings{AdminPath: "/_weir", AdminAccess: admin.Access{Token: adminToken, Allow: allow}}},
		{desc: "a path without a token", s: Settings{AdminPath: "/_weir"}, wantErr: "admin.path: \"/_weir\" needs admin.token"},
	}
	for _, tt := range tests {
		_, err := New(uniqueEngineName(t), tt.s, http.NotFoundHandler())
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: New: %v, want no error", tt.desc, err)
		case tt.wantErr != "" && (!errors.Is(err, ErrSettings) || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: New: %v, want ErrSettings with %q", tt.desc, err, tt.wantErr)
		}
		if err != nil && strings.Contains(err.Error(), short) {
			t.Errorf("%s: New's error %q prints the token", tt.desc, err)
		}
		if checkErr := Check(tt.s); (checkErr == nil) != (err == nil) {
			t.Errorf("%s: Check: %v, New: %v; want them to agree", tt.desc, checkErr, err)
		}
	}
}

// TestSecretFiles: admin.tokenFile and store.urlFile are read by New, whitespace trimmed;
// a file set with its value, unreadable or empty fails New naming the field and the path,
// never what the file holds.
func TestSecretFiles(t *testing.T) {
	token := writeSecret(t, "token", "\n  "+adminToken+" \n")
	short := writeSecret(t, "short", "tiny-secret\n")
	empty := writeSecret(t, "empty", " \n\t")
	missing := filepath.Join(t.TempDir(), "missing")
	badURL := writeSecret(t, "url", "ftp://secret-host:21\n")
	tests := []struct {
		desc    string
		s       Settings
		wantErr []string
	}{
		{desc: "a token file", s: Settings{AdminPath: "/_weir", AdminTokenFile: token}},
		{desc: "a token file and a token", s: Settings{AdminPath: "/_weir", AdminTokenFile: token, AdminAccess: admin.Access{Token: adminToken}},
			wantErr: []string{"admin.tokenFile", token, "admin.token", "set one"}},
		{desc: "a missing token file", s: Settings{AdminPath: "/_weir", AdminTokenFile: missing},
			wantErr: []string{"admin.tokenFile", missing, "cannot be read", "no such file"}},
		{desc: "an empty token file", s: Settings{AdminPath: "/_weir", AdminTokenFile: empty},
			wantErr: []string{"admin.tokenFile", empty, "is empty"}},
		{desc: "a short token in a file", s: Settings{AdminPath: "/_weir", AdminTokenFile: short},
			wantErr: []string{"admin.tokenFile", short, "11 characters; at least 24"}},
		{desc: "a directory", s: Settings{AdminPath: "/_weir", AdminTokenFile: t.TempDir()},
			wantErr: []string{"admin.tokenFile", "cannot be read"}},
		{desc: "a URL file and a URL", s: Settings{StoreURLFile: badURL, StoreURL: "redis://127.0.0.1:1/0"},
			wantErr: []string{"store.urlFile", badURL, "store.url", "set one"}},
		{desc: "a missing URL file", s: Settings{StoreURLFile: missing},
			wantErr: []string{"store.urlFile", missing, "cannot be read"}},
		{desc: "an empty URL file", s: Settings{StoreURLFile: empty},
			wantErr: []string{"store.urlFile", empty, "is empty"}},
		// What the file holds is the store's URL: its scheme is refused as store.url's would be.
		{desc: "a URL file read", s: Settings{StoreURLFile: badURL}, wantErr: []string{"scheme"}},
	}
	for _, tt := range tests {
		_, err := New(uniqueEngineName(t), tt.s, http.NotFoundHandler())
		if len(tt.wantErr) == 0 {
			if err != nil {
				t.Errorf("%s: New: %v, want no error", tt.desc, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: New accepted it, want an error with %q", tt.desc, tt.wantErr)
			continue
		}
		for _, want := range tt.wantErr {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: New: %v, want %q in it", tt.desc, err, want)
			}
		}
		if tt.desc != "a URL file read" && (strings.Contains(err.Error(), "tiny-secret") || strings.Contains(err.Error(), adminToken) || strings.Contains(err.Error(), "secret-host")) {
			t.Errorf("%s: New's error %q prints what the file holds", tt.desc, err)
		}
		if checkErr := Check(tt.s); checkErr == nil {
			t.Errorf("%s: Check accepted what New refuses (%v)", tt.desc, err)
		}
	}

	h := newTestHandler(t, Settings{AdminPath: "/_weir", AdminTokenFile: token}, http.NotFoundHandler())
	wantCode(t, "the token read from the file, trimmed", adminDo(t, h, "GET", "http://example.com/_weir/api/state", "", adminToken), 200)
}

// TestAuthBrakeShared: failed tokens with PURGE and at the admin count against one brake per
// middleware, kept across reloads; past ten in a minute both answer 429 with Retry-After and
// detail=auth-throttled; each failure is an admin_auth_failed warning.
func TestAuthBrakeShared(t *testing.T) {
	clock := newFakeClock()
	logs := &testLog{}
	name := uniqueEngineName(t)
	s := Settings{Now: clock.Now, Log: discardLog, Events: func(line string) { logs.add(line) },
		AllowPurge: true, AdminPath: "/_weir", AdminAccess: admin.Access{Token: adminToken}}
	o := staticOrigin(t, 200, []string{"Cache-Control", "max-age=60"}, "page")
	h := mustNew(t, name, s, o)
	for i := 0; i < admin.BrakeFailures/2; i++ {
		wantCode(t, "PURGE with a wrong token", adminDo(t, h, "PURGE", "http://example.com/p", "", "wrong-token"), 403)
		wantCode(t, "the admin with a wrong token", adminDo(t, h, "GET", "http://example.com/_weir/api/state", "", "wrong-token"), 403)
	}
	failed := logs.with("event=admin_auth_failed")
	if len(failed) != admin.BrakeFailures || !strings.Contains(failed[0], "level=warn") ||
		!strings.Contains(failed[0], "client=192.0.2.1 way=bearer failures=1 throttled=false") ||
		!strings.Contains(failed[len(failed)-1], "failures=10 throttled=true") {
		t.Errorf("admin_auth_failed lines %q, want ten warnings counting 1 to 10", failed)
	}
	for _, l := range failed {
		if strings.Contains(l, "wrong-token") {
			t.Errorf("event line %q prints the token tried", l)
		}
	}

	clock.Add(15 * time.Second)
	// A reload: the brake is the middleware's, not the configuration's.
	h = mustNew(t, name, s, o)
	for _, w := range []*httptest.ResponseRecorder{
		adminDo(t, h, "PURGE", "http://example.com/p", "", adminToken),
		adminDo(t, h, "GET", "http://example.com/_weir/api/state", "", adminToken),
	} {
		if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "45" ||
			!strings.Contains(w.Header().Get("Cache-Status"), "detail=auth-throttled") {
			t.Errorf("held back: %d, Retry-After %q, Cache-Status %q; want 429, 45, detail=auth-throttled",
				w.Code, w.Header().Get("Retry-After"), w.Header().Get("Cache-Status"))
		}
	}
	if n := len(logs.with("event=admin_auth_failed")); n != admin.BrakeFailures {
		t.Errorf("%d admin_auth_failed lines after attempts held back, want still %d", n, admin.BrakeFailures)
	}
	clock.Add(45 * time.Second)
	wantCode(t, "PURGE with the token once the minute is over", adminDo(t, h, "PURGE", "http://example.com/p", "", adminToken), 200)
}
