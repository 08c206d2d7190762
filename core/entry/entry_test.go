package entry

import (
	"fmt"
	"testing"
)

func TestEntrySize(t *testing.T) {
	e := &Entry{Body: make([]byte, 10)}
	if got := e.Size(); got < 10 {
		t.Errorf("Size() = %d, want at least 10", got)
	}
}

func TestValidTag(t *testing.T) {
	tests := []struct {
		desc string
		tag  string
		want bool
	}{
		{desc: "word", tag: "product-1", want: true},
		{desc: "inner space", tag: "a b", want: true},
		{desc: "UTF-8", tag: "caf\xc3\xa9", want: true},
		{desc: "any byte", tag: "\xff", want: true},
		{desc: "longest", tag: fmt.Sprintf("%0*d", MaxTagLen, 1), want: true},
		{desc: "too long", tag: fmt.Sprintf("%0*d", MaxTagLen+1, 1)},
		{desc: "empty", tag: ""},
		{desc: "leading space", tag: " a"},
		{desc: "trailing space", tag: "a "},
		{desc: "tab", tag: "a\tb"},
		{desc: "NUL", tag: "a\x00"},
		{desc: "DEL", tag: "\x7f"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if got := ValidTag(tc.tag); got != tc.want {
				t.Errorf("ValidTag(%q) = %v, want %v", tc.tag, got, tc.want)
			}
		})
	}
}
