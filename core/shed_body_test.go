package core

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestAcceptedBody: the body a refusal takes follows the client's Accept (RFC 9110 section
// 12.5.1): JSON for a client that weighs it above HTML and text, the operator's page for
// one that prefers HTML when there is one, else the line of text.
func TestAcceptedBody(t *testing.T) {
	tests := []struct {
		desc   string
		accept []string
		page   bool
		want   int
	}{
		{desc: "no Accept", want: bodyText},
		{desc: "anything", accept: []string{"*/*"}, want: bodyText},
		{desc: "an API client", accept: []string{"application/json"}, want: bodyJSON},
		{desc: "JSON before anything", accept: []string{"application/json, */*;q=0.5"}, want: bodyJSON},
		{desc: "application/* above text", accept: []string{"application/*, text/plain;q=0.5"}, want: bodyJSON},
		{desc: "JSON weighed below HTML", accept: []string{"text/html, application/json;q=0.9"}, want: bodyText},
		{desc: "JSON equal to text", accept: []string{"application/json, text/plain"}, want: bodyText},
		{desc: "JSON refused", accept: []string{"application/json;q=0"}, want: bodyText},
		{desc: "a browser, a page set", accept: []string{"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}, page: true, want: bodyHTML},
		{desc: "a browser, no page", accept: []string{"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}, want: bodyText},
		{desc: "text above HTML", accept: []string{"text/plain, text/html;q=0.5"}, page: true, want: bodyText},
		{desc: "two field lines", accept: []string{"text/html;q=0.1", "application/json"}, want: bodyJSON},
		{desc: "case and spaces", accept: []string{" Application/JSON ; Q=1 "}, want: bodyJSON},
		{desc: "a weight that does not parse", accept: []string{"application/json;q=lots"}, want: bodyText},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if got := acceptedBody(tc.accept, tc.page); got != tc.want {
				t.Errorf("acceptedBody(%q, page %v) = %d, want %d", tc.accept, tc.page, got, tc.want)
			}
		})
	}
}

// FuzzAcceptedBody: any Accept gives one of the three bodies, and never a page when none is
// set.
func FuzzAcceptedBody(f *testing.F) {
	for _, s := range []string{"", "*/*", "application/json", "text/html;q=0.9, application/json;q=", ";;;,,,q=", "a/b;q=1e400"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, accept string) {
		got := acceptedBody([]string{accept}, false)
		if got != bodyText && got != bodyJSON {
			t.Errorf("acceptedBody(%q) = %d without a page", accept, got)
		}
	})
}

// TestRefusalBodies: an open breaker's refusal and a negative entry's answer keep their
// status, Retry-After and Cache-Status, with the body the client's Accept asks for.
func TestRefusalBodies(t *testing.T) {
	clock := newFakeClock()
	o := staticOrigin(t, http.StatusServiceUnavailable, nil, "down")
	h := newTestHandler(t, Settings{Now: clock.Now, RefusalBody: `<h1>{status}: back in {retryAfter}s ({detail})</h1>`}, o)
	if err := (operator{e: h.e, s: *h.s}).OpenBreaker("example.com", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	const detail = "circuit-open; key=example.com"
	tests := []struct {
		desc        string
		accept      string
		contentType string
		body        string
	}{
		{desc: "text", contentType: "text/plain; charset=utf-8", body: "origin unavailable, retry later\n"},
		{desc: "JSON", accept: "application/json", contentType: "application/json",
			body: `{"error":"` + detail + `","retryAfter":30}` + "\n"},
		{desc: "HTML", accept: "text/html", contentType: "text/html; charset=utf-8",
			body: "<h1>503: back in 30s (circuit-open; key=example.com)</h1>"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			var header []string
			if tc.accept != "" {
				header = []string{"Accept", tc.accept}
			}
			w := do(t, h, http.MethodGet, "http://example.com/a", header...)
			wantAnswer(t, w, http.StatusServiceUnavailable, "Weir; fwd=uri-miss; detail="+detail, tc.body)
			if got := w.Header().Get("Content-Type"); got != tc.contentType {
				t.Errorf("Content-Type %q, want %q", got, tc.contentType)
			}
			if got := w.Header().Get("Retry-After"); got != "30" {
				t.Errorf("Retry-After %q, want 30", got)
			}
		})
	}

	// A negative entry's answer: the origin's 503 remembered, the body negotiated likewise.
	h2 := newTestHandler(t, Settings{Now: clock.Now}, o)
	do(t, h2, http.MethodGet, "http://example.com/n")
	w := do(t, h2, http.MethodGet, "http://example.com/n", "Accept", "application/json")
	var got refusalJSON
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || got.Error != "negative" || got.RetryAfter < 1 {
		t.Errorf("negative entry's JSON body %q (%v), want error negative and retryAfter", w.Body, err)
	}
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Errorf("negative entry: %d, Retry-After %q; want 503 with Retry-After", w.Code, w.Header().Get("Retry-After"))
	}
}

// TestRefusalPageChecked: a refusal.body larger than a page fails New naming the field.
func TestRefusalPageChecked(t *testing.T) {
	_, err := New(uniqueEngineName(t), Settings{RefusalBody: strings.Repeat("x", maxRefusalBody+1)}, http.NotFoundHandler())
	if err == nil || !strings.Contains(err.Error(), "refusal.body") {
		t.Errorf("refusal.body of %d bytes: error %v, want one naming refusal.body", maxRefusalBody+1, err)
	}
}

// TestRefusalPageEscapes: the detail is HTML-escaped into the page; the placeholders are
// replaced wherever they stand.
func TestRefusalPageEscapes(t *testing.T) {
	got := refusalPage("<p>{detail}</p><p>{retryAfter} {retryAfter} {status}</p>", `a"<b>`, 7, 503)
	if want := "<p>a&#34;&lt;b&gt;</p><p>7 7 503</p>"; got != want {
		t.Errorf("refusalPage = %q, want %q", got, want)
	}
}
