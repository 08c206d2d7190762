package setting

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestMatchPattern(t *testing.T) {
	tests := []struct {
		desc, pattern, path string
		want                bool
	}{
		{desc: "a prefix: itself", pattern: "/static", path: "/static", want: true},
		{desc: "a prefix: its directory", pattern: "/static", path: "/static/", want: true},
		{desc: "a prefix: below it", pattern: "/static", path: "/static/css/a.css", want: true},
		{desc: "a prefix: a longer segment", pattern: "/static", path: "/staticfiles/a", want: false},
		{desc: "trailing slash: the bare path", pattern: "/static/", path: "/static", want: true},
		{desc: "trailing slash: below it", pattern: "/static/", path: "/static/app.js", want: true},
		{desc: "trailing slash: a longer segment", pattern: "/static/", path: "/statics", want: false},
		{desc: "slash star: the bare path", pattern: "/static/*", path: "/static", want: true},
		{desc: "slash star: its directory", pattern: "/static/*", path: "/static/", want: true},
		{desc: "slash star: deep below it", pattern: "/static/*", path: "/static/a/b/c", want: true},
		{desc: "slash star: a longer segment", pattern: "/static/*", path: "/static2/a", want: false},
		{desc: "a prefix: a doubled slash below it", pattern: "/static/", path: "/static//a", want: true},
		{desc: "the root: every path", pattern: "/", path: "/anything/at/all", want: true},
		{desc: "the root: itself", pattern: "/", path: "/", want: true},
		{desc: "the root: the empty path", pattern: "/", path: "", want: true},
		{desc: "slash star: every path", pattern: "/*", path: "/a/b", want: true},
		{desc: "a prefix: the empty path", pattern: "/static/", path: "", want: false},
		{desc: "a prefix: the root", pattern: "/static/", path: "/", want: false},
		{desc: "case counts", pattern: "/static/", path: "/Static/app.js", want: false},
		{desc: "an encoded slash is no boundary", pattern: "/static/", path: "/static%2Fapp.js", want: false},
		{desc: "an encoded letter is another path", pattern: "/static/", path: "/st%61tic/app.js", want: false},
		{desc: "an encoded pattern matches itself", pattern: "/caf%C3%A9/", path: "/caf%C3%A9/menu", want: true},
		{desc: "suffix: at the root", pattern: "*.js", path: "/app.js", want: true},
		{desc: "suffix: deep", pattern: "*.js", path: "/a/b/app.js", want: true},
		{desc: "suffix: the bare suffix is a name", pattern: "*.js", path: "/.js", want: true},
		{desc: "suffix: a dot in a directory", pattern: "*.js", path: "/a.js/b", want: false},
		{desc: "suffix: a directory ending in it", pattern: "*.js", path: "/a.js/", want: false},
		{desc: "suffix: another extension", pattern: "*.js", path: "/app.json", want: false},
		{desc: "suffix: case counts", pattern: "*.js", path: "/APP.JS", want: false},
		{desc: "suffix: the empty path", pattern: "*.js", path: "", want: false},
		{desc: "suffix: the root", pattern: "*.js", path: "/", want: false},
		{desc: "suffix: longer", pattern: "*.min.js", path: "/a/app.min.js", want: true},
		{desc: "glob: one segment below", pattern: "/blog/*.html", path: "/blog/post.html", want: true},
		{desc: "glob: the star matches nothing", pattern: "/blog/*.html", path: "/blog/.html", want: true},
		{desc: "glob: two segments below", pattern: "/blog/*.html", path: "/blog/2024/post.html", want: false},
		{desc: "glob: another directory", pattern: "/blog/*.html", path: "/news/post.html", want: false},
		{desc: "glob: the directory alone", pattern: "/blog/*.html", path: "/blog/", want: false},
		{desc: "glob: another extension", pattern: "/blog/*.html", path: "/blog/post.htm", want: false},
		{desc: "glob: a lead and a tail", pattern: "/img/logo-*.png", path: "/img/logo-dark.png", want: true},
		{desc: "glob: lead and tail overlap", pattern: "/img/ab*ba", path: "/img/aba", want: false},
		{desc: "glob: at the root", pattern: "/a*", path: "/abc", want: true},
		{desc: "glob: at the root, deeper", pattern: "/a*", path: "/abc/d", want: false},
		{desc: "glob: a trailing star", pattern: "/blog/post*", path: "/blog/posts", want: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			p, err := ParsePattern(tc.pattern)
			if err != nil {
				t.Fatalf("ParsePattern(%q): %v", tc.pattern, err)
			}
			if got := MatchPattern(tc.path, []Pattern{p}) == 0; got != tc.want {
				t.Errorf("MatchPattern(%q, %q) = %v, want %v", tc.path, tc.pattern, got, tc.want)
			}
		})
	}
}

func TestMatchPatternFirst(t *testing.T) {
	patterns := mustPatterns(t, "/static/*", "*.js", "/")
	tests := []struct {
		desc, path string
		want       int
	}{
		{desc: "the first that matches", path: "/static/app.js", want: 0},
		{desc: "a later one", path: "/lib/app.js", want: 1},
		{desc: "the root last", path: "/index.html", want: 2},
	}
	for _, tc := range tests {
		if got := MatchPattern(tc.path, patterns); got != tc.want {
			t.Errorf("%s: MatchPattern(%q) = %d, want %d", tc.desc, tc.path, got, tc.want)
		}
	}
	if got := MatchPattern("/x", nil); got != -1 {
		t.Errorf("MatchPattern(%q, nil) = %d, want -1", "/x", got)
	}
}

func TestParsePatternRefuses(t *testing.T) {
	tests := []struct{ desc, pattern string }{
		{desc: "empty", pattern: ""},
		{desc: "relative", pattern: "static/"},
		{desc: "a star alone", pattern: "*"},
		{desc: "two stars", pattern: "/a/*/*"},
		{desc: "a double star", pattern: "/a/**"},
		{desc: "a star in a directory", pattern: "/a/*/b"},
		{desc: "a star before a slash", pattern: "/a/*/"},
		{desc: "a suffix with a slash", pattern: "*/b.js"},
		{desc: "a query", pattern: "/a?b=1"},
		{desc: "a fragment", pattern: "/a#b"},
		{desc: "a space", pattern: "/a b"},
		{desc: "a comma", pattern: "/a,/b"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if _, err := ParsePattern(tc.pattern); !errors.Is(err, ErrPattern) {
				t.Errorf("ParsePattern(%q) = %v, want ErrPattern", tc.pattern, err)
			}
		})
	}
}

func TestMatchPatternAllocatesNothing(t *testing.T) {
	if interpreted() {
		t.Skip("allocation counts measure the interpreter under Yaegi")
	}
	patterns := mustPatterns(t, "/static/", "*.js", "/blog/*.html")
	if n := testing.AllocsPerRun(100, func() { MatchPattern("/blog/post.html", patterns) }); n != 0 {
		t.Errorf("MatchPattern allocates %v times a call, want 0", n)
	}
}

func TestParseDays(t *testing.T) {
	tests := []struct {
		desc, in string
		want     time.Duration
		bad      bool
	}{
		{desc: "a Go duration", in: "1h30m", want: 90 * time.Minute},
		{desc: "seconds", in: "5s", want: 5 * time.Second},
		{desc: "a day", in: "1d", want: 24 * time.Hour},
		{desc: "days", in: "7d", want: 7 * 24 * time.Hour},
		{desc: "half a day", in: "0.5d", want: 12 * time.Hour},
		{desc: "days and hours", in: "1d12h", want: 36 * time.Hour},
		{desc: "zero days", in: "0d", want: 0},
		{desc: "no number", in: "d", bad: true},
		{desc: "a negative day", in: "-1d", bad: true},
		{desc: "a signed day", in: "+1d", bad: true},
		{desc: "a negative duration", in: "-1h", bad: true},
		{desc: "a negative rest", in: "1d-1h", bad: true},
		{desc: "a signed rest", in: "1d+1h", bad: true},
		{desc: "days after hours", in: "1h1d", bad: true},
		{desc: "days twice", in: "1d1d", bad: true},
		{desc: "an exponent", in: "1e3d", bad: true},
		{desc: "too many days", in: "1000000d", bad: true},
		{desc: "past the range", in: "100000d2562047h", bad: true},
		{desc: "a word", in: "day", bad: true},
		{desc: "a bare number", in: "30", bad: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := ParseDays(tc.in)
			if tc.bad {
				if !errors.Is(err, ErrDuration) {
					t.Errorf("ParseDays(%q) = %v, %v, want ErrDuration", tc.in, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("ParseDays(%q) = %v, %v, want %v", tc.in, got, err, tc.want)
			}
		})
	}
}

// The parser reads what an operator writes: whatever the input, it must not panic, and a
// pattern it accepts must keep the properties below. The Fuzz function explores; the Test
// runs the same checks on the seeds, also under Yaegi, which skips Fuzz functions.
var patternSeeds = []string{
	"", "/", "/*", "*", "**", "*.js", "*/", "/static", "/static/", "/static/*", "/blog/*.html",
	"/a/*/b", "/a*b*", "//", "/a//*", "/%2F*", "/é/*.png", "*.", "/a?", "\x00", "/*x",
}

func FuzzParsePattern(f *testing.F) {
	for _, s := range patternSeeds {
		f.Add(s)
	}
	f.Fuzz(checkPatternProps)
}

func TestParsePatternSeeds(t *testing.T) {
	for _, s := range patternSeeds {
		checkPatternProps(t, s)
	}
}

func checkPatternProps(t *testing.T, s string) {
	t.Helper()
	p, err := ParsePattern(s)
	if err != nil {
		if !errors.Is(err, ErrPattern) {
			t.Errorf("ParsePattern(%q) = %v, want ErrPattern", s, err)
		}
		return
	}
	if p.Text != s {
		t.Errorf("ParsePattern(%q).Text = %q", s, p.Text)
	}
	if strings.Count(s, "*") > 1 || strings.ContainsAny(s, " ?#,") {
		t.Errorf("ParsePattern(%q) accepted a pattern outside the grammar", s)
	}
	ps := []Pattern{p}
	// A pattern without a star matches itself; one with a star matches it with the star
	// replaced by a name, or with nothing.
	for _, fill := range []string{"", "x", "name"} {
		path := strings.Replace(s, "*", fill, 1)
		if path[0] != '/' {
			path = "/dir/" + path
		}
		if MatchPattern(path, ps) != 0 {
			t.Errorf("pattern %q does not match %q", s, path)
		}
	}
	// Whatever the path, no panic, and the same answer twice.
	for _, path := range []string{"", "/", s, "/" + s, s + "/x", "/a.b/c"} {
		if MatchPattern(path, ps) != MatchPattern(path, ps) {
			t.Errorf("pattern %q matches %q inconsistently", s, path)
		}
	}
}

func mustPatterns(t *testing.T, list ...string) []Pattern {
	t.Helper()
	var out []Pattern
	for _, s := range list {
		p, err := ParsePattern(s)
		if err != nil {
			t.Fatalf("ParsePattern(%q): %v", s, err)
		}
		out = append(out, p)
	}
	return out
}
