package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The tokens of TestAdminSecurity: each at least the 24 characters New requires.
const (
	securityToken = "e2e-admin-security-token-0123"
	fileToken     = "e2e-token-read-from-a-file-4567"
)

// securityRoutes: /as through a middleware whose token is read from tokenFile and whose
// admin.allow is the test's loopback address; /ao through one whose admin.allow the test is
// outside; /ab for the brake; /ah whose admin answers only for ops.example.test.
func securityRoutes(tokenFile string) Dynamic {
	return Dynamic{
		Routes: []Route{
			{Name: "as", Rule: "PathPrefix(`/as`)", Middleware: "weir-as"},
			{Name: "ao", Rule: "PathPrefix(`/ao`)", Middleware: "weir-ao"},
			{Name: "ab", Rule: "PathPrefix(`/ab`)", Middleware: "weir-ab"},
			{Name: "ah", Rule: "PathPrefix(`/ah`)", Middleware: "weir-ah"},
		},
		Middlewares: map[string]map[string]interface{}{
			"weir-as": {"admin": map[string]interface{}{"path": "/as/_weir", "tokenFile": tokenFile, "allow": []string{"127.0.0.1/32"}}},
			"weir-ao": {"admin": map[string]interface{}{"path": "/ao/_weir", "token": securityToken, "allow": []string{"10.0.0.0/8"}}},
			"weir-ab": {"admin": map[string]interface{}{"path": "/ab/_weir", "token": securityToken},
				"cache": map[string]interface{}{"allowPurge": "true"}},
			"weir-ah": {"admin": map[string]interface{}{"path": "/ah/_weir", "token": securityToken, "hosts": "ops.example.test"}},
		},
	}
}

// noRedirects is a client for the entry points that hands a redirect back as it is, so that
// the sign-in's 303 and its Set-Cookie are read.
func noRedirects(tr *Traefik) *http.Client {
	c := *tr.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

// signInThrough posts token to the sign-in form at path with header, and returns the
// answer and its session cookie (nil: none).
func signInThrough(t *testing.T, tr *Traefik, path, token string, header map[string]string) (reply, *http.Cookie) {
	t.Helper()
	h := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	for k, v := range header {
		h[k] = v
	}
	r, err := fetchBody(context.Background(), noRedirects(tr), requestTimeout, http.MethodPost, tr.URL(path), h, "token="+token)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	resp := http.Response{Header: r.header}
	for _, c := range resp.Cookies() {
		if c.Name == "weir_admin" {
			return r, c
		}
	}
	return r, nil
}

// TestAdminSecurity, through real Traefik with Weir under Yaegi: the token read from
// admin.tokenFile opens the admin; admin.allow narrows who may present the token and never
// replaces it; the sign-in cookie is a signed session that expires, not the token, and Secure
// when a trusted proxy says the page was reached over HTTPS; ten failed tokens a minute from
// one address, then 429; admin.hosts answers 404 for other names; and a configuration with
// admin.allow and no token, or a short token, is refused when the middleware is built.
func TestAdminSecurity(t *testing.T) {
	o := newOrigin(t)
	tokenFile := filepath.Join(t.TempDir(), "admin-token")
	if err := os.WriteFile(tokenFile, []byte("\n  "+fileToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Traefik trusts the test's forwarded headers (X-Forwarded-Proto): the test speaks as a
	// TLS-terminating proxy in front of it.
	tr := startTraefikWith(t, Options{TrustForwarded: true}, o.URL, securityRoutes(tokenFile))
	bearer := func(token string) map[string]string { return map[string]string{"Authorization": "Bearer " + token} }

	t.Run("the token from admin.tokenFile, read under Yaegi", func(t *testing.T) {
		if r := send(t, tr, "GET", "/as/_weir/api/state", bearer(fileToken)); r.status != http.StatusOK {
			t.Errorf("the file's token: %d %q, want 200", r.status, short(r.body))
		}
		if r := send(t, tr, "GET", "/as/_weir/api/state", bearer(securityToken)); r.status != http.StatusForbidden {
			t.Errorf("another token: %d, want 403", r.status)
		}
	})

	t.Run("admin.allow narrows the token, never replaces it", func(t *testing.T) {
		if r := send(t, tr, "GET", "/as/_weir/api/state", nil); r.status != http.StatusForbidden {
			t.Errorf("inside admin.allow without the token: %d %q, want 403", r.status, short(r.body))
		}
		if r := send(t, tr, "GET", "/ao/_weir/api/state", bearer(securityToken)); r.status != http.StatusForbidden || !strings.Contains(r.body, "admin.allow") {
			t.Errorf("outside admin.allow with the token: %d %q, want 403 naming admin.allow", r.status, short(r.body))
		}
	})

	t.Run("the session cookie", func(t *testing.T) {
		began := time.Now()
		r, c := signInThrough(t, tr, "/as/_weir/login", fileToken, nil)
		if r.status != http.StatusSeeOther || c == nil {
			t.Fatalf("sign-in: %d, cookie %v; want 303 with the session cookie", r.status, c)
		}
		setCookie := r.header.Get("Set-Cookie")
		t.Logf("Set-Cookie: %s", setCookie)
		expiry, mac, ok := strings.Cut(c.Value, ".")
		unix, err := strconv.ParseInt(expiry, 10, 64)
		if !ok || err != nil || mac == "" || strings.Contains(c.Value, fileToken) {
			t.Errorf("cookie value %q, want <expiry>.<MAC>, not the token", c.Value)
		}
		if until := time.Unix(unix, 0).Sub(began); until < 12*time.Hour-time.Minute || until > 12*time.Hour+time.Minute {
			t.Errorf("the session ends in %v, want 12h", until)
		}
		if c.MaxAge != 43200 || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/as/_weir/" || c.Secure {
			t.Errorf("Set-Cookie %q: want Max-Age=43200, HttpOnly, SameSite=Strict, Path=/as/_weir/, no Secure over plain HTTP", setCookie)
		}
		cookie := map[string]string{"Cookie": c.Name + "=" + c.Value}
		if r := send(t, tr, "GET", "/as/_weir/api/state", cookie); r.status != http.StatusOK {
			t.Errorf("with the session: %d %q, want 200", r.status, short(r.body))
		}
		forged := map[string]string{"Cookie": c.Name + "=" + strconv.FormatInt(unix+86400, 10) + "." + mac}
		if r := send(t, tr, "GET", "/as/_weir/api/state", forged); r.status != http.StatusForbidden {
			t.Errorf("the session with its expiry moved: %d, want 403", r.status)
		}
		if r := send(t, tr, "GET", "/as/_weir/api/state", map[string]string{"Cookie": c.Name + "=" + fileToken}); r.status != http.StatusForbidden {
			t.Errorf("the token as the cookie: %d, want 403", r.status)
		}
	})

	t.Run("Secure behind a trusted proxy's X-Forwarded-Proto", func(t *testing.T) {
		r, c := signInThrough(t, tr, "/as/_weir/login", fileToken, map[string]string{"X-Forwarded-Proto": "https"})
		if r.status != http.StatusSeeOther || c == nil || !c.Secure {
			t.Errorf("sign-in with X-Forwarded-Proto: https: %d, Set-Cookie %q; want 303 and a Secure cookie", r.status, r.header.Get("Set-Cookie"))
		}
		page := send(t, tr, "GET", "/as/_weir/", nil)
		if page.status != http.StatusForbidden || !strings.Contains(page.body, "<form") || strings.Contains(page.body, "plain HTTP") {
			t.Errorf("the sign-in page from loopback: %d, warning shown %t; want the form without the plain-HTTP warning",
				page.status, strings.Contains(page.body, "plain HTTP"))
		}
	})

	t.Run("the brake after ten failures", func(t *testing.T) {
		for i := 1; i <= 10; i++ {
			var r reply
			if i%2 == 0 {
				r, _ = signInThrough(t, tr, "/ab/_weir/login", fmt.Sprintf("guess-%d", i), nil)
			} else {
				r = send(t, tr, "GET", "/ab/_weir/api/state", bearer(fmt.Sprintf("guess-%d", i)))
			}
			if r.status != http.StatusForbidden {
				t.Fatalf("failure %d: %d %q, want 403", i, r.status, short(r.body))
			}
		}
		for _, q := range []struct {
			method, path string
		}{{"GET", "/ab/_weir/api/state"}, {"PURGE", "/ab/page"}} {
			r := send(t, tr, q.method, q.path, bearer(securityToken))
			ra, err := strconv.Atoi(r.header.Get("Retry-After"))
			if r.status != http.StatusTooManyRequests || err != nil || ra < 1 || ra > 60 || r.cacheStatus().params["detail"] != "auth-throttled" {
				t.Errorf("%s %s with the right token after ten failures: %d, Retry-After %q, Cache-Status %q; want 429, 1 to 60, detail=auth-throttled",
					q.method, q.path, r.status, r.header.Get("Retry-After"), r.header.Get("Cache-Status"))
			}
		}
		if r := send(t, tr, "GET", "/as/_weir/api/state", bearer(fileToken)); r.status != http.StatusOK {
			t.Errorf("another middleware's admin: %d, want 200: the brake is each middleware's", r.status)
		}
		waitLog(t, tr, "event=admin_auth_failed middleware=weir-ab@file client=127.0.0.1 way=form failures=10 throttled=true")
		if log := tr.LogTail(400); !strings.Contains(log, "level=warn event=admin_auth_failed") || strings.Contains(log, "guess-") {
			t.Errorf("Traefik's log: want admin_auth_failed warnings without the tokens tried")
		}
	})

	t.Run("admin.hosts", func(t *testing.T) {
		if r := send(t, tr, "GET", "/ah/_weir/api/state", map[string]string{"Authorization": "Bearer " + securityToken, "Host": "OPS.example.test"}); r.status != http.StatusOK {
			t.Errorf("a listed host: %d %q, want 200", r.status, short(r.body))
		}
		for _, p := range []string{"/ah/_weir/api/state", "/ah/_weir/", "/ah/_weir/page.css"} {
			r := send(t, tr, "GET", p, bearer(securityToken))
			if r.status != http.StatusNotFound || strings.Contains(r.body, "admin") {
				t.Errorf("GET %s on another host: %d %q, want a 404 that names no admin", p, r.status, short(r.body))
			}
		}
	})

	for _, p := range []string{"/as/_weir/api/state", "/ao/_weir/api/state", "/ab/_weir/api/state", "/ah/_weir/api/state", "/as/_weir/login", "/ab/page"} {
		if n := o.Count(p); n != 0 {
			t.Errorf("%s reached the origin %d times, want 0", p, n)
		}
	}

	t.Run("refused when built: admin.allow without a token, a short token", func(t *testing.T) {
		const shortToken = "only-12-char"
		bad := securityRoutes(tokenFile)
		bad.Routes = append(bad.Routes,
			Route{Name: "an", Rule: "PathPrefix(`/an`)", Middleware: "weir-an"},
			Route{Name: "at", Rule: "PathPrefix(`/at`)", Middleware: "weir-at"})
		bad.Middlewares["weir-an"] = map[string]interface{}{"admin": map[string]interface{}{"path": "/an/_weir", "allow": []string{"127.0.0.1/32"}}}
		bad.Middlewares["weir-at"] = map[string]interface{}{"admin": map[string]interface{}{"path": "/at/_weir", "token": shortToken}}
		err := tr.Apply(bad)
		if !errors.Is(err, errRouter) {
			t.Fatalf("Apply with admin.allow and no token: err = %v, want %v", err, errRouter)
		}
		log := tr.LogTail(400)
		for _, want := range []string{
			`admin.allow: needs admin.token: the allow list narrows who may present the token, it no longer replaces it`,
			"routerName=an@file",
			`admin.token: 12 characters; at least 24`,
			"routerName=at@file",
		} {
			if !strings.Contains(log, want) {
				t.Errorf("Traefik's log lacks %q", want)
			}
		}
		if strings.Contains(log, shortToken) {
			t.Errorf("Traefik's log prints the short token")
		}
		if r := get(t, tr, "/an/_weir/api/state"); r.status != http.StatusNotFound || r.header.Get("Cache-Status") != "" {
			t.Errorf("GET /an/_weir/api/state, its router disabled: %d (Cache-Status %q), want Traefik's 404", r.status, r.header.Get("Cache-Status"))
		}
	})
}

// waitLog waits up to 10s for want in Traefik's log: event lines reach it through Traefik's
// standard error, which the harness writes to the log's neighbour.
func waitLog(t *testing.T, tr *Traefik, want string) {
	t.Helper()
	if !waitFor(10*time.Second, func() bool { return strings.Contains(tr.LogTail(400), want) }) {
		t.Errorf("Traefik's log lacks %q:\n%s", want, tr.LogTail(40))
	}
}
