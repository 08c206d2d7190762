package core

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/admin"
	"github.com/weirproxy/weir/core/budget"
	"github.com/weirproxy/weir/internal/redistest"
)

// storedKeys lists the cache keys the server holds under the prefix "weir:", sorted.
func storedKeys(t *testing.T, srv *redistest.Server) []string {
	t.Helper()
	reply := srv.MustDo("KEYS", "weir:*://*")
	list, ok := reply.([]interface{})
	if !ok {
		t.Fatalf("KEYS answered %v", reply)
	}
	var out []string
	for _, k := range list {
		out = append(out, strings.TrimPrefix(fmt.Sprint(k), "weir:"))
	}
	sort.Strings(out)
	return out
}

// awaitSweep waits for e's sweep of admin.path to end.
func awaitSweep(t *testing.T, e *engine) {
	t.Helper()
	if e.adminSweep == nil {
		t.Fatal("no sweep of admin.path started")
	}
	select {
	case <-e.adminSweep:
	case <-time.After(testWait):
		t.Fatal("the sweep of admin.path hangs")
	}
}

// TestAdminFirstSharedStore: with a shared store, a request under admin.path reaches the
// admin whatever another instance (the admin off) stored there, and the origin sees
// nothing of it; an engine turning the admin on sweeps what is stored under the path from
// the store, once, leaving the site's keys, and a reload that keeps the store does not
// sweep again.
func TestAdminFirstSharedStore(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	clock := newFakeClock()
	o := staticOrigin(t, 200, []string{"Cache-Control", "max-age=600"}, "origin's page")
	base := Settings{Now: clock.Now, Log: discardLog, StoreURL: "redis://" + srv.Addr}
	other := mustNew(t, uniqueEngineName(t), base, o)
	stored := []string{"/_weir/metrics", "/_weir", "/%5Fweir/api/state", "/_weirdo", "/site/_weir/x", "/page"}
	for _, p := range stored {
		wantCode(t, "another instance's "+p, do(t, other, "GET", "http://example.com"+p), 200)
	}
	want := []string{"http://example.com/%5Fweir/api/state", "http://example.com/_weir", "http://example.com/_weir/metrics",
		"http://example.com/_weirdo", "http://example.com/page", "http://example.com/site/_weir/x"}
	if got := storedKeys(t, srv); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("stored before the admin: %q, want %q", got, want)
	}

	name := uniqueEngineName(t)
	on := mustNew(t, name, adminSettings(base), o)
	awaitSweep(t, on.e)
	want = []string{"http://example.com/_weirdo", "http://example.com/page", "http://example.com/site/_weir/x"}
	if got := storedKeys(t, srv); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("stored after the sweep: %q, want %q", got, want)
	}

	// Another instance with the admin off stores under the path again.
	calls := o.callCount()
	wantCode(t, "another instance's page again", do(t, other, "GET", "http://example.com/_weir/metrics"), 200)
	wantCode(t, "another instance's escaped path again", do(t, other, "GET", "http://example.com/%5Fweir/metrics"), 200)
	wantCalls(t, o, calls+2)
	calls = o.callCount()
	// A reload that keeps the store does not sweep: what was stored stays, and is still
	// never served under the admin's path.
	on = mustNew(t, name, adminSettings(base), o)
	if on.e.adminSweep != nil {
		t.Error("a reload keeping the store swept admin.path again")
	}
	tests := []struct {
		desc, method, url, token string
		want                     int
	}{
		{desc: "metrics with the token", method: "GET", url: "http://example.com/_weir/metrics", token: adminToken, want: 200},
		{desc: "metrics without it", method: "GET", url: "http://example.com/_weir/metrics", want: 403},
		{desc: "HEAD", method: "HEAD", url: "http://example.com/_weir/metrics", token: adminToken, want: 200},
		{desc: "the escaped path", method: "GET", url: "http://example.com/%5Fweir/metrics", token: adminToken, want: 200},
		{desc: "with a query", method: "GET", url: "http://example.com/_weir/metrics?x=1", token: adminToken, want: 200},
		{desc: "a POST", method: "POST", url: "http://example.com/_weir/metrics", token: adminToken, want: 405},
	}
	for _, tt := range tests {
		w := adminDo(t, on, tt.method, tt.url, "", tt.token)
		if w.Code != tt.want || strings.Contains(w.Body.String(), "origin's page") {
			t.Errorf("%s: %d %q, want %d from the admin", tt.desc, w.Code, w.Body.String(), tt.want)
		}
		if got := w.Header().Get("Cache-Status"); got != "Weir; fwd=bypass; detail=admin" {
			t.Errorf("%s: Cache-Status %q, want the admin's", tt.desc, got)
		}
	}
	wantCalls(t, o, calls)
	if got := storedKeys(t, srv); len(got) != 5 {
		t.Errorf("stored after the reload: %q, want the two entries under the path kept", got)
	}
	wantCode(t, "the site's longer name, from the store", do(t, on, "GET", "http://example.com/_weirdo"), 200)
	wantCalls(t, o, calls)
}

// TestAdminFirstMemory: an answer stored under admin.path in process memory in an escaped
// spelling before the admin was on is dropped when it starts, and never served.
func TestAdminFirstMemory(t *testing.T) {
	clock := newFakeClock()
	name := uniqueEngineName(t)
	o := staticOrigin(t, 200, []string{"Cache-Control", "max-age=600"}, "origin's page")
	off := mustNew(t, name, Settings{Now: clock.Now, Log: discardLog}, o)
	do(t, off, "GET", "http://example.com/%5Fweir/metrics")
	if w := do(t, off, "GET", "http://example.com/%5Fweir/metrics"); !strings.Contains(w.Header().Get("Cache-Status"), "hit") {
		t.Fatalf("before the admin: Cache-Status %q, want a hit", w.Header().Get("Cache-Status"))
	}
	on := mustNew(t, name, adminSettings(Settings{Now: clock.Now, Log: discardLog}), o)
	if n, _ := on.e.mem.Len(); n != 0 {
		t.Errorf("%d entries in memory with the admin on, want the escaped path's dropped", n)
	}
	w := adminDo(t, on, "GET", "http://example.com/%5Fweir/metrics", "", adminToken)
	if w.Code != 200 || strings.Contains(w.Body.String(), "origin's page") {
		t.Errorf("with the admin: %d %q, want the admin's metrics", w.Code, w.Body.String())
	}
	wantCalls(t, o, 1)
}

// TestAdminPathSlash: "/_weir/" is "/_weir", the bare path included; a path of slashes
// alone fails New, naming admin.path.
func TestAdminPathSlash(t *testing.T) {
	o := staticOrigin(t, 200, []string{"Cache-Control", "max-age=600"}, "origin's page")
	s := adminSettings(Settings{Now: newFakeClock().Now, Log: discardLog})
	s.AdminPath = "/_weir/"
	h := newTestHandler(t, s, o)
	w := adminDo(t, h, "GET", "http://example.com/_weir", "", adminToken)
	if w.Code != http.StatusMovedPermanently || w.Header().Get("Location") != "/_weir/" {
		t.Errorf("the bare path: %d to %q, want the admin's redirect to /_weir/", w.Code, w.Header().Get("Location"))
	}
	wantCode(t, "metrics", adminDo(t, h, "GET", "http://example.com/_weir/metrics", "", adminToken), 200)
	wantCalls(t, o, 0)
	for _, p := range []string{"/", "//", "///"} {
		_, err := New(uniqueEngineName(t), Settings{AdminPath: p, AdminAccess: admin.Access{Token: adminToken}}, o)
		if !errors.Is(err, ErrSettings) || !strings.Contains(err.Error(), "admin.path") {
			t.Errorf("admin.path %q: New: %v, want ErrSettings naming admin.path", p, err)
		}
	}
}

// TestAdminNeverRefused: with a host's budget of 1/s spent and admission shedding every
// request past its limit, the admin's requests are still answered, and the clients' are
// refused.
func TestAdminNeverRefused(t *testing.T) {
	clock := newFakeClock()
	o := staticOrigin(t, 200, []string{"Cache-Control", "no-store"}, "page")
	lag := time.Duration(0)
	s := adminSettings(Settings{Now: clock.Now, Log: discardLog})
	s.Budgets = BudgetSettings{Host: budget.Rate{N: 1, Per: time.Second}}
	s.Admission = AdmissionSettings{KneeInFlight: 100, Lag: func() time.Duration { return lag }}
	h := newTestHandler(t, s, o)
	front := h.Front()
	serve := func(url, token string) *httptest.ResponseRecorder {
		r := newRequest("GET", url)
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		front.ServeHTTP(w, r)
		return w
	}
	wantCode(t, "a client within the budget", serve("http://example.com/a", ""), 200)
	wantCode(t, "a client over the budget", serve("http://example.com/b", ""), 429)
	for i := 0; i < 3; i++ {
		wantCode(t, "the admin over the budget", serve("http://example.com/_weir/metrics", adminToken), 200)
	}
	wantCode(t, "the admin over the budget, without the token", serve("http://example.com/_weir/metrics", ""), 403)
	lag = time.Second
	wantCode(t, "a client past admission's limit", serve("http://calm.example.com/a", ""), 503)
	wantCode(t, "the admin past admission's limit", serve("http://example.com/_weir/metrics", adminToken), 200)
	wantCode(t, "the admin's page past admission's limit", serve("http://example.com/_weir/", adminToken), 200)
	wantCalls(t, o, 1)
}
