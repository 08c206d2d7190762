package core

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"
)

// ccTargeted returns ccWith(set) as read from a targeted field.
func ccTargeted(set func(cc *cacheControl)) cacheControl {
	cc := ccWith(set)
	cc.targeted = true
	return cc
}

func noChange(cc *cacheControl) {}

// RFC 9213 section 2.1: the first field of Weir's target list that holds valid directives
// for Weir decides, and Cache-Control is then ignored.
func TestResponseControl(t *testing.T) {
	tests := []struct {
		desc   string
		header http.Header
		want   cacheControl
	}{
		{desc: "Cache-Control alone", header: http.Header{"Cache-Control": {"max-age=5"}},
			want: ccWith(func(c *cacheControl) { c.maxAge = 5 })},
		{desc: "no field", header: http.Header{}, want: ccAbsent},
		{desc: "CDN-Cache-Control over Cache-Control",
			header: http.Header{"Cache-Control": {"no-store"}, "Cdn-Cache-Control": {"max-age=60"}},
			want:   ccTargeted(func(c *cacheControl) { c.maxAge = 60 })},
		{desc: "Surrogate-Control over CDN-Cache-Control",
			header: http.Header{"Cdn-Cache-Control": {"max-age=60"}, "Surrogate-Control": {"max-age=30"}},
			want:   ccTargeted(func(c *cacheControl) { c.maxAge = 30 })},
		{desc: "Weir-Cache-Control over every other field",
			header: http.Header{"Cache-Control": {"max-age=1"}, "Cdn-Cache-Control": {"max-age=60"},
				"Surrogate-Control": {"max-age=30"}, "Weir-Cache-Control": {"max-age=10, stale-while-revalidate=5"}},
			want: ccTargeted(func(c *cacheControl) { c.maxAge = 10; c.staleWhileRevalidate = 5 })},
		{desc: "Surrogate-Control no-store over a fresh Cache-Control",
			header: http.Header{"Cache-Control": {"max-age=10000"}, "Surrogate-Control": {"no-store"}},
			want:   ccTargeted(func(c *cacheControl) { c.noStore = true })},
		{desc: "Surrogate-Control max-age over Cache-Control no-store",
			header: http.Header{"Cache-Control": {"no-store"}, "Surrogate-Control": {"max-age=10000;weir"}},
			want:   ccTargeted(func(c *cacheControl) { c.maxAge = 10000 })},
		{desc: "invalid Weir-Cache-Control falls back to the next field",
			header: http.Header{"Weir-Cache-Control": {"Max-Age=10"}, "Cdn-Cache-Control": {"max-age=60"}},
			want:   ccTargeted(func(c *cacheControl) { c.maxAge = 60 })},
		{desc: "invalid CDN-Cache-Control falls back to Cache-Control",
			header: http.Header{"Cdn-Cache-Control": {"max-age=60,"}, "Cache-Control": {"max-age=5"}},
			want:   ccWith(func(c *cacheControl) { c.maxAge = 5 })},
		{desc: "empty CDN-Cache-Control falls back to Cache-Control",
			header: http.Header{"Cdn-Cache-Control": {""}, "Cache-Control": {"max-age=5"}},
			want:   ccWith(func(c *cacheControl) { c.maxAge = 5 })},
		{desc: "CDN-Cache-Control without a known directive still replaces Cache-Control",
			header: http.Header{"Cdn-Cache-Control": {"community=\"x\""}, "Cache-Control": {"max-age=5"}},
			want:   ccTargeted(noChange)},
		{desc: "Surrogate-Control targeted at another surrogate falls back",
			header: http.Header{"Surrogate-Control": {"max-age=3600;not-for-you"}, "Cache-Control": {"max-age=5"}},
			want:   ccWith(func(c *cacheControl) { c.maxAge = 5 })},
		{desc: "Surrogate-Control without a caching directive falls back",
			header: http.Header{"Surrogate-Control": {`content="ESI/1.0"`}, "Cache-Control": {"max-age=5"}},
			want:   ccWith(func(c *cacheControl) { c.maxAge = 5 })},
		{desc: "Surrogate-Control directives targeted at Weir win over untargeted ones",
			header: http.Header{"Surrogate-Control": {"max-age=10, no-store;cdn, max-age=60;WEIR"}},
			want:   ccTargeted(func(c *cacheControl) { c.maxAge = 60 })},
		{desc: "Surrogate-Control untargeted directives when none names Weir",
			header: http.Header{"Surrogate-Control": {"max-age=10, no-store;cdn"}},
			want:   ccTargeted(func(c *cacheControl) { c.maxAge = 10 })},
		{desc: "Surrogate-Control names are case-insensitive",
			header: http.Header{"Surrogate-Control": {"MaX-aGe=3600"}},
			want:   ccTargeted(func(c *cacheControl) { c.maxAge = 3600 })},
		{desc: "Surrogate-Control extension directive beside max-age",
			header: http.Header{"Surrogate-Control": {"foobar, max-age=3600"}},
			want:   ccTargeted(func(c *cacheControl) { c.maxAge = 3600 })},
		{desc: "Surrogate-Control max-age with its + extension",
			header: http.Header{"Surrogate-Control": {"max-age=60+30"}},
			want:   ccTargeted(func(c *cacheControl) { c.maxAge = 60 })},
		{desc: "Surrogate-Control max-age capped at 2^31",
			header: http.Header{"Surrogate-Control": {"max-age=99999999999"}},
			want:   ccTargeted(func(c *cacheControl) { c.maxAge = maxDeltaSeconds })},
		{desc: "Surrogate-Control malformed max-age is stale, not ignored",
			header: http.Header{"Surrogate-Control": {"max-age=soon"}, "Cache-Control": {"max-age=60"}},
			want:   ccTargeted(func(c *cacheControl) { c.maxAge = 0; c.invalid = true })},
		{desc: "Surrogate-Control over several lines",
			header: http.Header{"Surrogate-Control": {"max-age=60", "stale-if-error=30;weir"}},
			want:   ccTargeted(func(c *cacheControl) { c.staleIfError = 30 })},
		{desc: "quoted semicolon is not a target",
			header: http.Header{"Surrogate-Control": {`no-cache="a;b", max-age=5`}},
			want:   ccTargeted(func(c *cacheControl) { c.noCache = true; c.maxAge = 5 })},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if got := responseControl(tc.header); got != tc.want {
				t.Errorf("responseControl(%v) = %+v, want %+v", tc.header, got, tc.want)
			}
		})
	}
}

// RFC 9213 section 2.2: a targeted field is a Structured Field Dictionary (RFC 8941); one
// that does not parse is ignored.
func TestParseTargetedField(t *testing.T) {
	tests := []struct {
		desc   string
		lines  []string
		want   cacheControl
		wantOK bool
	}{
		{desc: "max-age", lines: []string{"max-age=60"}, wantOK: true,
			want: ccTargeted(func(c *cacheControl) { c.maxAge = 60 })},
		{desc: "flags and ages", lines: []string{"no-cache, must-revalidate, s-maxage=5, stale-if-error=9"}, wantOK: true,
			want: ccTargeted(func(c *cacheControl) {
				c.noCache = true
				c.mustRevalidate = true
				c.sMaxAge = 5
				c.staleIfError = 9
			})},
		{desc: "several lines", lines: []string{"max-age=60", "private"}, wantOK: true,
			want: ccTargeted(func(c *cacheControl) { c.maxAge = 60; c.private = true })},
		{desc: "parameters ignored", lines: []string{"max-age=60;a=1;b, no-store;x"}, wantOK: true,
			want: ccTargeted(func(c *cacheControl) { c.maxAge = 60; c.noStore = true })},
		{desc: "a repeated key keeps its last value", lines: []string{"max-age=5, max-age=50"}, wantOK: true,
			want: ccTargeted(func(c *cacheControl) { c.maxAge = 50 })},
		{desc: "Boolean false is no directive", lines: []string{"no-store=?0, max-age=5"}, wantOK: true,
			want: ccTargeted(func(c *cacheControl) { c.maxAge = 5 })},
		{desc: "Boolean true is the directive", lines: []string{"no-store=?1"}, wantOK: true,
			want: ccTargeted(func(c *cacheControl) { c.noStore = true })},
		{desc: "String private counts as private", lines: []string{`private="set-cookie"`}, wantOK: true,
			want: ccTargeted(func(c *cacheControl) { c.private = true })},
		{desc: "inner list no-cache counts as no-cache", lines: []string{`no-cache=("a" "b")`}, wantOK: true,
			want: ccTargeted(func(c *cacheControl) { c.noCache = true })},
		{desc: "a String age is malformed", lines: []string{`max-age="60"`}, wantOK: true,
			want: ccTargeted(func(c *cacheControl) { c.maxAge = 0; c.invalid = true })},
		{desc: "a Decimal age is malformed", lines: []string{"max-age=1.5"}, wantOK: true,
			want: ccTargeted(func(c *cacheControl) { c.maxAge = 0; c.invalid = true })},
		{desc: "a negative age is malformed", lines: []string{"max-age=-1"}, wantOK: true,
			want: ccTargeted(func(c *cacheControl) { c.maxAge = 0; c.invalid = true })},
		{desc: "an age without value is malformed", lines: []string{"max-age"}, wantOK: true,
			want: ccTargeted(func(c *cacheControl) { c.maxAge = 0; c.invalid = true })},
		{desc: "15 digits capped at 2^31", lines: []string{"max-age=999999999999999"}, wantOK: true,
			want: ccTargeted(func(c *cacheControl) { c.maxAge = maxDeltaSeconds })},
		{desc: "tokens, byte sequences and spaces", lines: []string{"  a=tok/en:1,b=:aGk=:,\tmax-age=7  "}, wantOK: true,
			want: ccTargeted(func(c *cacheControl) { c.maxAge = 7 })},
		{desc: "empty", lines: []string{""}, want: noDirectives},
		{desc: "only spaces", lines: []string{"   "}, want: noDirectives},
		{desc: "upper-case key", lines: []string{"Max-Age=60"}, want: noDirectives},
		{desc: "space before =", lines: []string{"max-age =60"}, want: noDirectives},
		{desc: "space after =", lines: []string{"max-age= 60"}, want: noDirectives},
		{desc: "trailing comma", lines: []string{"max-age=60,"}, want: noDirectives},
		{desc: "empty member", lines: []string{"max-age=60,,private"}, want: noDirectives},
		{desc: "16 digits", lines: []string{"max-age=1234567890123456"}, want: noDirectives},
		{desc: "unterminated String", lines: []string{`private="a`}, want: noDirectives},
		{desc: "bad escape", lines: []string{`private="a\b"`}, want: noDirectives},
		{desc: "bad Boolean", lines: []string{"no-store=?2"}, want: noDirectives},
		{desc: "bad byte sequence", lines: []string{"a=:a$:"}, want: noDirectives},
		{desc: "Cache-Control's quoted-string with a comma inside a token", lines: []string{"no-cache=a,b c"}, want: noDirectives},
		{desc: "unterminated inner list", lines: []string{"a=(1 2"}, want: noDirectives},
		{desc: "one bad line spoils the field", lines: []string{"max-age=60", "Private"}, want: noDirectives},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got, ok := parseTargetedField(tc.lines)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("parseTargetedField(%q) = %+v, %v; want %+v, %v", tc.lines, got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

// RFC 9213 section 2.1: under a targeted field, Expires is ignored like Cache-Control.
func TestTargetedFieldIgnoresExpires(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	date := now.Format(http.TimeFormat)
	later := now.Add(time.Hour).Format(http.TimeFormat)
	p := &policy{}
	r := newRequest(http.MethodGet, "http://example.com/")
	tests := []struct {
		desc         string
		header       http.Header
		wantStorable bool
		wantLifetime time.Duration
	}{
		{desc: "Expires alone", header: http.Header{"Date": {date}, "Expires": {later}},
			wantStorable: true, wantLifetime: time.Hour},
		{desc: "CDN-Cache-Control without freshness", header: http.Header{"Date": {date}, "Expires": {later}, "Cdn-Cache-Control": {"public"}},
			wantStorable: false},
		{desc: "CDN-Cache-Control max-age over Expires", header: http.Header{"Date": {date}, "Expires": {later}, "Cdn-Cache-Control": {"max-age=60"}},
			wantStorable: true, wantLifetime: time.Minute},
		{desc: "Surrogate-Control max-age=0 over a future Expires", header: http.Header{"Date": {date}, "Expires": {later}, "Surrogate-Control": {"max-age=0"}},
			wantStorable: true, wantLifetime: 0},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			cc := responseControl(tc.header)
			ok, reason := p.storable(r, 200, tc.header, cc)
			if ok != tc.wantStorable {
				t.Fatalf("storable = %v (%s), want %v", ok, reason, tc.wantStorable)
			}
			if !ok {
				return
			}
			e := p.newEntry(200, tc.header, nil, cc, now, now)
			if got := e.FreshUntil.Sub(e.Born); got != tc.wantLifetime {
				t.Errorf("lifetime = %v, want %v", got, tc.wantLifetime)
			}
		})
	}
}

// What an origin's targeted fields do through the handler: which field decides, which
// fields reach the client, on every way an answer leaves Weir.
func TestTargetedFieldsThroughHandler(t *testing.T) {
	const (
		stored = "Weir; fwd=uri-miss; stored"
		passed = "Weir; fwd=uri-miss; detail=uncacheable"
	)
	tests := []struct {
		desc       string
		status     int
		respHeader []string
		wantFirst  string
		wantSecond string
		// wantFields are the fields both answers carry, with their values; wantGone the
		// fields neither carries.
		wantFields []string
		wantGone   []string
	}{
		{desc: "Surrogate-Control max-age over Cache-Control no-store",
			respHeader: []string{"Cache-Control", "no-store", "Surrogate-Control", "max-age=3600"},
			wantFirst:  stored, wantSecond: "Weir; hit; ttl=3600",
			wantFields: []string{"Cache-Control", "no-store"}, wantGone: []string{"Surrogate-Control"}},
		{desc: "Surrogate-Control no-store over Cache-Control max-age",
			respHeader: []string{"Cache-Control", "max-age=3600", "Surrogate-Control", "no-store"},
			wantFirst:  "Weir; fwd=uri-miss; detail=no-store", wantSecond: passed,
			wantFields: []string{"Cache-Control", "max-age=3600"}},
		{desc: "Surrogate-Control short max-age over a long Cache-Control",
			respHeader: []string{"Cache-Control", "max-age=3600", "Surrogate-Control", "max-age=1"},
			wantFirst:  stored, wantSecond: "Weir; hit; ttl=1",
			wantGone: []string{"Surrogate-Control"}},
		{desc: "CDN-Cache-Control decides and is forwarded",
			respHeader: []string{"Cache-Control", "max-age=5", "CDN-Cache-Control", "max-age=60"},
			wantFirst:  stored, wantSecond: "Weir; hit; ttl=60",
			wantFields: []string{"Cdn-Cache-Control", "max-age=60", "Cache-Control", "max-age=5"}},
		{desc: "Weir-Cache-Control decides and is not forwarded",
			respHeader: []string{"CDN-Cache-Control", "max-age=60", "Weir-Cache-Control", "max-age=30"},
			wantFirst:  stored, wantSecond: "Weir; hit; ttl=30",
			wantFields: []string{"Cdn-Cache-Control", "max-age=60"}, wantGone: []string{"Weir-Cache-Control"}},
		{desc: "Weir-Cache-Control private over a public Cache-Control",
			respHeader: []string{"Cache-Control", "public, max-age=60", "Weir-Cache-Control", "private"},
			wantFirst:  "Weir; fwd=uri-miss; detail=private", wantSecond: passed,
			wantFields: []string{"Cache-Control", "public, max-age=60"}},
		{desc: "origin error carries no Weir-only field",
			status:     503,
			respHeader: []string{"Surrogate-Control", "max-age=60", "Weir-Cache-Control", "max-age=60"},
			wantFirst:  "Weir; fwd=uri-miss; detail=origin-error",
			wantGone:   []string{"Surrogate-Control", "Weir-Cache-Control"}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			status := tc.status
			if status == 0 {
				status = http.StatusOK
			}
			o := staticOrigin(t, status, tc.respHeader, "body")
			clock := newFakeClock()
			h := newTestHandler(t, Settings{Now: clock.Now}, o)
			answers := []string{tc.wantFirst, tc.wantSecond}
			for i, want := range answers {
				if want == "" {
					break
				}
				w := do(t, h, http.MethodGet, "http://example.com/t")
				wantAnswer(t, w, status, want, "body")
				wantTargetedFields(t, i+1, w.Header(), tc.wantFields, tc.wantGone)
			}
		})
	}
}

// wantTargetedFields checks the fields of answer n.
func wantTargetedFields(t *testing.T, n int, got http.Header, fields, gone []string) {
	t.Helper()
	for i := 0; i+1 < len(fields); i += 2 {
		if v := got[fields[i]]; len(v) != 1 || v[0] != fields[i+1] {
			t.Errorf("answer %d: %s = %q, want %q", n, fields[i], v, fields[i+1])
		}
	}
	for _, k := range gone {
		if v, ok := got[k]; ok {
			t.Errorf("answer %d carries %s: %q, want none", n, k, v)
		}
	}
}

// A streamed answer (not stored, written to the client as it arrives) carries no field meant
// for Weir alone.
func TestStreamedAnswerDropsWeirOnlyFields(t *testing.T) {
	tests := []struct {
		desc        string
		header      []string
		wantDetail  string
		maxEntry    int64
		contentSize int
	}{
		{desc: "not storable", header: []string{"Surrogate-Control", "no-store", "Weir-Cache-Control", "no-store"},
			wantDetail: "no-store"},
		{desc: "too large", header: []string{"Surrogate-Control", "max-age=60", "Weir-Cache-Control", "max-age=60"},
			wantDetail: "too-large", maxEntry: 4, contentSize: 10},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			body := strings.Repeat("z", tc.contentSize+1)
			o := staticOrigin(t, 200, append([]string{"Content-Length", itoa(int64(len(body)))}, tc.header...), body)
			h := newTestHandler(t, Settings{Now: newFakeClock().Now, MaxEntrySize: tc.maxEntry}, o)
			w := newWatchWriter()
			h.ServeHTTP(w, newRequest(http.MethodGet, "http://example.com/s"))
			if status, got := w.result(); status != 200 || got != body {
				t.Errorf("answer = %d %q, want 200 %q", status, got, body)
			}
			if got, want := w.header.Get("Cache-Status"), "Weir; fwd=uri-miss; detail="+tc.wantDetail; got != want {
				t.Errorf("Cache-Status = %q, want %q", got, want)
			}
			wantTargetedFields(t, 1, w.header, nil, []string{"Surrogate-Control", "Weir-Cache-Control"})
		})
	}
}

// Answers to other methods pass a writer of Weir's (statusWriter): the fields meant for Weir
// alone stop there too.
func TestOtherMethodsDropWeirOnlyFields(t *testing.T) {
	tests := []struct {
		desc      string
		method    string
		writeNone bool
	}{
		{desc: "POST", method: http.MethodPost},
		{desc: "OPTIONS", method: http.MethodOptions},
		{desc: "DELETE with an implicit 200", method: http.MethodDelete, writeNone: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Surrogate-Control", "no-store")
				w.Header().Set("Weir-Cache-Control", "no-store")
				w.Header().Set("Cdn-Cache-Control", "no-store")
				if !tc.writeNone {
					w.WriteHeader(http.StatusOK)
				}
			})
			h := newTestHandler(t, Settings{Now: newFakeClock().Now}, o)
			w := do(t, h, tc.method, "http://example.com/m")
			wantAnswer(t, w, 200, "Weir; fwd=method", "")
			wantTargetedFields(t, 1, w.Header(), []string{"Cdn-Cache-Control", "no-store"},
				[]string{"Surrogate-Control", "Weir-Cache-Control"})
		})
	}
}

// Edge Architecture section 2.1: Weir's fetches announce it in Surrogate-Capability, after
// what the request already carried.
func TestFetchAnnouncesSurrogateCapability(t *testing.T) {
	tests := []struct {
		desc      string
		reqHeader []string
		want      []string
	}{
		{desc: "none before", want: []string{`weir="Surrogate/1.0"`}},
		{desc: "appended to a downstream surrogate's", reqHeader: []string{"Surrogate-Capability", `edge="Surrogate/1.0"`},
			want: []string{`edge="Surrogate/1.0"`, `weir="Surrogate/1.0"`}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			o := staticOrigin(t, 200, []string{"Cache-Control", "max-age=60"}, "b")
			h := newTestHandler(t, Settings{Now: newFakeClock().Now}, o)
			r := newRequest(http.MethodGet, "http://example.com/cap", tc.reqHeader...)
			h.ServeHTTP(httptest.NewRecorder(), r)
			if got := o.request(t, 1).Header["Surrogate-Capability"]; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("origin saw Surrogate-Capability %q, want %q", got, tc.want)
			}
			if got := r.Header["Surrogate-Capability"]; len(got) != len(tc.reqHeader)/2 {
				t.Errorf("the client's request was changed: Surrogate-Capability %q", got)
			}
		})
	}
}

// A 304 that carries the targeted field refreshes the entry by it: the merged header is read
// as a whole, before the Weir-only fields are dropped from what is stored.
func TestRevalidationReadsTargetedField(t *testing.T) {
	clock := newFakeClock()
	o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Etag", `"v1"`)
		if n == 1 {
			w.Header().Set("Surrogate-Control", "max-age=10")
			w.Write([]byte("body"))
			return
		}
		w.Header().Set("Surrogate-Control", "max-age=100")
		w.WriteHeader(http.StatusNotModified)
	})
	h := newTestHandler(t, Settings{Now: clock.Now}, o)
	const url = "http://example.com/reval"
	wantAnswer(t, do(t, h, http.MethodGet, url), 200, "Weir; fwd=uri-miss; stored", "body")
	clock.Add(20 * time.Second)
	w := do(t, h, http.MethodGet, url)
	wantAnswer(t, w, 200, "Weir; fwd=stale; stored; fwd-status=304", "body")
	wantTargetedFields(t, 2, w.Header(), []string{"Cache-Control", "no-store"}, []string{"Surrogate-Control"})
	clock.Add(50 * time.Second)
	wantAnswer(t, do(t, h, http.MethodGet, url), 200, "Weir; hit; ttl=50", "body")
	if got := o.callCount(); got != 2 {
		t.Errorf("origin calls = %d, want 2", got)
	}
}
