package httpcache

import (
	"testing"
)

// ccAbsent is what ParseCacheControl returns for no directives at all.
var ccAbsent = Directives{MaxAge: -1, SMaxAge: -1, StaleWhileRevalidate: -1, StaleIfError: -1}

// ccWith returns ccAbsent changed by set.
func ccWith(set func(cc *Directives)) Directives {
	cc := ccAbsent
	set(&cc)
	return cc
}

func TestParseCacheControl(t *testing.T) {
	tests := []struct {
		desc  string
		lines []string
		want  Directives
	}{
		{desc: "no field", lines: nil, want: ccAbsent},
		{desc: "empty line", lines: []string{""}, want: ccAbsent},
		{desc: "only commas and spaces", lines: []string{" , ,, "}, want: ccAbsent},
		{desc: "max-age", lines: []string{"max-age=60"}, want: ccWith(func(c *Directives) { c.MaxAge = 60 })},
		{desc: "names are case-insensitive", lines: []string{"Max-Age=60, NO-STORE"},
			want: ccWith(func(c *Directives) { c.MaxAge = 60; c.NoStore = true })},
		{desc: "quoted value", lines: []string{`max-age="60"`}, want: ccWith(func(c *Directives) { c.MaxAge = 60 })},
		{desc: "space around =", lines: []string{"max-age = 60"}, want: ccWith(func(c *Directives) { c.MaxAge = 60 })},
		{desc: "zero", lines: []string{"max-age=0"}, want: ccWith(func(c *Directives) { c.MaxAge = 0 })},
		{desc: "same value twice", lines: []string{"max-age=5, max-age=5"}, want: ccWith(func(c *Directives) { c.MaxAge = 5 })},
		{desc: "conflicting repeats are invalid", lines: []string{"max-age=5", "max-age=50"},
			want: ccWith(func(c *Directives) { c.MaxAge = 0; c.Invalid = true })},
		{desc: "non-numeric", lines: []string{"max-age=soon"}, want: ccWith(func(c *Directives) { c.MaxAge = 0; c.Invalid = true })},
		{desc: "negative", lines: []string{"max-age=-1"}, want: ccWith(func(c *Directives) { c.MaxAge = 0; c.Invalid = true })},
		{desc: "fraction", lines: []string{"max-age=1.5"}, want: ccWith(func(c *Directives) { c.MaxAge = 0; c.Invalid = true })},
		{desc: "no value", lines: []string{"max-age"}, want: ccWith(func(c *Directives) { c.MaxAge = 0; c.Invalid = true })},
		{desc: "empty value", lines: []string{"s-maxage="}, want: ccWith(func(c *Directives) { c.SMaxAge = 0; c.Invalid = true })},
		{desc: "huge value capped at 2^31", lines: []string{"max-age=99999999999999999999999"},
			want: ccWith(func(c *Directives) { c.MaxAge = maxDeltaSeconds })},
		{desc: "just over 2^31 capped", lines: []string{"max-age=2147483649"},
			want: ccWith(func(c *Directives) { c.MaxAge = maxDeltaSeconds })},
		{desc: "every flag", lines: []string{"no-store, no-cache, private, public, must-revalidate, proxy-revalidate"},
			want: ccWith(func(c *Directives) {
				c.NoStore = true
				c.NoCache = true
				c.Private = true
				c.Public = true
				c.MustRevalidate = true
				c.ProxyRevalidate = true
			})},
		{desc: "every age", lines: []string{"max-age=1, s-maxage=2, stale-while-revalidate=3, stale-if-error=4"},
			want: ccWith(func(c *Directives) {
				c.MaxAge = 1
				c.SMaxAge = 2
				c.StaleWhileRevalidate = 3
				c.StaleIfError = 4
			})},
		{desc: "several lines", lines: []string{"max-age=5", "private"},
			want: ccWith(func(c *Directives) { c.MaxAge = 5; c.Private = true })},
		{desc: "qualified no-cache keeps its commas", lines: []string{`no-cache="Set-Cookie, X-Max-Age=1", max-age=5`},
			want: ccWith(func(c *Directives) { c.NoCache = true; c.MaxAge = 5 })},
		{desc: "qualified private", lines: []string{`private="X-User"`}, want: ccWith(func(c *Directives) { c.Private = true })},
		{desc: "escaped quote inside a quoted string", lines: []string{`no-cache="a\",max-age=1", max-age=7`},
			want: ccWith(func(c *Directives) { c.NoCache = true; c.MaxAge = 7 })},
		{desc: "unknown directives ignored", lines: []string{`community="UCI", immutable, foo=bar, max-age=3`},
			want: ccWith(func(c *Directives) { c.MaxAge = 3 })},
		{desc: "directive names are whole words", lines: []string{"no-stores, privates, max-ages=5"}, want: ccAbsent},
		{desc: "unterminated quote swallows the rest", lines: []string{`no-cache="abc, max-age=5`},
			want: ccWith(func(c *Directives) { c.NoCache = true })},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if got := ParseCacheControl(tc.lines); got != tc.want {
				t.Errorf("ParseCacheControl(%q) = %+v, want %+v", tc.lines, got, tc.want)
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
			got, ok := ParseDeltaSeconds(tc.in)
			if ok != tc.wantOK || (ok && got != tc.want) {
				t.Errorf("ParseDeltaSeconds(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.wantOK)
			}
		})
	}
}
