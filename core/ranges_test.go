package core

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rangeOrigin answers like Traefik's proxy in front of an origin that honours Range: a
// Range request gets http.ServeContent's answer; any other the whole body in chunks of 256
// bytes, ending with a panic of http.ErrAbortHandler when a write fails, as
// net/http/httputil's ReverseProxy does when its copy to the writer fails.
func rangeOrigin(t *testing.T, header []string, body string, withLength bool) *scriptOrigin {
	return newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		if r.Header.Get("Range") != "" {
			http.ServeContent(w, r, "", time.Time{}, strings.NewReader(body))
			return
		}
		if withLength {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		}
		w.WriteHeader(http.StatusOK)
		for i := 0; i < len(body); i += 256 {
			end := i + 256
			if end > len(body) {
				end = len(body)
			}
			if _, err := w.Write([]byte(body[i:end])); err != nil {
				abortAnswer()
			}
		}
	})
}

// wantRange checks a range answer's status, body, Content-Range and Content-Length.
func wantRange(t *testing.T, what string, w *httptest.ResponseRecorder, status int, contentRange, body string) {
	t.Helper()
	if w.Code != status {
		t.Errorf("%s: status = %d, want %d", what, w.Code, status)
	}
	if got := w.Header().Get("Content-Range"); got != contentRange {
		t.Errorf("%s: Content-Range = %q, want %q", what, got, contentRange)
	}
	if got := w.Body.String(); got != body {
		t.Errorf("%s: body = %q, want %q", what, got, body)
	}
	if got, want := w.Header().Get("Content-Length"), strconv.Itoa(len(body)); got != want {
		t.Errorf("%s: Content-Length = %q, want %q", what, got, want)
	}
}

// A Range request for a stored complete answer is answered from storage (RFC 9110 section
// 14): one range gets 206 with its bytes, a range past the end 416, and what Weir does not
// serve in part (several ranges, an invalid Range, a failed If-Range, HEAD) the whole answer.
func TestRangeFromStorage(t *testing.T) {
	clock := newFakeClock()
	lm := clock.Now().Add(-time.Hour).Format(http.TimeFormat)
	o := staticOrigin(t, 200, []string{"Cache-Control", "max-age=60", "Etag", `"v1"`, "Last-Modified", lm,
		"Content-Type", "text/plain", "Content-Encoding", "identity"}, "0123456789")
	h := newTestHandler(t, Settings{Now: clock.Now}, o)
	const url = "http://example.com/ranges"
	do(t, h, http.MethodGet, url)
	const whole = "0123456789"
	tests := []struct {
		desc      string
		method    string
		header    []string
		wantCode  int
		wantRange string
		wantBody  string
	}{
		{desc: "first and last", header: []string{"Range", "bytes=0-1"}, wantCode: 206, wantRange: "bytes 0-1/10", wantBody: "01"},
		{desc: "no last", header: []string{"Range", "bytes=3-"}, wantCode: 206, wantRange: "bytes 3-9/10", wantBody: "3456789"},
		{desc: "suffix", header: []string{"Range", "bytes=-2"}, wantCode: 206, wantRange: "bytes 8-9/10", wantBody: "89"},
		{desc: "suffix longer than the body", header: []string{"Range", "bytes=-20"}, wantCode: 206, wantRange: "bytes 0-9/10", wantBody: whole},
		{desc: "last past the end", header: []string{"Range", "bytes=8-100"}, wantCode: 206, wantRange: "bytes 8-9/10", wantBody: "89"},
		{desc: "first past the end", header: []string{"Range", "bytes=10-"}, wantCode: 416, wantRange: "bytes */10"},
		{desc: "suffix of zero", header: []string{"Range", "bytes=-0"}, wantCode: 416, wantRange: "bytes */10"},
		{desc: "two ranges", header: []string{"Range", "bytes=0-1,3-4"}, wantCode: 200, wantBody: whole},
		{desc: "last before first", header: []string{"Range", "bytes=5-2"}, wantCode: 200, wantBody: whole},
		{desc: "other unit", header: []string{"Range", "items=0-1"}, wantCode: 200, wantBody: whole},
		{desc: "two Range lines", header: []string{"Range", "bytes=0-1", "Range", "bytes=0-1"}, wantCode: 200, wantBody: whole},
		{desc: "If-Range with the ETag", header: []string{"Range", "bytes=0-1", "If-Range", `"v1"`}, wantCode: 206, wantRange: "bytes 0-1/10", wantBody: "01"},
		{desc: "If-Range with another ETag", header: []string{"Range", "bytes=0-1", "If-Range", `"v0"`}, wantCode: 200, wantBody: whole},
		{desc: "If-Range with the date", header: []string{"Range", "bytes=0-1", "If-Range", lm}, wantCode: 206, wantRange: "bytes 0-1/10", wantBody: "01"},
		{desc: "If-Range with another date", header: []string{"Range", "bytes=0-1", "If-Range", clock.Now().Format(http.TimeFormat)}, wantCode: 200, wantBody: whole},
		{desc: "If-Range alone", header: []string{"If-Range", `"v1"`}, wantCode: 200, wantBody: whole},
		{desc: "HEAD ignores Range", method: http.MethodHead, header: []string{"Range", "bytes=0-1"}, wantCode: 200},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			w := do(t, h, method, url, tc.header...)
			if tc.wantCode == 200 && method == http.MethodHead {
				if w.Code != 200 || w.Body.Len() != 0 || w.Header().Get("Content-Range") != "" {
					t.Errorf("HEAD = %d %q, Content-Range %q; want 200, no body, no Content-Range", w.Code, w.Body.String(), w.Header().Get("Content-Range"))
				}
			} else {
				wantRange(t, "GET", w, tc.wantCode, tc.wantRange, tc.wantBody)
			}
			if got := w.Header().Get("Cache-Status"); got != "Weir; hit; ttl=60" {
				t.Errorf("Cache-Status = %q, want a hit", got)
			}
			if got := w.Header().Get("Age"); got != "0" {
				t.Errorf("Age = %q, want 0", got)
			}
			if tc.wantCode == 206 {
				if got := w.Header().Get("Etag"); got != `"v1"` {
					t.Errorf("206 Etag = %q, want the stored one", got)
				}
				if got := w.Header().Get("Content-Type"); got != "text/plain" {
					t.Errorf("206 Content-Type = %q, want the stored one", got)
				}
			}
			if tc.wantCode == 416 {
				// No representation goes with a 416: nothing to type, decode or keep.
				for _, k := range []string{"Content-Type", "Content-Encoding", "Cache-Control"} {
					if got := w.Header().Get(k); got != "" {
						t.Errorf("416 %s = %q, want none", k, got)
					}
				}
			}
		})
	}
	// A client's validators are answered before its Range (RFC 9110 section 13.2.2).
	w := do(t, h, http.MethodGet, url, "Range", "bytes=0-1", "If-None-Match", `"v1"`)
	if w.Code != http.StatusNotModified || w.Header().Get("Content-Range") != "" {
		t.Errorf("Range with a matching If-None-Match = %d, Content-Range %q; want 304 without it", w.Code, w.Header().Get("Content-Range"))
	}
	wantCalls(t, o, 1)
}

// Range applies to a complete 200: a stored 404 is served whole.
func TestRangeOnOtherStatusIsIgnored(t *testing.T) {
	o := staticOrigin(t, 404, []string{"Cache-Control", "max-age=60"}, "not here")
	h := newFrozenHandler(t, o)
	const url = "http://example.com/missing"
	do(t, h, http.MethodGet, url)
	w := do(t, h, http.MethodGet, url, "Range", "bytes=0-1")
	wantRange(t, "GET 404 with Range", w, 404, "", "not here")
}

// A Range request that finds nothing stored has the whole answer fetched (without Range),
// stored and its range served from it. An answer Weir cannot hold (over
// cache.maxEntrySize, or not storable) is not streamed whole to a client that asked for a
// part: the fetch gives up, and the client's own request, Range included, goes to the
// origin; the key is then marked hit-for-pass, so later Range requests go straight there.
func TestRangeMiss(t *testing.T) {
	small := "0123456789"
	large := strings.Repeat("abcdefghij", 200)
	tests := []struct {
		desc       string
		reqHeader  []string
		header     []string
		body       string
		withLength bool
		// The answers to a Range request and to a second one.
		wantCS, wantSecondCS string
		// wantOrigin lists the Range header of each origin call, after both requests.
		wantOrigin []string
	}{
		{desc: "stored, then served from storage", header: []string{"Cache-Control", "max-age=60"}, body: small, withLength: true,
			wantCS: "Weir; fwd=uri-miss; stored", wantSecondCS: "Weir; hit; ttl=60", wantOrigin: []string{""}},
		{desc: "over the size limit by its Content-Length", header: []string{"Cache-Control", "max-age=60"}, body: large, withLength: true,
			wantCS: "Weir; fwd=uri-miss; detail=too-large", wantSecondCS: "Weir; fwd=uri-miss; detail=uncacheable",
			wantOrigin: []string{"", "bytes=2-4", "bytes=2-4"}},
		{desc: "over the size limit as it arrives", header: []string{"Cache-Control", "max-age=60"}, body: large,
			wantCS: "Weir; fwd=uri-miss; detail=too-large", wantSecondCS: "Weir; fwd=uri-miss; detail=uncacheable",
			wantOrigin: []string{"", "bytes=2-4", "bytes=2-4"}},
		{desc: "not storable", header: []string{"Cache-Control", "no-store"}, body: small, withLength: true,
			wantCS: "Weir; fwd=uri-miss; detail=no-store", wantSecondCS: "Weir; fwd=uri-miss; detail=uncacheable",
			wantOrigin: []string{"", "bytes=2-4", "bytes=2-4"}},
		// A request with credentials fetches alone (FR-COA-8) and its answer is rarely
		// shared: its Range goes to the origin as it is.
		{desc: "with credentials", reqHeader: []string{"Authorization", "Bearer x"}, header: []string{"Cache-Control", "max-age=60"},
			body: small, withLength: true,
			wantCS: "Weir; fwd=uri-miss", wantSecondCS: "Weir; fwd=uri-miss", wantOrigin: []string{"bytes=2-4", "bytes=2-4"}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			o := rangeOrigin(t, tc.header, tc.body, tc.withLength)
			h := newTestHandler(t, Settings{Now: newFakeClock().Now, MaxEntrySize: 1024}, o)
			const url = "http://example.com/range-miss"
			want := tc.body[2:5]
			contentRange := "bytes 2-4/" + strconv.Itoa(len(tc.body))
			for i, cs := range []string{tc.wantCS, tc.wantSecondCS} {
				what := "Range request " + strconv.Itoa(i+1)
				w := do(t, h, http.MethodGet, url, append([]string{"Range", "bytes=2-4"}, tc.reqHeader...)...)
				wantRange(t, what, w, 206, contentRange, want)
				if got := w.Header().Get("Cache-Status"); got != cs {
					t.Errorf("%s: Cache-Status = %q, want %q", what, got, cs)
				}
			}
			if got := o.callCount(); got != len(tc.wantOrigin) {
				t.Fatalf("origin calls = %d, want %d", got, len(tc.wantOrigin))
			}
			for i, rng := range tc.wantOrigin {
				if got := o.request(t, i+1).Header.Get("Range"); got != rng {
					t.Errorf("origin call %d: Range = %q, want %q", i+1, got, rng)
				}
			}
		})
	}
}

// A Range request and a plain one for the same missing key share one fetch.
func TestRangeMissCoalesces(t *testing.T) {
	o := rangeOrigin(t, []string{"Cache-Control", "max-age=60"}, "0123456789", true)
	o.hold(1)
	h := newFrozenHandler(t, o)
	const url = "http://example.com/range-shared"
	leader := serveAsync(h, newRequest(http.MethodGet, url, "Range", "bytes=-3"))
	o.waitEntered(t, 1)
	follower := serveAsync(h, newRequest(http.MethodGet, url))
	waitFollowers(t, h, "http://example.com/range-shared", 1)
	o.release(1)
	wantRange(t, "leader", awaitAnswer(t, leader), 206, "bytes 7-9/10", "789")
	wantRange(t, "follower", awaitAnswer(t, follower), 200, "", "0123456789")
	wantCalls(t, o, 1)
}

// A Range request that finds its entry stale revalidates it and is served its range.
func TestRangeOnRevalidation(t *testing.T) {
	clock := newFakeClock()
	o := validatingOrigin(t, `"v1"`, []string{"Cache-Control", "max-age=10"}, "0123456789")
	const url = "http://example.com/range-stale"
	h := storedThenAged(t, clock, o, url, 20*time.Second)
	w := do(t, h, http.MethodGet, url, "Range", "bytes=1-2")
	wantRange(t, "Range on a stale entry", w, 206, "bytes 1-2/10", "12")
	if got := w.Header().Get("Cache-Status"); got != "Weir; fwd=stale; stored; fwd-status=304" {
		t.Errorf("Cache-Status = %q, want a revalidation", got)
	}
	if got := o.request(t, 2).Header.Get("Range"); got != "" {
		t.Errorf("the revalidation carried Range %q, want none", got)
	}
}
