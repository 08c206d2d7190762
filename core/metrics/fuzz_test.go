package metrics

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// escapeSeeds are the fuzz test's seeds; TestEscapeRoundTrip runs them too, since yaegi test
// loads fuzz seeds without running them.
var escapeSeeds = []string{"", "hit", `a"b`, `a\b`, "a\nb", `\n`, `\"`, "\\\n\"", "ü世🙂", "a\xffb", "\r\t\x00"}

func FuzzEscapeLabelValue(f *testing.F) {
	for _, s := range escapeSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		checkRoundTrip(t, v)
	})
}

func TestEscapeRoundTrip(t *testing.T) {
	for _, s := range escapeSeeds {
		checkRoundTrip(t, s)
	}
}

// checkRoundTrip checks that the escaped v has no line feed and no unescaped double quote,
// so it stays within its quotes on its line, and that unescaping it gives v back (with U+FFFD
// for bytes that are not UTF-8).
func checkRoundTrip(t *testing.T, v string) {
	t.Helper()
	esc := escapeLabelValue(v)
	if strings.Contains(esc, "\n") {
		t.Errorf("escapeLabelValue(%q) = %q holds a line feed", v, esc)
	}
	got, err := unescapeLabelValue(esc)
	if err != nil {
		t.Fatalf("escapeLabelValue(%q) = %q: %v", v, esc, err)
	}
	want := strings.ToValidUTF8(v, "\uFFFD")
	if got != want {
		t.Errorf("unescape(escape(%q)) = %q, want %q", v, got, want)
	}
	if !utf8.ValidString(esc) {
		t.Errorf("escapeLabelValue(%q) = %q is not UTF-8", v, esc)
	}
}

// unescapeLabelValue reads a label value as a Prometheus parser does, refusing a bare double
// quote (which would end the value) and any escape but \\, \" and \n.
func unescapeLabelValue(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '"' {
			return "", fmt.Errorf("bare double quote at %d", i)
		}
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i == len(s) {
			return "", fmt.Errorf("backslash at the end")
		}
		switch s[i] {
		case '\\':
			b.WriteByte('\\')
		case '"':
			b.WriteByte('"')
		case 'n':
			b.WriteByte('\n')
		default:
			return "", fmt.Errorf("unknown escape \\%c at %d", s[i], i)
		}
	}
	return b.String(), nil
}
