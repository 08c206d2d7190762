package admin

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/console"
	"github.com/weirproxy/weir/core/events"
)

// fakeConsole is a fakeEngine with the console's endpoints.
type fakeConsole struct {
	fakeEngine
	kind, host, url string
}

func (f *fakeConsole) Series(now time.Time, since int64) console.View {
	return console.View{Step: 1, Names: []string{"client"}, Times: []int64{now.Unix()}, Values: [][]float64{{3}}}
}
func (f *fakeConsole) Events(kind, host string, n int) []events.Record {
	f.kind, f.host = kind, host
	return []events.Record{{Seq: 1, Name: "breaker_opened"}}
}
func (f *fakeConsole) Tables(now time.Time) Tables { return Tables{Seconds: 900} }
func (f *fakeConsole) Lookup(_ context.Context, url string, now time.Time) (Entry, error) {
	f.url = url
	if url == "bad" {
		return Entry{}, errors.New("url: \"bad\" is not an absolute http or https URL")
	}
	return Entry{URL: url, Found: true}, nil
}
func (f *fakeConsole) Fleet(_ context.Context, now time.Time) (Fleet, error) { return Fleet{}, nil }

// TestConsoleEndpoints: the console's endpoints answer GET with the token, pass their query
// on, refuse other methods and anyone without the token, and are absent for an engine
// without a console.
func TestConsoleEndpoints(t *testing.T) {
	f := &fakeConsole{}
	h := NewHandler("/_weir", &Access{Token: testToken}, f, func() time.Time { return testNow })
	auth := "Bearer " + testToken
	tests := []struct {
		desc, method, path, auth string
		want                     int
	}{
		{"the series", "GET", "/_weir/api/series", auth, http.StatusOK},
		{"the series without the token", "GET", "/_weir/api/series", "", http.StatusForbidden},
		{"the events, filtered", "GET", "/_weir/api/events?kind=breaker_opened&host=a.example.com", auth, http.StatusOK},
		{"the tables", "GET", "/_weir/api/tables", auth, http.StatusOK},
		{"a lookup", "GET", "/_weir/api/lookup?url=https%3A%2F%2Fa.example.com%2Fx", auth, http.StatusOK},
		{"a lookup of no URL", "GET", "/_weir/api/lookup?url=bad", auth, http.StatusBadRequest},
		{"the fleet", "GET", "/_weir/api/fleet", auth, http.StatusOK},
		{"a POST", "POST", "/_weir/api/series", auth, http.StatusMethodNotAllowed},
	}
	for _, tt := range tests {
		w := serve(t, h, request{method: tt.method, path: tt.path, auth: tt.auth, contentType: contentTypeJSON})
		if w.Code != tt.want {
			t.Errorf("%s: status %d, want %d (%s)", tt.desc, w.Code, tt.want, w.Body.String())
		}
	}
	if f.kind != "breaker_opened" || f.host != "a.example.com" || f.url != "bad" {
		t.Errorf("passed on: kind %q host %q url %q, want breaker_opened, a.example.com, bad", f.kind, f.host, f.url)
	}
	plain, _ := newTestAdmin(t)
	if w := serve(t, plain, request{path: "/_weir/api/series", auth: auth}); w.Code != http.StatusNotFound {
		t.Errorf("an engine without a console: status %d, want 404", w.Code)
	}
}
