package httpcache

import (
	"net/http"
	"reflect"
	"testing"
	"time"
)

func TestPolicyStorable(t *testing.T) {
	plain, _ := http.NewRequest(http.MethodGet, "http://example.com/", nil)
	authed, _ := http.NewRequest(http.MethodGet, "http://example.com/", nil)
	authed.Header.Set("Authorization", "Basic eA==")
	tests := []struct {
		desc       string
		r          *http.Request
		status     int
		header     http.Header
		DefaultTTL time.Duration
		want       bool
		wantReason string
	}{
		{desc: "max-age", r: plain, status: 200, header: http.Header{"Cache-Control": {"max-age=1"}}, want: true},
		{desc: "max-age=0 is explicit", r: plain, status: 200, header: http.Header{"Cache-Control": {"max-age=0"}}, want: true},
		{desc: "Expires", r: plain, status: 200, header: http.Header{"Expires": {"0"}}, want: true},
		{desc: "Etag only", r: plain, status: 200, header: http.Header{"Etag": {`"x"`}}, want: true},
		{desc: "Last-Modified only", r: plain, status: 200, header: http.Header{"Last-Modified": {"Mon, 02 Jan 2006 15:04:05 GMT"}}, want: true},
		{desc: "no-store wins", r: plain, status: 200, header: http.Header{"Cache-Control": {"public, max-age=1, no-store"}}, wantReason: ReasonNoStore},
		{desc: "private", r: plain, status: 200, header: http.Header{"Cache-Control": {"private, max-age=1"}}, wantReason: ReasonPrivate},
		{desc: "Set-Cookie", r: plain, status: 200, header: http.Header{"Cache-Control": {"max-age=1"}, "Set-Cookie": {"a=b"}}, wantReason: ReasonCookie},
		{desc: "206", r: plain, status: 206, header: http.Header{"Cache-Control": {"max-age=1"}}, wantReason: ReasonStatus},
		{desc: "304", r: plain, status: 304, header: http.Header{"Cache-Control": {"max-age=1"}}, wantReason: ReasonStatus},
		{desc: "500", r: plain, status: 500, header: http.Header{"Cache-Control": {"max-age=1"}}, wantReason: ReasonStatus},
		{desc: "302 with max-age", r: plain, status: 302, header: http.Header{"Cache-Control": {"max-age=1"}}, want: true},
		{desc: "302 without freshness, default TTL", r: plain, status: 302, header: http.Header{}, DefaultTTL: time.Minute, wantReason: ReasonNoFresh},
		{desc: "200 without freshness", r: plain, status: 200, header: http.Header{}, wantReason: ReasonNoFresh},
		{desc: "200 without freshness, default TTL", r: plain, status: 200, header: http.Header{}, DefaultTTL: time.Minute, want: true},
		{desc: "410 without freshness, default TTL", r: plain, status: 410, header: http.Header{}, DefaultTTL: time.Minute, want: true},
		{desc: "Authorization", r: authed, status: 200, header: http.Header{"Cache-Control": {"max-age=1"}}, wantReason: ReasonAuth},
		{desc: "Authorization, public", r: authed, status: 200, header: http.Header{"Cache-Control": {"public, max-age=1"}}, want: true},
		{desc: "Authorization, s-maxage", r: authed, status: 200, header: http.Header{"Cache-Control": {"s-maxage=1"}}, want: true},
		{desc: "Authorization, must-revalidate", r: authed, status: 200, header: http.Header{"Cache-Control": {"must-revalidate, max-age=1"}}, want: true},
		{desc: "Authorization, default TTL", r: authed, status: 200, header: http.Header{}, DefaultTTL: time.Minute, wantReason: ReasonAuth},
		{desc: "Vary star", r: plain, status: 200, header: http.Header{"Cache-Control": {"max-age=1"}, "Vary": {"*"}}, wantReason: ReasonVaryStar},
		{desc: "Vary list", r: plain, status: 200, header: http.Header{"Cache-Control": {"max-age=1"}, "Vary": {"Accept"}}, want: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			p := &Policy{DefaultTTL: tc.DefaultTTL, MaxEntrySize: 1 << 20}
			got, reason := Storable(p, tc.r, tc.status, tc.header, ParseCacheControl(tc.header["Cache-Control"]))
			if got != tc.want || reason != tc.wantReason {
				t.Errorf("storable = %v, %q; want %v, %q", got, reason, tc.want, tc.wantReason)
			}
		})
	}
}

// RFC 9111 sections 4.2.1 and 4.2.3: freshness lifetime and age of a new entry.
func TestNewEntryFreshness(t *testing.T) {
	resp := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	date := func(d time.Duration) string { return resp.Add(d).Format(http.TimeFormat) }
	tests := []struct {
		desc       string
		status     int
		header     http.Header
		reqTime    time.Time
		DefaultTTL time.Duration
		policySIE  time.Duration // the operator's stale.ifError
		policySWR  time.Duration // the operator's stale.whileRevalidate
		wantAge    time.Duration // resp minus Born
		wantFresh  time.Duration // FreshUntil minus Born
		wantSWR    time.Duration // StaleWhileRevalidateUntil minus FreshUntil; 0: none
		wantSIE    time.Duration // StaleIfErrorUntil minus FreshUntil; 0: none
		wantKeep   time.Duration // KeepUntil minus FreshUntil
	}{
		{desc: "max-age", header: http.Header{"Cache-Control": {"max-age=60"}}, wantFresh: time.Minute},
		{desc: "s-maxage over max-age", header: http.Header{"Cache-Control": {"max-age=60, s-maxage=5"}}, wantFresh: 5 * time.Second},
		{desc: "max-age over Expires", header: http.Header{"Cache-Control": {"max-age=60"}, "Date": {date(0)}, "Expires": {date(time.Hour)}}, wantFresh: time.Minute},
		{desc: "Expires minus Date", header: http.Header{"Date": {date(-10 * time.Second)}, "Expires": {date(50 * time.Second)}},
			wantAge: 10 * time.Second, wantFresh: time.Minute},
		{desc: "Expires without Date counts from receipt", header: http.Header{"Expires": {date(30 * time.Second)}}, wantFresh: 30 * time.Second},
		{desc: "Expires before Date", header: http.Header{"Date": {date(0)}, "Expires": {date(-time.Hour)}}, wantFresh: 0},
		{desc: "invalid Expires is expired", header: http.Header{"Expires": {"0"}}, wantFresh: 0},
		{desc: "no freshness, no default", header: http.Header{}, wantFresh: 0},
		{desc: "default TTL", header: http.Header{}, DefaultTTL: time.Hour, wantFresh: time.Hour},
		{desc: "default TTL not for 302", status: 302, header: http.Header{}, DefaultTTL: time.Hour, wantFresh: 0},
		{desc: "default TTL not over Expires", header: http.Header{"Expires": {"0"}}, DefaultTTL: time.Hour, wantFresh: 0},
		{desc: "no-cache", header: http.Header{"Cache-Control": {"no-cache, max-age=60"}}, DefaultTTL: time.Hour, wantFresh: 0},
		{desc: "invalid max-age", header: http.Header{"Cache-Control": {"max-age=1, max-age=2"}}, wantFresh: 0},
		{desc: "Age header", header: http.Header{"Cache-Control": {"max-age=60"}, "Age": {"20"}}, wantAge: 20 * time.Second, wantFresh: time.Minute},
		{desc: "quoted Age header", header: http.Header{"Cache-Control": {"max-age=60"}, "Age": {`"20"`}}, wantAge: 20 * time.Second, wantFresh: time.Minute},
		{desc: "Age not starting with a digit makes it stale", header: http.Header{"Cache-Control": {"max-age=60"}, "Age": {"-5"}}, wantFresh: 0},
		{desc: "Age takes the leading digits of its first member", header: http.Header{"Cache-Control": {"max-age=60"}, "Age": {"20.5, 3"}}, wantAge: 20 * time.Second, wantFresh: time.Minute},
		{desc: "Age list of different values: the first member", header: http.Header{"Cache-Control": {"max-age=60"}, "Age": {"0,7200"}}, wantFresh: time.Minute},
		{desc: "two Age field lines make it stale", header: http.Header{"Cache-Control": {"max-age=60"}, "Age": {"0", "0"}}, wantFresh: 0},
		{desc: "two Age field lines, the first zero, make it stale", header: http.Header{"Cache-Control": {"max-age=60"}, "Age": {"0", "7200"}}, wantFresh: 0},
		{desc: "Age repeating its value makes it stale", header: http.Header{"Cache-Control": {"max-age=60"}, "Age": {"0, 0"}}, wantFresh: 0},
		{desc: "Age repeating a young value makes it stale", header: http.Header{"Cache-Control": {"max-age=10000"}, "Age": {"3600,3600"}}, wantFresh: 0},
		{desc: "response delay adds to Age", header: http.Header{"Cache-Control": {"max-age=60"}, "Age": {"20"}}, reqTime: resp.Add(-3 * time.Second),
			wantAge: 23 * time.Second, wantFresh: time.Minute},
		{desc: "apparent age wins when larger", header: http.Header{"Cache-Control": {"max-age=60"}, "Age": {"5"}, "Date": {date(-30 * time.Second)}},
			wantAge: 30 * time.Second, wantFresh: time.Minute},
		{desc: "Date in the future", header: http.Header{"Cache-Control": {"max-age=60"}, "Date": {date(time.Hour)}}, wantFresh: time.Minute},
		{desc: "stale windows", header: http.Header{"Cache-Control": {"max-age=10, stale-while-revalidate=20, stale-if-error=300"}},
			wantFresh: 10 * time.Second, wantSWR: 20 * time.Second, wantSIE: 300 * time.Second, wantKeep: 300 * time.Second},
		{desc: "must-revalidate closes the windows", header: http.Header{"Cache-Control": {"max-age=10, must-revalidate, stale-while-revalidate=20, stale-if-error=300"}},
			wantFresh: 10 * time.Second},
		{desc: "proxy-revalidate closes the windows", header: http.Header{"Cache-Control": {"max-age=10, proxy-revalidate, stale-if-error=300"}},
			wantFresh: 10 * time.Second},
		{desc: "s-maxage closes the windows", header: http.Header{"Cache-Control": {"s-maxage=10, stale-while-revalidate=20"}},
			wantFresh: 10 * time.Second},
		{desc: "no-cache closes the windows", header: http.Header{"Cache-Control": {"no-cache, stale-if-error=300"}}},
		{desc: "validator keeps a minute at least", header: http.Header{"Cache-Control": {"max-age=10"}, "Etag": {`"e"`}},
			wantFresh: 10 * time.Second, wantKeep: time.Minute},
		{desc: "validator keeps the lifetime again", header: http.Header{"Cache-Control": {"max-age=600"}, "Last-Modified": {date(-time.Hour)}},
			wantFresh: 10 * time.Minute, wantKeep: 10 * time.Minute},
		{desc: "validator keeps a day at most", header: http.Header{"Cache-Control": {"max-age=604800"}, "Etag": {`"e"`}},
			wantFresh: 7 * 24 * time.Hour, wantKeep: 24 * time.Hour},
		{desc: "validator past a longer window", header: http.Header{"Cache-Control": {"max-age=10, stale-if-error=86400"}, "Etag": {`"e"`}},
			wantFresh: 10 * time.Second, wantSIE: 24 * time.Hour, wantKeep: 24 * time.Hour},
		{desc: "the operator's windows where the origin gave none", header: http.Header{"Cache-Control": {"max-age=10"}},
			policySIE: time.Hour, policySWR: time.Minute,
			wantFresh: 10 * time.Second, wantSWR: time.Minute, wantSIE: time.Hour, wantKeep: time.Hour},
		{desc: "the operator's windows for an answer fresh by default", header: http.Header{}, DefaultTTL: time.Minute,
			policySIE: time.Hour, wantFresh: time.Minute, wantSIE: time.Hour, wantKeep: time.Hour},
		{desc: "the origin's stale-if-error first", header: http.Header{"Cache-Control": {"max-age=10, stale-if-error=30"}},
			policySIE: time.Hour, policySWR: time.Minute,
			wantFresh: 10 * time.Second, wantSWR: time.Minute, wantSIE: 30 * time.Second, wantKeep: time.Minute},
		{desc: "the origin's stale-while-revalidate first", header: http.Header{"Cache-Control": {"max-age=10, stale-while-revalidate=5"}},
			policySIE: time.Hour, policySWR: time.Minute,
			wantFresh: 10 * time.Second, wantSWR: 5 * time.Second, wantSIE: time.Hour, wantKeep: time.Hour},
		{desc: "the origin's zero is its own", header: http.Header{"Cache-Control": {"max-age=10, stale-if-error=0"}},
			policySIE: time.Hour, wantFresh: 10 * time.Second},
		{desc: "must-revalidate turns the policy off", header: http.Header{"Cache-Control": {"max-age=10, must-revalidate"}},
			policySIE: time.Hour, policySWR: time.Minute, wantFresh: 10 * time.Second},
		{desc: "proxy-revalidate turns the policy off", header: http.Header{"Cache-Control": {"max-age=10, proxy-revalidate"}},
			policySIE: time.Hour, wantFresh: 10 * time.Second},
		{desc: "s-maxage turns the policy off", header: http.Header{"Cache-Control": {"s-maxage=10"}},
			policySIE: time.Hour, policySWR: time.Minute, wantFresh: 10 * time.Second},
		{desc: "no-cache turns the policy off", header: http.Header{"Cache-Control": {"no-cache"}}, policySIE: time.Hour},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			status := tc.status
			if status == 0 {
				status = 200
			}
			reqTime := tc.reqTime
			if reqTime.IsZero() {
				reqTime = resp
			}
			p := &Policy{DefaultTTL: tc.DefaultTTL, StaleIfError: tc.policySIE, StaleWhileRevalidate: tc.policySWR}
			e := NewEntry(p, status, tc.header, []byte("b"), ParseCacheControl(tc.header["Cache-Control"]), reqTime, resp)
			if got := resp.Sub(e.Born); got != tc.wantAge {
				t.Errorf("age = %s, want %s", got, tc.wantAge)
			}
			if got := e.FreshUntil.Sub(e.Born); got != tc.wantFresh {
				t.Errorf("lifetime = %s, want %s", got, tc.wantFresh)
			}
			window := func(name string, until time.Time, want time.Duration) {
				t.Helper()
				got := time.Duration(0)
				if until.After(e.FreshUntil) {
					got = until.Sub(e.FreshUntil)
				}
				if got != want {
					t.Errorf("%s window = %s, want %s", name, got, want)
				}
			}
			window("stale-while-revalidate", e.StaleWhileRevalidateUntil, tc.wantSWR)
			window("stale-if-error", e.StaleIfErrorUntil, tc.wantSIE)
			if got := e.KeepUntil.Sub(e.FreshUntil); got != tc.wantKeep {
				t.Errorf("kept past freshness = %s, want %s", got, tc.wantKeep)
			}
			if e.Status != status || string(e.Body) != "b" {
				t.Errorf("entry = %d %q, want %d b", e.Status, e.Body, status)
			}
		})
	}
}

func TestNewEntryVary(t *testing.T) {
	p := &Policy{}
	now := time.Now()
	e := NewEntry(p, 200, http.Header{"Cache-Control": {"max-age=1"}, "Vary": {"accept-encoding, Accept-Language"}}, nil, ParseCacheControl([]string{"max-age=1"}), now, now)
	if want := []string{"Accept-Encoding", "Accept-Language"}; !reflect.DeepEqual(e.Vary, want) {
		t.Errorf("Vary = %q, want %q", e.Vary, want)
	}
	e = NewEntry(p, 200, http.Header{"Cache-Control": {"max-age=1"}}, nil, ParseCacheControl([]string{"max-age=1"}), now, now)
	if e.Vary != nil {
		t.Errorf("Vary = %q, want none", e.Vary)
	}
}

func TestStoredHeader(t *testing.T) {
	in := http.Header{
		"Content-Type":      {"text/plain"},
		"Content-Length":    {"999"},
		"Connection":        {"keep-alive"},
		"Keep-Alive":        {"timeout=5"},
		"Transfer-Encoding": {"chunked"},
		"Age":               {"7"},
		"Cache-Status":      {"Other; hit"},
		"X-Multi":           {"a", "b"},
		// Meant for Weir alone, so never stored, and never served from storage.
		"Surrogate-Control":  {"max-age=60"},
		"Weir-Cache-Control": {"max-age=60"},
		// Meant for every CDN in front of Weir too (RFC 9213 section 3).
		"Cdn-Cache-Control": {"max-age=60"},
	}
	got := storedHeader(in, []byte("12345"))
	want := http.Header{
		"Content-Type":      {"text/plain"},
		"Content-Length":    {"5"},
		"X-Multi":           {"a", "b"},
		"Cdn-Cache-Control": {"max-age=60"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("storedHeader = %v, want %v", got, want)
	}
	// The stored copy does not share memory with the answer's header.
	got["X-Multi"][0] = "changed"
	if in["X-Multi"][0] != "a" {
		t.Error("storedHeader shares value slices with its input")
	}
}

// RFC 9111 section 4.3.4: a 304 updates the stored fields, but not the framing.
func TestMergeNotModified(t *testing.T) {
	stored := http.Header{
		"Content-Type":     {"text/html"},
		"Content-Length":   {"100"},
		"Content-Encoding": {"gzip"},
		"Etag":             {`"1"`},
		"Cache-Control":    {"max-age=10"},
		"X-Old":            {"kept"},
	}
	fresh := http.Header{
		"Content-Length":   {"0"},
		"Content-Encoding": {"br"},
		"Cache-Control":    {"max-age=99"},
		"Date":             {"Mon, 02 Jan 2006 15:04:05 GMT"},
	}
	got := MergeNotModified(stored, fresh)
	want := http.Header{
		"Content-Type":     {"text/html"},
		"Content-Length":   {"100"},
		"Content-Encoding": {"gzip"},
		"Etag":             {`"1"`},
		"Cache-Control":    {"max-age=99"},
		"X-Old":            {"kept"},
		"Date":             {"Mon, 02 Jan 2006 15:04:05 GMT"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("MergeNotModified = %v, want %v", got, want)
	}
	if stored.Get("Cache-Control") != "max-age=10" {
		t.Error("MergeNotModified changed the stored header")
	}
}
