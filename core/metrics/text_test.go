package metrics

import (
	"math"
	"testing"
)

func TestAppendFloat(t *testing.T) {
	tests := []struct {
		desc string
		f    float64
		want string
	}{
		{desc: "zero", f: 0, want: "0"},
		{desc: "one", f: 1, want: "1"},
		{desc: "negative whole", f: -42, want: "-42"},
		{desc: "a million without exponent", f: 1e6, want: "1000000"},
		{desc: "2^53", f: 1 << 53, want: "9007199254740992"},
		{desc: "whole below 1e21", f: 1e20, want: "100000000000000000000"},
		{desc: "1e21 with exponent", f: 1e21, want: "1e+21"},
		{desc: "fraction", f: 0.005, want: "0.005"},
		{desc: "fraction and whole", f: 2.35, want: "2.35"},
		{desc: "small", f: 1.5e-7, want: "1.5e-07"},
		{desc: "+Inf", f: math.Inf(1), want: "+Inf"},
		{desc: "-Inf", f: math.Inf(-1), want: "-Inf"},
		{desc: "NaN", f: math.NaN(), want: "NaN"},
		{desc: "largest float", f: math.MaxFloat64, want: "1.7976931348623157e+308"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			if got := string(appendFloat(nil, tt.f)); got != tt.want {
				t.Errorf("appendFloat(%v) = %q, want %q", tt.f, got, tt.want)
			}
		})
	}
}

func TestEscape(t *testing.T) {
	tests := []struct {
		desc      string
		in        string
		wantLabel string
		wantHelp  string
	}{
		{desc: "plain", in: "hit", wantLabel: "hit", wantHelp: "hit"},
		{desc: "empty", in: "", wantLabel: "", wantHelp: ""},
		{desc: "double quote", in: `say "hi"`, wantLabel: `say \"hi\"`, wantHelp: `say "hi"`},
		{desc: "backslash", in: `a\b`, wantLabel: `a\\b`, wantHelp: `a\\b`},
		{desc: "line feed", in: "a\nb", wantLabel: `a\nb`, wantHelp: `a\nb`},
		{desc: "escape already written", in: `\n`, wantLabel: `\\n`, wantHelp: `\\n`},
		{desc: "tab and carriage return stay", in: "a\tb\r", wantLabel: "a\tb\r", wantHelp: "a\tb\r"},
		{desc: "unicode", in: "héllo, 世界 🙂", wantLabel: "héllo, 世界 🙂", wantHelp: "héllo, 世界 🙂"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			if got := escapeLabelValue(tt.in); got != tt.wantLabel {
				t.Errorf("escapeLabelValue(%q) = %q, want %q", tt.in, got, tt.wantLabel)
			}
			if got := escapeHelp(tt.in); got != tt.wantHelp {
				t.Errorf("escapeHelp(%q) = %q, want %q", tt.in, got, tt.wantHelp)
			}
		})
	}
}

func TestEscapeLabelValueInvalidUTF8(t *testing.T) {
	if got, want := escapeLabelValue("a\xffb\xfe\xfd"), "a\uFFFDb\uFFFD"; got != want {
		t.Errorf("escapeLabelValue = %q, want %q", got, want)
	}
}
