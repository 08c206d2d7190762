package core

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

func TestStorability(t *testing.T) {
	clock := newFakeClock()
	httpDate := func(d time.Duration) string { return clock.Now().Add(d).Format(http.TimeFormat) }
	const (
		stored = "Weir; fwd=uri-miss; stored"
		passed = "Weir; fwd=uri-miss; detail=uncacheable"
	)
	tests := []struct {
		desc        string
		reqHeader   []string
		status      int
		respHeader  []string
		defaultTTL  time.Duration
		wantFirst   string
		wantSecond  string
		wantAge     string // of the second answer, when it is a hit
		wantOrigins int
	}{
		{desc: "max-age", respHeader: []string{"Cache-Control", "max-age=60"},
			wantFirst: stored, wantSecond: "Weir; hit; ttl=60", wantAge: "0", wantOrigins: 1},
		{desc: "s-maxage wins over max-age", respHeader: []string{"Cache-Control", "max-age=10, s-maxage=100"},
			wantFirst: stored, wantSecond: "Weir; hit; ttl=100", wantAge: "0", wantOrigins: 1},
		{desc: "max-age wins over Expires", respHeader: []string{"Cache-Control", "max-age=30", "Date", httpDate(0), "Expires", httpDate(100 * time.Second)},
			wantFirst: stored, wantSecond: "Weir; hit; ttl=30", wantAge: "0", wantOrigins: 1},
		{desc: "Expires minus Date", respHeader: []string{"Date", httpDate(-20 * time.Second), "Expires", httpDate(100 * time.Second)},
			wantFirst: stored, wantSecond: "Weir; hit; ttl=100", wantAge: "20", wantOrigins: 1},
		{desc: "Age from the origin counts", respHeader: []string{"Cache-Control", "max-age=60", "Age", "15"},
			wantFirst: stored, wantSecond: "Weir; hit; ttl=45", wantAge: "15", wantOrigins: 1},
		{desc: "404 with max-age", status: 404, respHeader: []string{"Cache-Control", "max-age=60"},
			wantFirst: stored, wantSecond: "Weir; hit; ttl=60", wantAge: "0", wantOrigins: 1},
		{desc: "301 with max-age", status: 301, respHeader: []string{"Cache-Control", "max-age=60", "Location", "/x"},
			wantFirst: stored, wantSecond: "Weir; hit; ttl=60", wantAge: "0", wantOrigins: 1},
		{desc: "no-store", respHeader: []string{"Cache-Control", "max-age=60, no-store"},
			wantFirst: "Weir; fwd=uri-miss; detail=no-store", wantSecond: passed, wantOrigins: 2},
		{desc: "NO-STORE in capitals", respHeader: []string{"Cache-Control", "MAX-AGE=60, NO-STORE"},
			wantFirst: "Weir; fwd=uri-miss; detail=no-store", wantSecond: passed, wantOrigins: 2},
		{desc: "private", respHeader: []string{"Cache-Control", "private, max-age=60"},
			wantFirst: "Weir; fwd=uri-miss; detail=private", wantSecond: passed, wantOrigins: 2},
		{desc: "qualified private", respHeader: []string{"Cache-Control", `private="X-User", max-age=60`},
			wantFirst: "Weir; fwd=uri-miss; detail=private", wantSecond: passed, wantOrigins: 2},
		{desc: "Set-Cookie", respHeader: []string{"Cache-Control", "public, max-age=60", "Set-Cookie", "id=1"},
			wantFirst: "Weir; fwd=uri-miss; detail=set-cookie", wantSecond: passed, wantOrigins: 2},
		{desc: "201 with max-age is stored", status: 201, respHeader: []string{"Cache-Control", "max-age=60"},
			wantFirst: stored, wantSecond: "Weir; hit; ttl=60", wantAge: "0", wantOrigins: 1},
		{desc: "201 without freshness is not stored", status: 201, respHeader: []string{"Etag", `"x"`},
			wantFirst: "Weir; fwd=uri-miss; detail=status", wantSecond: passed, wantOrigins: 2},
		{desc: "599 with must-understand is not stored", status: 599, respHeader: []string{"Cache-Control", "max-age=60, must-understand"},
			wantFirst: "Weir; fwd=uri-miss; detail=status", wantSecond: passed, wantOrigins: 2},
		{desc: "206 is not stored", status: 206, respHeader: []string{"Cache-Control", "max-age=60"},
			wantFirst: "Weir; fwd=uri-miss; detail=status", wantSecond: passed, wantOrigins: 2},
		{desc: "Authorization without public", reqHeader: []string{"Authorization", "Bearer x"}, respHeader: []string{"Cache-Control", "max-age=60"},
			wantFirst: "Weir; fwd=uri-miss; detail=authorization", wantSecond: "Weir; fwd=uri-miss; detail=authorization", wantOrigins: 2},
		{desc: "Authorization with public", reqHeader: []string{"Authorization", "Bearer x"}, respHeader: []string{"Cache-Control", "public, max-age=60"},
			wantFirst: stored, wantSecond: "Weir; hit; ttl=60", wantAge: "0", wantOrigins: 1},
		{desc: "Authorization with s-maxage", reqHeader: []string{"Authorization", "Bearer x"}, respHeader: []string{"Cache-Control", "s-maxage=60"},
			wantFirst: stored, wantSecond: "Weir; hit; ttl=60", wantAge: "0", wantOrigins: 1},
		{desc: "Authorization with must-revalidate", reqHeader: []string{"Authorization", "Bearer x"}, respHeader: []string{"Cache-Control", "must-revalidate, max-age=60"},
			wantFirst: stored, wantSecond: "Weir; hit; ttl=60", wantAge: "0", wantOrigins: 1},
		{desc: "no freshness, no default", respHeader: []string{"Content-Type", "text/plain"},
			wantFirst: "Weir; fwd=uri-miss; detail=no-freshness", wantSecond: passed, wantOrigins: 2},
		{desc: "no freshness, default TTL", defaultTTL: 30 * time.Second, respHeader: []string{"Content-Type", "text/plain"},
			wantFirst: stored, wantSecond: "Weir; hit; ttl=30", wantAge: "0", wantOrigins: 1},
		{desc: "default TTL for a heuristically cacheable 404", status: 404, defaultTTL: 30 * time.Second,
			wantFirst: stored, wantSecond: "Weir; hit; ttl=30", wantAge: "0", wantOrigins: 1},
		{desc: "no default TTL for a 302", status: 302, defaultTTL: 30 * time.Second, respHeader: []string{"Location", "/x"},
			wantFirst: "Weir; fwd=uri-miss; detail=no-freshness", wantSecond: passed, wantOrigins: 2},
		{desc: "default TTL does not override max-age", defaultTTL: 30 * time.Second, respHeader: []string{"Cache-Control", "max-age=90"},
			wantFirst: stored, wantSecond: "Weir; hit; ttl=90", wantAge: "0", wantOrigins: 1},
		{desc: "Vary star", respHeader: []string{"Cache-Control", "max-age=60", "Vary", "Accept, *"},
			wantFirst: "Weir; fwd=uri-miss; detail=vary-star", wantSecond: passed, wantOrigins: 2},
		// What follows an origin error (negative caching, breakers) is tested with them.
		{desc: "origin error", status: 503, respHeader: []string{"Cache-Control", "max-age=60"},
			wantFirst: "Weir; fwd=uri-miss; detail=origin-error", wantOrigins: 1},
		{desc: "no-cache stores but always revalidates", respHeader: []string{"Cache-Control", "no-cache, max-age=60"},
			wantFirst: stored, wantSecond: "Weir; fwd=stale; stored", wantOrigins: 2},
		{desc: "malformed max-age reads as stale", respHeader: []string{"Cache-Control", "max-age=soon"},
			wantFirst: stored, wantSecond: "Weir; fwd=stale; stored", wantOrigins: 2},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			status := statusOrOK(tc.status)
			o := staticOrigin(t, status, tc.respHeader, "body")
			h := newTestHandler(t, Settings{Now: clock.Now, DefaultTTL: tc.defaultTTL}, o)
			w := do(t, h, http.MethodGet, "http://example.com/s", tc.reqHeader...)
			if got := w.Header().Get("Cache-Status"); got != tc.wantFirst {
				t.Errorf("first Cache-Status = %q, want %q", got, tc.wantFirst)
			}
			if w.Code != status || w.Body.String() != "body" {
				t.Errorf("first answer = %d %q, want %d body", w.Code, w.Body.String(), status)
			}
			if tc.wantSecond == "" {
				wantCalls(t, o, tc.wantOrigins)
				return
			}
			w = do(t, h, http.MethodGet, "http://example.com/s", tc.reqHeader...)
			if got := w.Header().Get("Cache-Status"); got != tc.wantSecond {
				t.Errorf("second Cache-Status = %q, want %q", got, tc.wantSecond)
			}
			if w.Code != status || w.Body.String() != "body" {
				t.Errorf("second answer = %d %q, want %d body", w.Code, w.Body.String(), status)
			}
			if tc.wantAge != "" {
				if got := w.Header().Get("Age"); got != tc.wantAge {
					t.Errorf("Age = %q, want %q", got, tc.wantAge)
				}
			}
			wantCalls(t, o, tc.wantOrigins)
		})
	}
}

// RFC 9111 section 5.1: Age on every answer from storage, recomputed; Date as the origin
// sent it.
func TestAgeAndDate(t *testing.T) {
	clock := newFakeClock()
	date := clock.Now().Format(http.TimeFormat)
	o := staticOrigin(t, 200, []string{"Cache-Control", "max-age=100", "Date", date, "Age", "3"}, "x")
	h := newTestHandler(t, Settings{Now: clock.Now}, o)
	steps := []struct {
		advance time.Duration
		wantAge string
	}{
		{advance: 0, wantAge: "3"},
		{advance: 7 * time.Second, wantAge: "10"},
		{advance: 35 * time.Second, wantAge: "45"},
	}
	for i, st := range steps {
		clock.Add(st.advance)
		w := do(t, h, http.MethodGet, "http://example.com/age")
		if got := w.Header()["Age"]; len(got) != 1 || got[0] != st.wantAge {
			t.Errorf("answer %d: Age = %q, want [%s]", i, got, st.wantAge)
		}
		if got := w.Header().Get("Date"); got != date {
			t.Errorf("answer %d: Date = %q, want the origin's %q", i, got, date)
		}
	}
	wantCalls(t, o, 1)
}

// Hop-by-hop fields and the origin's Cache-Status are not stored.
func TestStoredHeaderDropsHopByHop(t *testing.T) {
	o := staticOrigin(t, 200, []string{"Cache-Control", "max-age=60", "Connection", "close", "Keep-Alive", "timeout=5",
		"Cache-Status", "Origin; hit", "X-Kept", "yes"}, "hello")
	h := newFrozenHandler(t, o)
	do(t, h, http.MethodGet, "http://example.com/h")
	w := do(t, h, http.MethodGet, "http://example.com/h")
	for _, k := range []string{"Connection", "Keep-Alive"} {
		if v := w.Header().Get(k); v != "" {
			t.Errorf("%s = %q on a hit, want none", k, v)
		}
	}
	if got := w.Header()["Cache-Status"]; len(got) != 1 || got[0] != "Weir; hit; ttl=60" {
		t.Errorf("Cache-Status = %q, want only Weir's", got)
	}
	if got := w.Header().Get("X-Kept"); got != "yes" {
		t.Errorf("X-Kept = %q, want yes", got)
	}
	if got := w.Header().Get("Content-Length"); got != "5" {
		t.Errorf("Content-Length = %q, want 5", got)
	}
}

// RFC 9111 section 4.1: Vary selects among stored variants.
func TestVarySelectsVariants(t *testing.T) {
	o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("Vary", "Accept-Encoding, accept-language")
		w.Write([]byte(r.Header.Get("Accept-Encoding") + "|" + r.Header.Get("Accept-Language")))
	})
	h := newFrozenHandler(t, o)
	const url = "http://example.com/v"
	steps := []struct {
		desc        string
		header      []string
		wantStatus  string
		wantBody    string
		wantOrigins int
	}{
		{desc: "first variant", header: []string{"Accept-Encoding", "gzip"}, wantStatus: "Weir; fwd=uri-miss; stored", wantBody: "gzip|", wantOrigins: 1},
		{desc: "first variant again", header: []string{"Accept-Encoding", "gzip"}, wantStatus: "Weir; hit; ttl=60", wantBody: "gzip|", wantOrigins: 1},
		{desc: "second variant", header: []string{"Accept-Encoding", "br"}, wantStatus: "Weir; fwd=vary-miss; stored", wantBody: "br|", wantOrigins: 2},
		{desc: "second variant again", header: []string{"Accept-Encoding", "br"}, wantStatus: "Weir; hit; ttl=60", wantBody: "br|", wantOrigins: 2},
		{desc: "first variant still there", header: []string{"Accept-Encoding", "gzip"}, wantStatus: "Weir; hit; ttl=60", wantBody: "gzip|", wantOrigins: 2},
		{desc: "no header is a variant of its own", wantStatus: "Weir; fwd=vary-miss; stored", wantBody: "|", wantOrigins: 3},
		{desc: "second field selects too", header: []string{"Accept-Encoding", "gzip", "Accept-Language", "fr"}, wantStatus: "Weir; fwd=vary-miss; stored", wantBody: "gzip|fr", wantOrigins: 4},
		{desc: "white space does not matter", header: []string{"Accept-Encoding", "gzip, br"}, wantStatus: "Weir; fwd=vary-miss; stored", wantBody: "gzip, br|", wantOrigins: 5},
		{desc: "same list without spaces", header: []string{"Accept-Encoding", "gzip,br"}, wantStatus: "Weir; hit; ttl=60", wantBody: "gzip, br|", wantOrigins: 5},
		{desc: "a member's inner white space selects another variant", header: []string{"Accept-Encoding", "gzip, br", "Accept-Language", "f r"}, wantStatus: "Weir; fwd=vary-miss; stored", wantBody: "gzip, br|f r", wantOrigins: 6},
		{desc: "and the member without it another", header: []string{"Accept-Encoding", "gzip, br", "Accept-Language", "fr"}, wantStatus: "Weir; fwd=vary-miss; stored", wantBody: "gzip, br|fr", wantOrigins: 7},
	}
	for _, st := range steps {
		w := do(t, h, http.MethodGet, url, st.header...)
		if got := w.Header().Get("Cache-Status"); got != st.wantStatus {
			t.Errorf("%s: Cache-Status = %q, want %q", st.desc, got, st.wantStatus)
		}
		if got := w.Body.String(); got != st.wantBody {
			t.Errorf("%s: body = %q, want %q", st.desc, got, st.wantBody)
		}
		if got := o.callCount(); got != st.wantOrigins {
			t.Errorf("%s: origin calls = %d, want %d", st.desc, got, st.wantOrigins)
		}
	}
}

// RFC 9111 section 4.3: a stale entry with validators is revalidated with a conditional
// request, and a 304 refreshes the stored header fields.
func TestConditionalRevalidation(t *testing.T) {
	clock := newFakeClock()
	lastModified := clock.Now().Add(-time.Hour).Format(http.TimeFormat)
	o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			w.Header().Set("Cache-Control", "max-age=10")
			w.Header().Set("Etag", `"v1"`)
			w.Header().Set("Last-Modified", lastModified)
			w.Header().Set("X-Version", "1")
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte("first body"))
			return
		}
		w.Header().Set("Cache-Control", "max-age=30")
		w.Header().Set("Etag", `"v1"`)
		w.Header().Set("X-Version", strconv.Itoa(n))
		w.WriteHeader(http.StatusNotModified)
	})
	const url = "http://example.com/cond"
	h := storedThenAged(t, clock, o, url, 20*time.Second)

	// The client's own validators are not passed on: the cache asks with what it holds.
	w := do(t, h, http.MethodGet, url, "If-None-Match", `"other"`)
	wantAnswer(t, w, 200, "Weir; fwd=stale; stored; fwd-status=304", "first body")
	req := o.request(t, 2)
	if got := req.Header.Get("If-None-Match"); got != `"v1"` {
		t.Errorf("origin saw If-None-Match %q, want %q", got, `"v1"`)
	}
	if got := req.Header.Get("If-Modified-Since"); got != lastModified {
		t.Errorf("origin saw If-Modified-Since %q, want %q", got, lastModified)
	}
	if got := w.Header().Get("X-Version"); got != "2" {
		t.Errorf("X-Version after the 304 = %q, want 2", got)
	}
	if got := w.Header().Get("Content-Type"); got != "text/plain" {
		t.Errorf("Content-Type after the 304 = %q, want the stored text/plain", got)
	}

	clock.Add(10 * time.Second)
	w = do(t, h, http.MethodGet, url)
	wantAnswer(t, w, 200, "Weir; hit; ttl=20", "first body")
	if got := w.Header().Get("X-Version"); got != "2" {
		t.Errorf("X-Version of the refreshed entry = %q, want 2", got)
	}
	if got := w.Header().Get("Cache-Control"); got != "max-age=30" {
		t.Errorf("Cache-Control of the refreshed entry = %q, want max-age=30", got)
	}
	wantCalls(t, o, 2)
}

// An answer with a validator and no freshness is stored but never served without asking:
// no TTL is invented.
func TestValidatorOnlyIsRevalidatedEveryTime(t *testing.T) {
	clock := newFakeClock()
	o := validatingOrigin(t, `"e"`, nil, "data")
	h := newTestHandler(t, Settings{Now: clock.Now}, o)
	const url = "http://example.com/validator"
	wantAnswer(t, do(t, h, http.MethodGet, url), 200, "Weir; fwd=uri-miss; stored", "data")
	clock.Add(time.Second)
	wantAnswer(t, do(t, h, http.MethodGet, url), 200, "Weir; fwd=stale; stored; fwd-status=304", "data")
	clock.Add(time.Second)
	wantAnswer(t, do(t, h, http.MethodGet, url), 200, "Weir; fwd=stale; stored; fwd-status=304", "data")
	wantCalls(t, o, 3)
}

// A changed answer to a conditional request replaces the stored one.
func TestRevalidationWithNewAnswer(t *testing.T) {
	clock := newFakeClock()
	o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=10")
		w.Header().Set("Etag", `"v`+strconv.Itoa(n)+`"`)
		w.Write([]byte("version " + strconv.Itoa(n)))
	})
	const url = "http://example.com/changed"
	h := storedThenAged(t, clock, o, url, 15*time.Second)
	wantAnswer(t, do(t, h, http.MethodGet, url), 200, "Weir; fwd=stale; stored", "version 2")
	wantAnswer(t, do(t, h, http.MethodGet, url), 200, "Weir; hit; ttl=10", "version 2")
}

// Weir answers a client's own conditional request from storage (RFC 9110 section 13.2.2).
func TestClientConditionalOnHit(t *testing.T) {
	clock := newFakeClock()
	lm := clock.Now().Add(-time.Hour)
	o := staticOrigin(t, 200, []string{"Cache-Control", "max-age=60", "Etag", `W/"abc"`,
		"Last-Modified", lm.Format(http.TimeFormat), "Content-Type", "text/plain"}, "payload")
	h := newTestHandler(t, Settings{Now: clock.Now}, o)
	const url = "http://example.com/inm"
	do(t, h, http.MethodGet, url)
	tests := []struct {
		desc       string
		header     []string
		wantStatus int
	}{
		{desc: "matching weak tag", header: []string{"If-None-Match", `"abc"`}, wantStatus: 304},
		{desc: "tag in a list", header: []string{"If-None-Match", `"x", W/"abc"`}, wantStatus: 304},
		{desc: "star", header: []string{"If-None-Match", "*"}, wantStatus: 304},
		{desc: "other tag", header: []string{"If-None-Match", `"zzz"`}, wantStatus: 200},
		{desc: "other tag wins over a matching date", header: []string{"If-None-Match", `"zzz"`, "If-Modified-Since", lm.Format(http.TimeFormat)}, wantStatus: 200},
		{desc: "not modified since", header: []string{"If-Modified-Since", lm.Add(time.Minute).Format(http.TimeFormat)}, wantStatus: 304},
		{desc: "modified since", header: []string{"If-Modified-Since", lm.Add(-time.Minute).Format(http.TimeFormat)}, wantStatus: 200},
		{desc: "unparsable date", header: []string{"If-Modified-Since", "yesterday"}, wantStatus: 200},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			w := do(t, h, http.MethodGet, url, tc.header...)
			if w.Code != tc.wantStatus {
				t.Fatalf("status = %d, want %d", w.Code, tc.wantStatus)
			}
			if got := w.Header().Get("Cache-Status"); got != "Weir; hit; ttl=60" {
				t.Errorf("Cache-Status = %q, want a hit", got)
			}
			if tc.wantStatus == 304 {
				if w.Body.Len() != 0 || w.Header().Get("Content-Length") != "" || w.Header().Get("Content-Type") != "" {
					t.Errorf("304 carries a body or its framing: %q, %v", w.Body.String(), w.Header())
				}
				if got := w.Header().Get("Etag"); got != `W/"abc"` {
					t.Errorf("304 Etag = %q, want the stored one", got)
				}
			} else if w.Body.String() != "payload" {
				t.Errorf("body = %q, want payload", w.Body.String())
			}
		})
	}
	wantCalls(t, o, 1)
}

// Cache-Control: immutable says nothing to a shared cache once the answer is stale: it is
// revalidated like any other (RFC 8246 section 2 only lets a fresh one skip revalidation).
func TestImmutableStaleIsRevalidated(t *testing.T) {
	tests := []struct {
		desc   string
		header []string
	}{
		{desc: "plain request"},
		{desc: "client max-age=0", header: []string{"Cache-Control", "max-age=0"}},
		{desc: "client no-cache", header: []string{"Cache-Control", "no-cache"}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			clock := newFakeClock()
			o := validatingOrigin(t, `"abcd"`, []string{"Cache-Control", "max-age=2, immutable"}, "data")
			const url = "http://example.com/immutable"
			h := storedThenAged(t, clock, o, url, 3*time.Second)
			w := do(t, h, http.MethodGet, url, tc.header...)
			wantAnswer(t, w, 200, "Weir; fwd=stale; stored; fwd-status=304", "data")
			if got := o.request(t, 2).Header.Get("If-None-Match"); got != `"abcd"` {
				t.Errorf("origin saw If-None-Match %q, want %q", got, `"abcd"`)
			}
		})
	}
}

// A stored answer without Last-Modified answers If-Modified-Since by its Date, or by when
// it was received without one (RFC 9111 section 4.3.2).
func TestIfModifiedSinceWithoutLastModified(t *testing.T) {
	clock := newFakeClock()
	date := clock.Now().Add(-10 * time.Second)
	httpDate := func(t time.Time) string { return t.Format(http.TimeFormat) }
	tests := []struct {
		desc       string
		respHeader []string
		ims        time.Time
		wantStatus int
	}{
		{desc: "not modified since Date", respHeader: []string{"Date", httpDate(date)}, ims: date, wantStatus: 304},
		{desc: "modified after the date asked", respHeader: []string{"Date", httpDate(date)}, ims: date.Add(-time.Hour), wantStatus: 200},
		{desc: "no Date: the time received", ims: clock.Now(), wantStatus: 304},
		{desc: "no Date, modified after the date asked", ims: clock.Now().Add(-time.Hour), wantStatus: 200},
		{desc: "Last-Modified wins over Date", respHeader: []string{"Date", httpDate(date), "Last-Modified", httpDate(date.Add(time.Second))},
			ims: date, wantStatus: 200},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			o := staticOrigin(t, 200, append([]string{"Cache-Control", "max-age=60"}, tc.respHeader...), "payload")
			h := newTestHandler(t, Settings{Now: clock.Now}, o)
			const url = "http://example.com/ims"
			do(t, h, http.MethodGet, url)
			w := do(t, h, http.MethodGet, url, "If-Modified-Since", httpDate(tc.ims))
			if w.Code != tc.wantStatus {
				t.Errorf("status = %d, want %d", w.Code, tc.wantStatus)
			}
			wantCalls(t, o, 1)
		})
	}
}

// RFC 5861 section 3: a stale answer within stale-while-revalidate is served at once while
// one background fetch refreshes it.
func TestStaleWhileRevalidate(t *testing.T) {
	const url = "http://example.com/swr"
	h, o, clock := staleWhileRevalidating(t, url, 25*time.Second)
	o.hold(2)

	// The refresh is blocked at the origin, yet both requests are answered at once.
	for i := 0; i < 2; i++ {
		w := awaitAnswer(t, serveAsync(h, newRequest(http.MethodGet, url)))
		wantAnswer(t, w, 200, "Weir; hit; ttl=-15; detail=stale-while-revalidate", "v1")
		if got := w.Header().Get("Age"); got != "25" {
			t.Errorf("stale Age = %q, want 25", got)
		}
	}
	o.waitEntered(t, 2)
	if got := h.e.flights.InFlight(); got != 1 {
		t.Errorf("flights = %d, want one refresh", got)
	}
	o.release(2)
	waitIdle(t, h)
	wantAnswer(t, do(t, h, http.MethodGet, url), 200, "Weir; hit; ttl=10", "v2")
	wantCalls(t, o, 2)

	// Past the window the client waits for the origin.
	clock.Add(100 * time.Second)
	wantAnswer(t, do(t, h, http.MethodGet, url), 200, "Weir; fwd=uri-miss; stored", "v3")
}

// must-revalidate, no-cache and s-maxage forbid serving stale (RFC 9111 sections 5.2.2.2,
// 5.2.2.4 and 5.2.2.10); so does a client's no-cache.
func TestStaleWindowsTurnedOff(t *testing.T) {
	tests := []struct {
		desc      string
		cc        string
		reqHeader []string
	}{
		{desc: "must-revalidate", cc: "max-age=10, must-revalidate, stale-while-revalidate=60, stale-if-error=60"},
		{desc: "proxy-revalidate", cc: "max-age=10, proxy-revalidate, stale-while-revalidate=60, stale-if-error=60"},
		{desc: "no-cache", cc: "max-age=10, no-cache, stale-while-revalidate=60, stale-if-error=60"},
		{desc: "s-maxage", cc: "s-maxage=10, stale-while-revalidate=60, stale-if-error=60"},
		{desc: "client no-cache", cc: "max-age=10, stale-while-revalidate=60", reqHeader: []string{"Cache-Control", "no-cache"}},
		{desc: "client Pragma no-cache", cc: "max-age=10, stale-while-revalidate=60", reqHeader: []string{"Pragma", "no-cache"}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			clock := newFakeClock()
			o := failingOrigin(t, 1, []string{"Cache-Control", tc.cc, "Etag", `"e"`}, "v1", http.StatusServiceUnavailable)
			const url = "http://example.com/off"
			h := storedThenAged(t, clock, o, url, 20*time.Second)
			w := do(t, h, http.MethodGet, url, tc.reqHeader...)
			wantAnswer(t, w, 503, "Weir; fwd=stale; detail=origin-error", "down")
		})
	}
}

// RFC 5861 section 4: within stale-if-error a stale answer replaces an origin error.
func TestStaleIfError(t *testing.T) {
	tests := []struct {
		desc       string
		errStatus  int
		advance    time.Duration
		wantStatus int
		wantCS     string
		wantBody   string
	}{
		{desc: "500", errStatus: 500, advance: 20 * time.Second, wantStatus: 200, wantCS: "Weir; hit; ttl=-10; detail=stale-if-error", wantBody: "good"},
		{desc: "502", errStatus: 502, advance: 20 * time.Second, wantStatus: 200, wantCS: "Weir; hit; ttl=-10; detail=stale-if-error", wantBody: "good"},
		{desc: "503", errStatus: 503, advance: 20 * time.Second, wantStatus: 200, wantCS: "Weir; hit; ttl=-10; detail=stale-if-error", wantBody: "good"},
		{desc: "504", errStatus: 504, advance: 20 * time.Second, wantStatus: 200, wantCS: "Weir; hit; ttl=-10; detail=stale-if-error", wantBody: "good"},
		{desc: "404 is an answer, not an error", errStatus: 404, advance: 20 * time.Second, wantStatus: 404, wantCS: "Weir; fwd=stale; detail=no-freshness", wantBody: "down"},
		{desc: "501 is an answer, not an error", errStatus: 501, advance: 20 * time.Second, wantStatus: 501, wantCS: "Weir; fwd=stale; detail=no-freshness", wantBody: "down"},
		{desc: "past the window", errStatus: 503, advance: 200 * time.Second, wantStatus: 503, wantCS: "Weir; fwd=uri-miss; detail=origin-error", wantBody: "down"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			clock := newFakeClock()
			o := failingOrigin(t, 1, []string{"Cache-Control", "max-age=10, stale-if-error=60"}, "good", tc.errStatus)
			const url = "http://example.com/sie"
			h := storedThenAged(t, clock, o, url, tc.advance)
			wantAnswer(t, do(t, h, http.MethodGet, url), tc.wantStatus, tc.wantCS, tc.wantBody)
		})
	}
}

// RFC 9111 section 4.4: a non-error answer to an unsafe method invalidates the URI and the
// same-origin URIs in Location and Content-Location.
func TestUnsafeMethodInvalidates(t *testing.T) {
	tests := []struct {
		desc        string
		method      string
		target      string
		status      int
		header      []string
		writeNone   bool
		invalidated []string
		kept        []string
	}{
		{desc: "POST 200", method: "POST", target: "/a", status: 200, invalidated: []string{"/a"}, kept: []string{"/b", "/c"}},
		{desc: "PUT 204", method: "PUT", target: "/a", status: 204, invalidated: []string{"/a"}, kept: []string{"/b"}},
		{desc: "PATCH 302", method: "PATCH", target: "/a", status: 302, invalidated: []string{"/a"}, kept: []string{"/b"}},
		{desc: "DELETE with an implicit 200", method: "DELETE", target: "/a", writeNone: true, invalidated: []string{"/a"}, kept: []string{"/b"}},
		{desc: "DELETE 404 is an error", method: "DELETE", target: "/a", status: 404, kept: []string{"/a", "/b"}},
		{desc: "POST 500 is an error", method: "POST", target: "/a", status: 500, kept: []string{"/a"}},
		{desc: "Location and Content-Location", method: "POST", target: "/a", status: 201,
			header:      []string{"Location", "/b", "Content-Location", "http://example.com/c?q=1"},
			invalidated: []string{"/a", "/b", "/c?q=1"}, kept: []string{"/c"}},
		{desc: "relative Location", method: "POST", target: "/dir/a", status: 201,
			header: []string{"Location", "b"}, invalidated: []string{"/dir/a", "/dir/b"}, kept: []string{"/a", "/b"}},
		{desc: "Location on another host", method: "POST", target: "/a", status: 201,
			header: []string{"Location", "http://other.example/b"}, invalidated: []string{"/a"}, kept: []string{"/b"}},
		{desc: "OPTIONS does not invalidate", method: "OPTIONS", target: "/a", status: 200, kept: []string{"/a"}},
		{desc: "query is part of the URI", method: "POST", target: "/a?x=1", status: 200, invalidated: []string{"/a?x=1"}, kept: []string{"/a"}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet {
					w.Header().Set("Cache-Control", "max-age=60")
					w.Write([]byte("got " + r.URL.RequestURI()))
					return
				}
				for i := 0; i+1 < len(tc.header); i += 2 {
					w.Header().Set(tc.header[i], tc.header[i+1])
				}
				if !tc.writeNone {
					w.WriteHeader(tc.status)
				}
			})
			h := newFrozenHandler(t, o)
			all := append(append([]string(nil), tc.invalidated...), tc.kept...)
			for _, p := range all {
				do(t, h, http.MethodGet, "http://example.com"+p)
			}
			w := do(t, h, tc.method, "http://example.com"+tc.target)
			if got := w.Header().Get("Cache-Status"); got != "Weir; fwd=method" {
				t.Errorf("%s Cache-Status = %q, want Weir; fwd=method", tc.method, got)
			}
			for _, p := range tc.invalidated {
				if got := do(t, h, http.MethodGet, "http://example.com"+p).Header().Get("Cache-Status"); got != "Weir; fwd=uri-miss; stored" {
					t.Errorf("GET %s after %s: Cache-Status = %q, want a miss", p, tc.method, got)
				}
			}
			for _, p := range tc.kept {
				if got := do(t, h, http.MethodGet, "http://example.com"+p).Header().Get("Cache-Status"); got != "Weir; hit; ttl=60" {
					t.Errorf("GET %s after %s: Cache-Status = %q, want a hit", p, tc.method, got)
				}
			}
		})
	}
}

// A request Weir does not cache goes to the origin as it is, with Cache-Status saying why.
func TestBypass(t *testing.T) {
	tests := []struct {
		desc   string
		method string
		header []string
		wantCS string
	}{
		{desc: "Upgrade", method: "GET", header: []string{"Upgrade", "websocket", "Connection", "Upgrade"}, wantCS: "Weir; fwd=bypass; detail=upgrade"},
		{desc: "HEAD on a miss", method: "HEAD", wantCS: "Weir; fwd=uri-miss"},
		{desc: "other method", method: "OPTIONS", wantCS: "Weir; fwd=method"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			o := staticOrigin(t, 200, []string{"Cache-Control", "max-age=60"}, "x")
			h := newFrozenHandler(t, o)
			w := do(t, h, tc.method, "http://example.com/bypass", tc.header...)
			if got := w.Header().Get("Cache-Status"); got != tc.wantCS {
				t.Errorf("Cache-Status = %q, want %q", got, tc.wantCS)
			}
			// Nothing was stored.
			if got := do(t, h, http.MethodGet, "http://example.com/bypass").Header().Get("Cache-Status"); got != "Weir; fwd=uri-miss; stored" {
				t.Errorf("GET after the bypass: Cache-Status = %q, want a miss", got)
			}
		})
	}
}

// HEAD is served from stored GET answers, without a body.
func TestHeadFromStorage(t *testing.T) {
	clock := newFakeClock()
	o := countingOrigin(t, []string{"Cache-Control", "max-age=10", "Etag", `"e"`, "Content-Type", "text/plain"})
	h := newTestHandler(t, Settings{Now: clock.Now}, o)
	const url = "http://example.com/head"
	do(t, h, http.MethodGet, url)
	w := do(t, h, http.MethodHead, url)
	wantAnswer(t, w, 200, "Weir; hit; ttl=10", "")
	if got := w.Header().Get("Content-Length"); got != "2" {
		t.Errorf("HEAD Content-Length = %q, want 2, the stored body's", got)
	}

	// A HEAD that finds the entry stale refreshes it with a GET: a stored answer must keep
	// its body.
	clock.Add(20 * time.Second)
	w = do(t, h, http.MethodHead, url)
	if w.Body.Len() != 0 {
		t.Errorf("HEAD answer has a body %q", w.Body.String())
	}
	if got := o.request(t, o.callCount()).Method; got != http.MethodGet {
		t.Errorf("origin saw %s for the cache's refresh, want GET", got)
	}
	w = do(t, h, http.MethodGet, url)
	if got := w.Header().Get("Cache-Status"); got != "Weir; hit; ttl=10" {
		t.Errorf("GET after the HEAD refresh: Cache-Status = %q, want a hit", got)
	}
	if got := w.Body.String(); got != "v2" {
		t.Errorf("GET after the HEAD refresh: body = %q, want %q", got, "v2")
	}
}

// A stale-while-revalidate refresh triggered by HEAD stores a whole GET answer too.
func TestHeadBackgroundRefreshKeepsBody(t *testing.T) {
	const url = "http://example.com/head-swr"
	h, _, _ := staleWhileRevalidating(t, url, 20*time.Second)
	wantAnswer(t, do(t, h, http.MethodHead, url), 200, "Weir; hit; ttl=-10; detail=stale-while-revalidate", "")
	waitIdle(t, h)
	wantAnswer(t, do(t, h, http.MethodGet, url), 200, "Weir; hit; ttl=10", "v2")
}

// A client's no-cache makes Weir ask the origin even for a fresh entry.
func TestClientNoCacheOnFreshEntry(t *testing.T) {
	o := countingOrigin(t, []string{"Cache-Control", "max-age=60"})
	h := newFrozenHandler(t, o)
	const url = "http://example.com/ncf"
	do(t, h, http.MethodGet, url)
	tests := []struct {
		desc   string
		header []string
	}{
		{desc: "no-cache", header: []string{"Cache-Control", "no-cache"}},
		{desc: "max-age=0", header: []string{"Cache-Control", "max-age=0"}},
		{desc: "Pragma", header: []string{"Pragma", "no-cache"}},
	}
	for i, tc := range tests {
		w := do(t, h, http.MethodGet, url, tc.header...)
		want := "v" + strconv.Itoa(i+2)
		if got := w.Body.String(); got != want {
			t.Errorf("%s: body = %q, want %q from the origin", tc.desc, got, want)
		}
		if got := w.Header().Get("Cache-Status"); got != "Weir; fwd=stale; stored" {
			t.Errorf("%s: Cache-Status = %q, want Weir; fwd=stale; stored", tc.desc, got)
		}
	}
	// Pragma is ignored when Cache-Control is present (RFC 9111 section 5.4).
	w := do(t, h, http.MethodGet, url, "Cache-Control", "max-stale", "Pragma", "no-cache")
	if got := w.Header().Get("Cache-Status"); got != "Weir; hit; ttl=60" {
		t.Errorf("Pragma beside Cache-Control: Cache-Status = %q, want a hit", got)
	}
}

// QueryDrop and parameter order: one entry for all spellings of a key.
func TestQueryNormalisationSharesEntries(t *testing.T) {
	o := staticOrigin(t, 200, []string{"Cache-Control", "max-age=60"}, "q")
	h := newTestHandler(t, Settings{Now: newFakeClock().Now, QueryDrop: []string{"utm_source", "fbclid"}}, o)
	urls := []string{
		"http://example.com/q?a=1&b=2",
		"http://example.com/q?b=2&a=1",
		"http://example.com/q?b=2&utm_source=x&a=1",
		"http://example.com/q?fbclid=z&a=1&&b=2&utm%5Fsource=y",
	}
	for i, u := range urls {
		want := "Weir; hit; ttl=60"
		if i == 0 {
			want = "Weir; fwd=uri-miss; stored"
		}
		if got := do(t, h, http.MethodGet, u).Header().Get("Cache-Status"); got != want {
			t.Errorf("GET %s: Cache-Status = %q, want %q", u, got, want)
		}
	}
	others := []string{
		"http://example.com/q?a=1",
		"http://example.com/q?a=1&b=3",
		"http://example.com/Q?a=1&b=2",
		"https://example.com/q?a=1&b=2",
		"http://example.org/q?a=1&b=2",
	}
	for _, u := range others {
		if got := do(t, h, http.MethodGet, u).Header().Get("Cache-Status"); got != "Weir; fwd=uri-miss; stored" {
			t.Errorf("GET %s: Cache-Status = %q, want a miss of its own", u, got)
		}
	}
}

// TestRequestNoStore: the answer to a request with Cache-Control: no-store is neither stored
// nor remembered as a failure, nor shared with other waiters, and the key stays cacheable for
// the requests that follow (RFC 9111 section 5.2.1.5). Such a request may still be answered
// from storage.
func TestRequestNoStore(t *testing.T) {
	clock := newFakeClock()
	o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/fail":
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		case "/etag":
			w.Header().Set("Cache-Control", "max-age=10")
			w.Header().Set("Etag", `"v1"`)
			if r.Header.Get("If-None-Match") == `"v1"` {
				w.WriteHeader(http.StatusNotModified)
				return
			}
		default:
			w.Header().Set("Cache-Control", "max-age=60")
		}
		w.Write([]byte("answer " + strconv.Itoa(n)))
	})
	h := newTestHandler(t, Settings{Now: clock.Now}, o)
	noStore := []string{"Cache-Control", "no-store"}
	steps := []struct {
		desc        string
		url         string
		header      []string
		advance     time.Duration
		wantStatus  string
		wantBody    string
		wantOrigins int
	}{
		{desc: "no-store request", url: "/a", header: noStore, wantStatus: "Weir; fwd=uri-miss; detail=request-no-store", wantBody: "answer 1", wantOrigins: 1},
		{desc: "next client is not given it", url: "/a", wantStatus: "Weir; fwd=uri-miss; stored", wantBody: "answer 2", wantOrigins: 2},
		{desc: "a no-store request may be answered from storage", url: "/a", header: noStore, wantStatus: "Weir; hit; ttl=60", wantBody: "answer 2", wantOrigins: 2},
		{desc: "a failure is not remembered for it", url: "/fail", header: noStore, wantStatus: "Weir; fwd=uri-miss; detail=origin-error", wantOrigins: 3},
		{desc: "so the next request asks the origin", url: "/fail", wantStatus: "Weir; fwd=uri-miss; detail=origin-error", wantOrigins: 4},
		{desc: "stored with a validator", url: "/etag", wantStatus: "Weir; fwd=uri-miss; stored", wantBody: "answer 5", wantOrigins: 5},
		{desc: "revalidated for a no-store request", url: "/etag", header: noStore, advance: 20 * time.Second,
			wantStatus: "Weir; fwd=stale; detail=request-no-store", wantBody: "answer 5", wantOrigins: 6},
		{desc: "the 304 did not refresh what is stored", url: "/etag", wantStatus: "Weir; fwd=stale; stored; fwd-status=304", wantBody: "answer 5", wantOrigins: 7},
	}
	for _, st := range steps {
		clock.Add(st.advance)
		w := do(t, h, http.MethodGet, "http://example.com"+st.url, st.header...)
		if got := w.Header().Get("Cache-Status"); got != st.wantStatus {
			t.Errorf("%s: Cache-Status = %q, want %q", st.desc, got, st.wantStatus)
		}
		if st.wantBody != "" && w.Body.String() != st.wantBody {
			t.Errorf("%s: body = %q, want %q", st.desc, w.Body.String(), st.wantBody)
		}
		if got := o.callCount(); got != st.wantOrigins {
			t.Errorf("%s: origin calls = %d, want %d", st.desc, got, st.wantOrigins)
		}
	}
}

// TestEmptyQueryIsItsOwnKey: `/p?` and `/p` reach the origin as two URIs (RFC 3986 section
// 6.2.3), so neither is answered with the other's entry, on the hit path or off it.
func TestEmptyQueryIsItsOwnKey(t *testing.T) {
	o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Write([]byte(r.RequestURI))
	})
	h := newTestHandler(t, Settings{Now: newFakeClock().Now, QueryDrop: []string{"utm_source"}}, o)
	steps := []struct {
		desc, url, wantStatus, wantBody string
	}{
		{desc: "no query", url: "http://example.com/p", wantStatus: "Weir; fwd=uri-miss; stored", wantBody: "/p"},
		{desc: "empty query", url: "http://example.com/p?", wantStatus: "Weir; fwd=uri-miss; stored", wantBody: "/p?"},
		{desc: "empty query again", url: "http://example.com/p?", wantStatus: "Weir; hit; ttl=60", wantBody: "/p?"},
		{desc: "no query again", url: "http://example.com/p", wantStatus: "Weir; hit; ttl=60", wantBody: "/p"},
		{desc: "only a dropped parameter is no query", url: "http://example.com/p?utm_source=x", wantStatus: "Weir; hit; ttl=60", wantBody: "/p"},
	}
	for _, st := range steps {
		w := do(t, h, http.MethodGet, st.url)
		if got := w.Header().Get("Cache-Status"); got != st.wantStatus {
			t.Errorf("%s: Cache-Status = %q, want %q", st.desc, got, st.wantStatus)
		}
		if got := w.Body.String(); got != st.wantBody {
			t.Errorf("%s: body = %q, want %q", st.desc, got, st.wantBody)
		}
	}
}

// RFC 9111 section 4.4: invalidating a URI whose answers vary drops every variant, including
// those stored before a later answer writes a new variant index.
func TestUnsafeMethodInvalidatesVariants(t *testing.T) {
	o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=600")
		w.Header().Set("Vary", "Accept-Language")
		w.Write([]byte(r.Header.Get("Accept-Language") + " v" + strconv.Itoa(n)))
	})
	h := newFrozenHandler(t, o)
	const url = "http://example.com/inv-vary"
	do(t, h, http.MethodGet, url, "Accept-Language", "en")
	do(t, h, http.MethodPost, url)
	do(t, h, http.MethodGet, url, "Accept-Language", "fr")
	w := do(t, h, http.MethodGet, url, "Accept-Language", "en")
	if got := w.Body.String(); got == "en v1" {
		t.Errorf("GET after POST served the variant stored before it: %q (%s)", got, w.Header().Get("Cache-Status"))
	}
}
