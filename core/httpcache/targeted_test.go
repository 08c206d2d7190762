package httpcache

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// ccTargeted returns ccWith(set) as read from a targeted field.
func ccTargeted(set func(cc *Directives)) Directives {
	cc := ccWith(set)
	cc.Targeted = true
	return cc
}

func noChange(cc *Directives) {}

// RFC 9213 section 2.1: the first field of Weir's target list that holds valid directives
// for Weir decides, and Cache-Control is then ignored.
func TestResponseControl(t *testing.T) {
	tests := []struct {
		desc   string
		header http.Header
		want   Directives
	}{
		{desc: "Cache-Control alone", header: http.Header{"Cache-Control": {"max-age=5"}},
			want: ccWith(func(c *Directives) { c.MaxAge = 5 })},
		{desc: "no field", header: http.Header{}, want: ccAbsent},
		{desc: "CDN-Cache-Control over Cache-Control",
			header: http.Header{"Cache-Control": {"no-store"}, "Cdn-Cache-Control": {"max-age=60"}},
			want:   ccTargeted(func(c *Directives) { c.MaxAge = 60 })},
		{desc: "Surrogate-Control over CDN-Cache-Control",
			header: http.Header{"Cdn-Cache-Control": {"max-age=60"}, "Surrogate-Control": {"max-age=30"}},
			want:   ccTargeted(func(c *Directives) { c.MaxAge = 30 })},
		{desc: "Weir-Cache-Control over every other field",
			header: http.Header{"Cache-Control": {"max-age=1"}, "Cdn-Cache-Control": {"max-age=60"},
				"Surrogate-Control": {"max-age=30"}, "Weir-Cache-Control": {"max-age=10, stale-while-revalidate=5"}},
			want: ccTargeted(func(c *Directives) { c.MaxAge = 10; c.StaleWhileRevalidate = 5 })},
		{desc: "Surrogate-Control no-store over a fresh Cache-Control",
			header: http.Header{"Cache-Control": {"max-age=10000"}, "Surrogate-Control": {"no-store"}},
			want:   ccTargeted(func(c *Directives) { c.NoStore = true })},
		{desc: "Surrogate-Control max-age over Cache-Control no-store",
			header: http.Header{"Cache-Control": {"no-store"}, "Surrogate-Control": {"max-age=10000;weir"}},
			want:   ccTargeted(func(c *Directives) { c.MaxAge = 10000 })},
		{desc: "invalid Weir-Cache-Control falls back to the next field",
			header: http.Header{"Weir-Cache-Control": {"Max-Age=10"}, "Cdn-Cache-Control": {"max-age=60"}},
			want:   ccTargeted(func(c *Directives) { c.MaxAge = 60 })},
		{desc: "invalid CDN-Cache-Control falls back to Cache-Control",
			header: http.Header{"Cdn-Cache-Control": {"max-age=60,"}, "Cache-Control": {"max-age=5"}},
			want:   ccWith(func(c *Directives) { c.MaxAge = 5 })},
		{desc: "empty CDN-Cache-Control falls back to Cache-Control",
			header: http.Header{"Cdn-Cache-Control": {""}, "Cache-Control": {"max-age=5"}},
			want:   ccWith(func(c *Directives) { c.MaxAge = 5 })},
		{desc: "CDN-Cache-Control without a known directive still replaces Cache-Control",
			header: http.Header{"Cdn-Cache-Control": {"community=\"x\""}, "Cache-Control": {"max-age=5"}},
			want:   ccTargeted(noChange)},
		{desc: "Surrogate-Control targeted at another surrogate falls back",
			header: http.Header{"Surrogate-Control": {"max-age=3600;not-for-you"}, "Cache-Control": {"max-age=5"}},
			want:   ccWith(func(c *Directives) { c.MaxAge = 5 })},
		{desc: "Surrogate-Control without a caching directive falls back",
			header: http.Header{"Surrogate-Control": {`content="ESI/1.0"`}, "Cache-Control": {"max-age=5"}},
			want:   ccWith(func(c *Directives) { c.MaxAge = 5 })},
		{desc: "Surrogate-Control directives targeted at Weir win over untargeted ones",
			header: http.Header{"Surrogate-Control": {"max-age=10, no-store;cdn, max-age=60;WEIR"}},
			want:   ccTargeted(func(c *Directives) { c.MaxAge = 60 })},
		{desc: "Surrogate-Control untargeted directives when none names Weir",
			header: http.Header{"Surrogate-Control": {"max-age=10, no-store;cdn"}},
			want:   ccTargeted(func(c *Directives) { c.MaxAge = 10 })},
		{desc: "Surrogate-Control names are case-insensitive",
			header: http.Header{"Surrogate-Control": {"MaX-aGe=3600"}},
			want:   ccTargeted(func(c *Directives) { c.MaxAge = 3600 })},
		{desc: "Surrogate-Control extension directive beside max-age",
			header: http.Header{"Surrogate-Control": {"foobar, max-age=3600"}},
			want:   ccTargeted(func(c *Directives) { c.MaxAge = 3600 })},
		{desc: "Surrogate-Control max-age with its + extension",
			header: http.Header{"Surrogate-Control": {"max-age=60+30"}},
			want:   ccTargeted(func(c *Directives) { c.MaxAge = 60 })},
		{desc: "Surrogate-Control max-age capped at 2^31",
			header: http.Header{"Surrogate-Control": {"max-age=99999999999"}},
			want:   ccTargeted(func(c *Directives) { c.MaxAge = maxDeltaSeconds })},
		{desc: "Surrogate-Control malformed max-age is stale, not ignored",
			header: http.Header{"Surrogate-Control": {"max-age=soon"}, "Cache-Control": {"max-age=60"}},
			want:   ccTargeted(func(c *Directives) { c.MaxAge = 0; c.Invalid = true })},
		{desc: "Surrogate-Control over several lines",
			header: http.Header{"Surrogate-Control": {"max-age=60", "stale-if-error=30;weir"}},
			want:   ccTargeted(func(c *Directives) { c.StaleIfError = 30 })},
		{desc: "quoted semicolon is not a target",
			header: http.Header{"Surrogate-Control": {`no-cache="a;b", max-age=5`}},
			want:   ccTargeted(func(c *Directives) { c.NoCache = true; c.MaxAge = 5 })},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if got := ResponseControl(tc.header); got != tc.want {
				t.Errorf("ResponseControl(%v) = %+v, want %+v", tc.header, got, tc.want)
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
		want   Directives
		wantOK bool
	}{
		{desc: "max-age", lines: []string{"max-age=60"}, wantOK: true,
			want: ccTargeted(func(c *Directives) { c.MaxAge = 60 })},
		{desc: "flags and ages", lines: []string{"no-cache, must-revalidate, s-maxage=5, stale-if-error=9"}, wantOK: true,
			want: ccTargeted(func(c *Directives) {
				c.NoCache = true
				c.MustRevalidate = true
				c.SMaxAge = 5
				c.StaleIfError = 9
			})},
		{desc: "several lines", lines: []string{"max-age=60", "private"}, wantOK: true,
			want: ccTargeted(func(c *Directives) { c.MaxAge = 60; c.Private = true })},
		{desc: "parameters ignored", lines: []string{"max-age=60;a=1;b, no-store;x"}, wantOK: true,
			want: ccTargeted(func(c *Directives) { c.MaxAge = 60; c.NoStore = true })},
		{desc: "a repeated key keeps its last value", lines: []string{"max-age=5, max-age=50"}, wantOK: true,
			want: ccTargeted(func(c *Directives) { c.MaxAge = 50 })},
		{desc: "Boolean false is no directive", lines: []string{"no-store=?0, max-age=5"}, wantOK: true,
			want: ccTargeted(func(c *Directives) { c.MaxAge = 5 })},
		{desc: "Boolean true is the directive", lines: []string{"no-store=?1"}, wantOK: true,
			want: ccTargeted(func(c *Directives) { c.NoStore = true })},
		{desc: "String private counts as private", lines: []string{`private="set-cookie"`}, wantOK: true,
			want: ccTargeted(func(c *Directives) { c.Private = true })},
		{desc: "inner list no-cache counts as no-cache", lines: []string{`no-cache=("a" "b")`}, wantOK: true,
			want: ccTargeted(func(c *Directives) { c.NoCache = true })},
		{desc: "a String age is malformed", lines: []string{`max-age="60"`}, wantOK: true,
			want: ccTargeted(func(c *Directives) { c.MaxAge = 0; c.Invalid = true })},
		{desc: "a Decimal age is malformed", lines: []string{"max-age=1.5"}, wantOK: true,
			want: ccTargeted(func(c *Directives) { c.MaxAge = 0; c.Invalid = true })},
		{desc: "a negative age is malformed", lines: []string{"max-age=-1"}, wantOK: true,
			want: ccTargeted(func(c *Directives) { c.MaxAge = 0; c.Invalid = true })},
		{desc: "an age without value is malformed", lines: []string{"max-age"}, wantOK: true,
			want: ccTargeted(func(c *Directives) { c.MaxAge = 0; c.Invalid = true })},
		{desc: "15 digits capped at 2^31", lines: []string{"max-age=999999999999999"}, wantOK: true,
			want: ccTargeted(func(c *Directives) { c.MaxAge = maxDeltaSeconds })},
		{desc: "tokens, byte sequences and spaces", lines: []string{"  a=tok/en:1,b=:aGk=:,\tmax-age=7  "}, wantOK: true,
			want: ccTargeted(func(c *Directives) { c.MaxAge = 7 })},
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
	p := &Policy{}
	r := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
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
			cc := ResponseControl(tc.header)
			ok, reason := Storable(p, r, 200, tc.header, cc)
			if ok != tc.wantStorable {
				t.Fatalf("storable = %v (%s), want %v", ok, reason, tc.wantStorable)
			}
			if !ok {
				return
			}
			e := NewEntry(p, 200, tc.header, nil, cc, now, now)
			if got := e.FreshUntil.Sub(e.Born); got != tc.wantLifetime {
				t.Errorf("lifetime = %v, want %v", got, tc.wantLifetime)
			}
		})
	}
}
