package core

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Traefik calls New again on every configuration change: what the cache holds survives a
// reload that keeps the cache-relevant settings, and only such a reload.
func TestRegistryReload(t *testing.T) {
	clock := newFakeClock()
	base := Settings{Now: clock.Now, QueryDrop: []string{"a", "b"}, MaxSize: 1 << 20, DefaultTTL: time.Minute}
	tests := []struct {
		desc     string
		change   func(s *Settings)
		wantKept bool
	}{
		{desc: "same settings", change: func(s *Settings) {}, wantKept: true},
		{desc: "QueryDrop in another order", change: func(s *Settings) { s.QueryDrop = []string{"b", "a"} }, wantKept: true},
		{desc: "coalescing settings", change: func(s *Settings) {
			s.LeaderMaxAge = time.Second
			s.FollowerMaxWait = time.Second
			s.HitForMissTTL = time.Second
		}, wantKept: true},
		{desc: "timeouts", change: func(s *Settings) { s.OriginTimeout = time.Minute }, wantKept: true},
		{desc: "QueryDrop", change: func(s *Settings) { s.QueryDrop = []string{"a"} }, wantKept: false},
		{desc: "MaxSize", change: func(s *Settings) { s.MaxSize = 2 << 20 }, wantKept: false},
		{desc: "MaxEntrySize", change: func(s *Settings) { s.MaxEntrySize = 1 << 10 }, wantKept: false},
		{desc: "DefaultTTL", change: func(s *Settings) { s.DefaultTTL = time.Hour }, wantKept: false},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			name := uniqueEngineName(t)
			o := staticOrigin(t, 200, []string{"Cache-Control", "max-age=600"}, "x")
			do(t, mustNew(t, name, base, o), http.MethodGet, "http://example.com/r")
			s := base
			s.QueryDrop = append([]string(nil), base.QueryDrop...)
			tc.change(&s)
			w := do(t, mustNew(t, name, s, o), http.MethodGet, "http://example.com/r")
			want := "Weir; fwd=uri-miss; stored"
			if tc.wantKept {
				want = "Weir; hit; ttl=600"
			}
			if got := w.Header().Get("Cache-Status"); got != want {
				t.Errorf("after the reload: Cache-Status = %q, want %q", got, want)
			}
		})
	}
}

// Two middlewares never share entries, whatever their settings.
func TestRegistryNamesApart(t *testing.T) {
	s := Settings{Now: newFakeClock().Now}
	o := staticOrigin(t, 200, []string{"Cache-Control", "max-age=600"}, "x")
	first := uniqueEngineName(t)
	second := uniqueEngineName(t)
	do(t, mustNew(t, first, s, o), http.MethodGet, "http://example.com/n")
	w := do(t, mustNew(t, second, s, o), http.MethodGet, "http://example.com/n")
	if got := w.Header().Get("Cache-Status"); got != "Weir; fwd=uri-miss; stored" {
		t.Errorf("second middleware: Cache-Status = %q, want a miss", got)
	}
	w = do(t, mustNew(t, first, s, o), http.MethodGet, "http://example.com/n")
	if got := w.Header().Get("Cache-Status"); got != "Weir; hit; ttl=600" {
		t.Errorf("first middleware again: Cache-Status = %q, want a hit", got)
	}
}

// Handlers built for two routers of one middleware share its engine: one fetch serves both.
func TestRegistrySharedBetweenRouters(t *testing.T) {
	name := uniqueEngineName(t)
	s := Settings{Now: newFakeClock().Now}
	o := staticOrigin(t, 200, []string{"Cache-Control", "max-age=600"}, "x")
	a := mustNew(t, name, s, o)
	b := mustNew(t, name, s, o)
	do(t, a, http.MethodGet, "http://example.com/shared")
	if got := do(t, b, http.MethodGet, "http://example.com/shared").Header().Get("Cache-Status"); got != "Weir; hit; ttl=600" {
		t.Errorf("second router: Cache-Status = %q, want a hit", got)
	}
}

// Requests through two routers of one middleware coalesce into one fetch.
func TestRegistryRoutersShareFlights(t *testing.T) {
	name := uniqueEngineName(t)
	s := Settings{Now: newFakeClock().Now}
	o := staticOrigin(t, 200, []string{"Cache-Control", "max-age=600"}, "x")
	o.hold(1)
	a := mustNew(t, name, s, o)
	b := mustNew(t, name, s, o)
	const url = "http://example.com/routers"
	leader := serveAsync(a, newRequest(http.MethodGet, url))
	o.waitEntered(t, 1)
	follower := serveAsync(b, newRequest(http.MethodGet, url))
	waitFollowers(t, b, url, 1)
	o.release(1)
	wantAnswer(t, awaitAnswer(t, leader), 200, "Weir; fwd=uri-miss; stored", "x")
	wantAnswer(t, awaitAnswer(t, follower), 200, "Weir; fwd=uri-miss; collapsed", "x")
	wantCalls(t, o, 1)
}

// A reload while a fetch is under way: the fetch still answers those who wait on it.
func TestRegistryReloadDuringFlight(t *testing.T) {
	name := uniqueEngineName(t)
	clock := newFakeClock()
	o := countingOrigin(t, []string{"Cache-Control", "max-age=600"})
	o.hold(1)
	old := mustNew(t, name, Settings{Now: clock.Now}, o)
	const url = "http://example.com/reload-flight"
	leader := serveAsync(old, newRequest(http.MethodGet, url))
	o.waitEntered(t, 1)
	follower := serveAsync(old, newRequest(http.MethodGet, url))
	waitFollowers(t, old, url, 1)
	// The new configuration changes how long flights take followers: a new flight table.
	mustNew(t, name, Settings{Now: clock.Now, LeaderMaxAge: time.Second}, o)
	o.release(1)
	wantAnswer(t, awaitAnswer(t, leader), 200, "Weir; fwd=uri-miss; stored", "v1")
	wantAnswer(t, awaitAnswer(t, follower), 200, "Weir; fwd=uri-miss; collapsed", "v1")
}

// Traefik builds the next configuration while the previous one still serves: New and
// ServeHTTP run at once (the race detector checks the engine is never changed in place).
func TestRegistryReloadUnderTraffic(t *testing.T) {
	name := uniqueEngineName(t)
	o := staticOrigin(t, 200, []string{"Cache-Control", "max-age=600"}, "x")
	h := mustNew(t, name, Settings{}, o)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 100; i++ {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, newRequest(http.MethodGet, "http://example.com/traffic/"+fmt.Sprint(i%7)))
		}
	}()
	for i := 0; i < 20; i++ {
		s := Settings{LeaderMaxAge: time.Duration(1+i%2) * time.Second}
		if i%3 == 0 {
			s.MaxSize = 1 << 20
		}
		mustNew(t, name, s, o)
	}
	select {
	case <-done:
	case <-time.After(testWait):
		t.Fatal("requests hang during reloads")
	}
	// The last configuration serves from its own store.
	last := mustNew(t, name, Settings{LeaderMaxAge: 2 * time.Second}, o)
	do(t, last, http.MethodGet, "http://example.com/traffic/x")
	if got := do(t, last, http.MethodGet, "http://example.com/traffic/x").Header().Get("Cache-Status"); !strings.HasPrefix(got, "Weir; hit;") {
		t.Errorf("after the reloads: Cache-Status = %q, want a hit", got)
	}
}
