package core_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/weirproxy/weir/core"
)

// A tiny origin behind Weir: the first request goes to the origin and stores the answer, the
// second is served from storage.
func ExampleNew() {
	origin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		fmt.Fprint(w, "hello")
	})
	// A fixed clock keeps the printed ttl stable.
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	h, err := core.New("example-new", core.Settings{Now: func() time.Time { return now }}, origin)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := 0; i < 2; i++ {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://example.com/greeting", nil))
		fmt.Println(w.Code, w.Body.String(), "|", w.Header().Get("Cache-Status"))
	}
	// Output:
	// 200 hello | Weir; fwd=uri-miss; stored
	// 200 hello | Weir; hit; ttl=60
}

// An answer that may not be shared is passed through and says why.
func ExampleNew_uncacheable() {
	origin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "private, max-age=60")
		fmt.Fprint(w, "your account")
	})
	h, err := core.New("example-new-uncacheable", core.Settings{}, origin)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := 0; i < 2; i++ {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://example.com/account", nil))
		fmt.Println(w.Body.String(), "|", w.Header().Get("Cache-Status"))
	}
	// Output:
	// your account | Weir; fwd=uri-miss; detail=private
	// your account | Weir; fwd=uri-miss; detail=uncacheable
}
