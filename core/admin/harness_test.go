package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// fakeEngine records the calls the admin makes and answers with what a test set.
type fakeEngine struct {
	calls []string
	state State
	err   error
}

func (f *fakeEngine) State(now time.Time) State {
	s := f.state
	s.Time = now
	return s
}

func (f *fakeEngine) record(call string) error {
	f.calls = append(f.calls, call)
	return f.err
}

func (f *fakeEngine) OpenBreaker(key string, d time.Duration) error {
	return f.record(fmt.Sprintf("open %s %s", key, d))
}
func (f *fakeEngine) CloseBreaker(key string) error   { return f.record("close " + key) }
func (f *fakeEngine) RemoveOverride(key string) error { return f.record("reset " + key) }
func (f *fakeEngine) DeclareBreaker(key string) error { return f.record("declare " + key) }
func (f *fakeEngine) SetPace(name, rate string) error { return f.record("pace " + name + " " + rate) }
func (f *fakeEngine) ClearPace(name string) error     { return f.record("unpace " + name) }
func (f *fakeEngine) SetOverride(key, params string) error {
	return f.record("override " + key + ": " + params)
}

func (f *fakeEngine) Purge(_ context.Context, p Purge) (int, error) {
	return 3, f.record(fmt.Sprintf("purge %+v", p))
}

func (f *fakeEngine) WriteMetrics(w io.Writer) error {
	f.calls = append(f.calls, "metrics")
	_, err := io.WriteString(w, "weir_up 1\n")
	return err
}

// testToken is a token as long as New requires (admin.MinTokenLength).
const testToken = "s3cret-token-of-24-chars"

var testNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// newTestAdmin serves a fake engine under /_weir, open to testToken from any address.
func newTestAdmin(t *testing.T) (*Handler, *fakeEngine) {
	t.Helper()
	f := &fakeEngine{state: State{Middleware: "weir"}}
	return NewHandler("/_weir/", &Access{Token: testToken}, f, func() time.Time { return testNow }), f
}

// request is one request to the admin: from remote, with the token when auth is set.
type request struct {
	method, path, body, contentType, auth, remote string
	header                                        map[string]string
}

func serve(t *testing.T, h http.Handler, q request) *httptest.ResponseRecorder {
	t.Helper()
	if q.method == "" {
		q.method = http.MethodGet
	}
	var body io.Reader
	if q.body != "" {
		body = strings.NewReader(q.body)
	}
	r := httptest.NewRequest(q.method, "http://example.com"+q.path, body)
	r.RemoteAddr = "192.0.2.7:5555"
	if q.remote != "" {
		r.RemoteAddr = q.remote
	}
	if q.contentType != "" {
		r.Header.Set("Content-Type", q.contentType)
	}
	if q.auth != "" {
		r.Header.Set("Authorization", q.auth)
	}
	for k, v := range q.header {
		if k == "Host" {
			// The request line's host, as a server reads it.
			r.Host = v
			continue
		}
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// post sends an action with the token.
func post(t *testing.T, h http.Handler, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	return serve(t, h, request{method: http.MethodPost, path: path, body: body,
		contentType: "application/json", auth: "Bearer " + testToken})
}

var errBoom = errors.New("window: \"-1s\" must be positive")
