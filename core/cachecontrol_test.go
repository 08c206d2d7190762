package core

import (
	"net/http"
	"testing"
)

// ccAbsent is what parseCacheControl returns for no directives at all.
var ccAbsent = cacheControl{maxAge: -1, sMaxAge: -1, staleWhileRevalidate: -1, staleIfError: -1}

// ccWith returns ccAbsent changed by set.
func ccWith(set func(cc *cacheControl)) cacheControl {
	cc := ccAbsent
	set(&cc)
	return cc
}

func TestParseCacheControl(t *testing.T) {
	tests := []struct {
		desc  string
		lines []string
		want  cacheControl
	}{
		{desc: "no field", lines: nil, want: ccAbsent},
		{desc: "empty line", lines: []string{""}, want: ccAbsent},
		{desc: "only commas and spaces", lines: []string{" , ,, "}, want: ccAbsent},
		{desc: "max-age", lines: []string{"max-age=60"}, want: ccWith(func(c *cacheControl) { c.maxAge = 60 })},
		{desc: "names are case-insensitive", lines: []string{"Max-Age=60, NO-STORE"},
			want: ccWith(func(c *cacheControl) { c.maxAge = 60; c.noStore = true })},
		{desc: "quoted value", lines: []string{`max-age="60"`}, want: ccWith(func(c *cacheControl) { c.maxAge = 60 })},
		{desc: "space around =", lines: []string{"max-age = 60"}, want: ccWith(func(c *cacheControl) { c.maxAge = 60 })},
		{desc: "zero", lines: []string{"max-age=0"}, want: ccWith(func(c *cacheControl) { c.maxAge = 0 })},
		{desc: "same value twice", lines: []string{"max-age=5, max-age=5"}, want: ccWith(func(c *cacheControl) { c.maxAge = 5 })},
		{desc: "conflicting repeats are invalid", lines: []string{"max-age=5", "max-age=50"},
			want: ccWith(func(c *cacheControl) { c.maxAge = 0; c.invalid = true })},
		{desc: "non-numeric", lines: []string{"max-age=soon"}, want: ccWith(func(c *cacheControl) { c.maxAge = 0; c.invalid = true })},
		{desc: "negative", lines: []string{"max-age=-1"}, want: ccWith(func(c *cacheControl) { c.maxAge = 0; c.invalid = true })},
		{desc: "fraction", lines: []string{"max-age=1.5"}, want: ccWith(func(c *cacheControl) { c.maxAge = 0; c.invalid = true })},
		{desc: "no value", lines: []string{"max-age"}, want: ccWith(func(c *cacheControl) { c.maxAge = 0; c.invalid = true })},
		{desc: "empty value", lines: []string{"s-maxage="}, want: ccWith(func(c *cacheControl) { c.sMaxAge = 0; c.invalid = true })},
		{desc: "huge value capped at 2^31", lines: []string{"max-age=99999999999999999999999"},
			want: ccWith(func(c *cacheControl) { c.maxAge = maxDeltaSeconds })},
		{desc: "just over 2^31 capped", lines: []string{"max-age=2147483649"},
			want: ccWith(func(c *cacheControl) { c.maxAge = maxDeltaSeconds })},
		{desc: "every flag", lines: []string{"no-store, no-cache, private, public, must-revalidate, proxy-revalidate"},
			want: ccWith(func(c *cacheControl) {
				c.noStore = true
				c.noCache = true
				c.private = true
				c.public = true
				c.mustRevalidate = true
				c.proxyRevalidate = true
			})},
		{desc: "every age", lines: []string{"max-age=1, s-maxage=2, stale-while-revalidate=3, stale-if-error=4"},
			want: ccWith(func(c *cacheControl) {
				c.maxAge = 1
				c.sMaxAge = 2
				c.staleWhileRevalidate = 3
				c.staleIfError = 4
			})},
		{desc: "several lines", lines: []string{"max-age=5", "private"},
			want: ccWith(func(c *cacheControl) { c.maxAge = 5; c.private = true })},
		{desc: "qualified no-cache keeps its commas", lines: []string{`no-cache="Set-Cookie, X-Max-Age=1", max-age=5`},
			want: ccWith(func(c *cacheControl) { c.noCache = true; c.maxAge = 5 })},
		{desc: "qualified private", lines: []string{`private="X-User"`}, want: ccWith(func(c *cacheControl) { c.private = true })},
		{desc: "escaped quote inside a quoted string", lines: []string{`no-cache="a\",max-age=1", max-age=7`},
			want: ccWith(func(c *cacheControl) { c.noCache = true; c.maxAge = 7 })},
		{desc: "unknown directives ignored", lines: []string{`community="UCI", immutable, foo=bar, max-age=3`},
			want: ccWith(func(c *cacheControl) { c.maxAge = 3 })},
		{desc: "directive names are whole words", lines: []string{"no-stores, privates, max-ages=5"}, want: ccAbsent},
		{desc: "unterminated quote swallows the rest", lines: []string{`no-cache="abc, max-age=5`},
			want: ccWith(func(c *cacheControl) { c.noCache = true })},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if got := parseCacheControl(tc.lines); got != tc.want {
				t.Errorf("parseCacheControl(%q) = %+v, want %+v", tc.lines, got, tc.want)
			}
		})
	}
}

func TestParseDeltaSeconds(t *testing.T) {
	tests := []struct {
		desc   string
		in     string
		want   int64
		wantOK bool
	}{
		{desc: "zero", in: "0", want: 0, wantOK: true},
		{desc: "plain", in: "3600", want: 3600, wantOK: true},
		{desc: "leading zeros", in: "007", want: 7, wantOK: true},
		{desc: "quoted", in: `"12"`, want: 12, wantOK: true},
		{desc: "2^31", in: "2147483648", want: maxDeltaSeconds, wantOK: true},
		{desc: "ten digits over 2^31", in: "9999999999", want: maxDeltaSeconds, wantOK: true},
		{desc: "eleven digits", in: "10000000000", want: maxDeltaSeconds, wantOK: true},
		{desc: "empty", in: "", wantOK: false},
		{desc: "empty quotes", in: `""`, wantOK: false},
		{desc: "lone quote", in: `"`, wantOK: false},
		{desc: "sign", in: "+5", wantOK: false},
		{desc: "minus", in: "-5", wantOK: false},
		{desc: "space", in: "5 ", wantOK: false},
		{desc: "hex", in: "0x10", wantOK: false},
		{desc: "unicode digit", in: "٣", wantOK: false},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got, ok := parseDeltaSeconds(tc.in)
			if ok != tc.wantOK || (ok && got != tc.want) {
				t.Errorf("parseDeltaSeconds(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestRequestNoCache(t *testing.T) {
	tests := []struct {
		desc   string
		header http.Header
		want   bool
	}{
		{desc: "nothing", header: http.Header{}, want: false},
		{desc: "no-cache", header: http.Header{"Cache-Control": {"no-cache"}}, want: true},
		{desc: "max-age=0", header: http.Header{"Cache-Control": {"max-age=0"}}, want: true},
		{desc: "max-age=10", header: http.Header{"Cache-Control": {"max-age=10"}}, want: false},
		{desc: "no-store alone", header: http.Header{"Cache-Control": {"no-store"}}, want: false},
		{desc: "Pragma", header: http.Header{"Pragma": {"no-cache"}}, want: true},
		{desc: "other Pragma", header: http.Header{"Pragma": {"x-foo"}}, want: false},
		{desc: "Pragma ignored beside Cache-Control", header: http.Header{"Cache-Control": {"max-stale"}, "Pragma": {"no-cache"}}, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			r, _ := http.NewRequest(http.MethodGet, "http://example.com/", nil)
			r.Header = tc.header
			if got := requestNoCache(r); got != tc.want {
				t.Errorf("requestNoCache(%v) = %v, want %v", tc.header, got, tc.want)
			}
		})
	}
}
