package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// adminFirstToken is the operator's token: at least 24 characters.
const adminFirstToken = "weir-admin-token-0123456789abcdef"

// TestAdminFirstUnderFlood: through a real Traefik, a Host flooded past its budget
// (budgets.host 2/10s) is answered 429, and the operator's admin on that Host, page and
// API, still answers 200 with the token while the flood goes on: the admin is served
// before the budgets. admin.path is written with a trailing slash, and the bare path is the
// admin's too. Nothing under the path reaches the origin.
func TestAdminFirstUnderFlood(t *testing.T) {
	o := newOrigin(t)
	o.Handle("/af/page", answer("no-store", "page"))
	o.Handle("/af/_weir", answer("max-age=60", "origin's admin path"))
	conf := map[string]interface{}{
		"budgets": map[string]interface{}{"host": "2/10s"},
		"admin":   map[string]interface{}{"path": "/af/_weir/", "token": adminFirstToken},
	}
	tr := startTraefik(t, o, cachedRoute("af", "/af/", "weir-adminfirst", conf))
	bearer := map[string]string{"Authorization": "Bearer " + adminFirstToken}

	var mu sync.Mutex
	codes := map[int]int{}
	flood := func(n int) {
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := fetchBody(context.Background(), tr.Client(), requestTimeout, http.MethodGet, tr.URL("/af/page"), nil, "")
				if err != nil {
					return
				}
				mu.Lock()
				codes[r.status]++
				mu.Unlock()
			}()
		}
		wg.Wait()
	}
	flood(40)
	for i := 0; i < 5; i++ {
		done := make(chan struct{})
		go func() {
			defer close(done)
			flood(20)
		}()
		wantStatus(t, fmt.Sprintf("the admin's state during the flood (%d)", i),
			send(t, tr, http.MethodGet, "/af/_weir/api/state", bearer), 200)
		r := send(t, tr, http.MethodGet, "/af/_weir/", bearer)
		wantStatus(t, fmt.Sprintf("the admin's page during the flood (%d)", i), r, 200)
		if got := r.header.Get("Cache-Status"); !strings.Contains(got, "detail=admin") {
			t.Errorf("the admin's page: Cache-Status %q, want the admin's", got)
		}
		<-done
	}
	wantOverBudget(t, "a client of the flooded Host", send(t, tr, http.MethodGet, "/af/page", nil))
	// The client follows the admin's redirect to the page.
	if r := send(t, tr, http.MethodGet, "/af/_weir", bearer); r.status != http.StatusOK || !strings.Contains(r.header.Get("Cache-Status"), "detail=admin") {
		t.Errorf("the bare admin path: status %d, Cache-Status %q, want the admin's page", r.status, r.header.Get("Cache-Status"))
	}
	wantStatus(t, "the admin without the token", send(t, tr, http.MethodGet, "/af/_weir/api/state", nil), 403)
	mu.Lock()
	defer mu.Unlock()
	if codes[http.StatusTooManyRequests] < 100 || codes[http.StatusOK] > 2 {
		t.Errorf("the flood's answers %v, want 429 for all but the budget's 2", codes)
	}
	for _, p := range []string{"/af/_weir", "/af/_weir/", "/af/_weir/api/state"} {
		wantCount(t, o, p, 0)
	}
}

// wantStatus fails unless r has the status.
func wantStatus(t *testing.T, what string, r reply, status int) {
	t.Helper()
	if r.status != status {
		t.Errorf("%s: status %d (Cache-Status %q), want %d", what, r.status, r.header.Get("Cache-Status"), status)
	}
}
