package core

import (
	"net/http"
	"testing"

	"github.com/weirproxy/weir/internal/fixture"
)

// recordedOrigin answers every request with the recorded answer name (testdata/origin).
func recordedOrigin(t *testing.T, name string) (*scriptOrigin, *fixture.Answer) {
	t.Helper()
	a, err := fixture.ReadAnswer(name)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) { a.ServeHTTP(w, r) }), a
}

// Answers recorded from origins (testdata/origin), asked for twice: what Weir stores of
// each, and which fields reach the client. The recorded Date is the fake clock's now.
func TestRecordedAnswers(t *testing.T) {
	tests := []struct {
		answer     string
		wantFirst  string
		wantSecond string
		wantCalls  int
		// wantFields are fields both answers carry, name and value pairs; wantGone fields
		// neither carries.
		wantFields []string
		wantGone   []string
	}{
		{answer: "static-asset.http", wantFirst: "Weir; fwd=uri-miss; stored", wantSecond: "Weir; hit; ttl=31536000", wantCalls: 1,
			wantFields: []string{"Content-Type", "text/css; charset=utf-8", "Etag", `"5f3c9a-1f4"`}},
		{answer: "session-page.http", wantFirst: "Weir; fwd=uri-miss; detail=set-cookie", wantSecond: "Weir; fwd=uri-miss; detail=uncacheable", wantCalls: 2,
			wantFields: []string{"Set-Cookie", "session=3f9a1c; Path=/; HttpOnly; Secure"}},
		// Weir-Cache-Control decides (RFC 9213) and, like Surrogate-Control, never leaves
		// Weir; CDN-Cache-Control and Cache-Control are for those after it.
		{answer: "cdn-targeted.http", wantFirst: "Weir; fwd=uri-miss; stored", wantSecond: "Weir; hit; ttl=30", wantCalls: 1,
			wantFields: []string{"Cache-Control", "no-store", "Cdn-Cache-Control", "max-age=120"},
			wantGone:   []string{"Weir-Cache-Control", "Surrogate-Control"}},
		{answer: "not-found.http", wantFirst: "Weir; fwd=uri-miss; stored", wantSecond: "Weir; hit; ttl=60", wantCalls: 1},
	}
	for _, tc := range tests {
		t.Run(tc.answer, func(t *testing.T) {
			o, a := recordedOrigin(t, "origin/"+tc.answer)
			h := newFrozenHandler(t, o)
			for i, want := range []string{tc.wantFirst, tc.wantSecond} {
				w := do(t, h, http.MethodGet, "http://example.com/recorded")
				wantAnswer(t, w, a.Status, want, string(a.Body))
				wantTargetedFields(t, i+1, w.Header(), tc.wantFields, tc.wantGone)
			}
			wantCalls(t, o, tc.wantCalls)
		})
	}
}

// A recorded 503 with Retry-After, nothing stored: the client gets it, and the next one the
// negative entry's answer, a refusal's line of text, within negative.ttl (FR-NEG-1, FR-NEG-2).
func TestRecordedUnavailable(t *testing.T) {
	o, a := recordedOrigin(t, "origin/unavailable.http")
	h := newFrozenHandler(t, o)
	w := do(t, h, http.MethodGet, "http://example.com/recorded")
	wantAnswer(t, w, http.StatusServiceUnavailable, "Weir; fwd=uri-miss; detail=origin-error", string(a.Body))
	w = do(t, h, http.MethodGet, "http://example.com/recorded")
	wantAnswer(t, w, http.StatusServiceUnavailable, "Weir; hit; ttl=2; detail=negative", "origin unavailable, retry later\n")
	if got := w.Header().Get("Retry-After"); got != "7" {
		t.Errorf("Retry-After from the negative entry = %q, want the origin's 7", got)
	}
	wantCalls(t, o, 1)
}
