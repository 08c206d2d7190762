package events

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzLine writes arbitrary strings as the middleware's name, a field's key and field values,
// and checks that each logfmt line reads back to the same values with parseLogfmt (the key
// as cleanKey writes it) and each JSON line is valid JSON holding the same keys, in order,
// and values.
func FuzzLine(f *testing.F) {
	for _, seed := range [][3]string{
		{"shop", "scope", "api.example"},
		{"", "", ""},
		{"my shop", "a key", `say "hi" = \o/`},
		{"\n", "k=v", "a\r\nb\tc\x00\x7f"},
		{"\xff", "\xfe\"", "caf\xc3\xa9 \xe2\x9c\x93 \xed\xa0\x80 \xef\xbf\xbd"},
		{"=", "\\", `\u0041`},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, middleware, key, value string) {
		fields := []Field{Str("value", value), Int("n", 7), Str(key, value), Dur("d", time.Second)}
		want := []kv{
			{"time", "2025-03-01T12:00:00.250Z"},
			{"level", LevelError},
			{"event", ConfigRejected},
			{"middleware", utf8Fixed(middleware)},
			{"value", utf8Fixed(value)},
			{"n", "7"},
			{cleanKey(key), utf8Fixed(value)},
			{"d", "1s"},
		}

		line := emitOne(t, FormatLogfmt, middleware, fields)
		if strings.ContainsAny(line, "\n\r") {
			t.Fatalf("logfmt line %q holds a line break", line)
		}
		got, err := parseLogfmt(line)
		if err != nil {
			t.Fatalf("logfmt line %q: %v", line, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("logfmt line %q read back as %q, want %q", line, got, want)
		}

		want[6].key = utf8Fixed(key)
		line = emitOne(t, FormatJSON, middleware, fields)
		if strings.ContainsAny(line, "\n\r") {
			t.Fatalf("JSON line %q holds a line break", line)
		}
		if !json.Valid([]byte(line)) {
			t.Fatalf("JSON line %q is not valid JSON", line)
		}
		got, err = readJSON(line)
		if err != nil {
			t.Fatalf("JSON line %q: %v", line, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("JSON line %q read back as %q, want %q", line, got, want)
		}
	})
}

// emitOne returns the ConfigRejected line a Log of format and middleware writes with fields.
func emitOne(t *testing.T, format, middleware string, fields []Field) string {
	t.Helper()
	var line string
	l, err := New(Settings{Format: format, Middleware: middleware, Sink: func(s string) { line = s },
		Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatalf("New(%q) error = %v", format, err)
	}
	l.Emit(ConfigRejected, fields...)
	return line
}

// utf8Fixed replaces each byte that is not UTF-8 with U+FFFD, as the writers and
// encoding/json do.
func utf8Fixed(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		b.WriteRune(r)
		i += size
	}
	return b.String()
}

// readJSON reads a line's object as keys and values in order, numbers as written.
func readJSON(line string) ([]kv, error) {
	d := json.NewDecoder(bytes.NewReader([]byte(line)))
	d.UseNumber()
	if _, err := d.Token(); err != nil {
		return nil, err
	}
	var out []kv
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return nil, err
		}
		v, err := d.Token()
		if err != nil {
			return nil, err
		}
		var val string
		switch v := v.(type) {
		case string:
			val = v
		case json.Number:
			val = v.String()
		}
		out = append(out, kv{k.(string), val})
	}
	return out, nil
}
