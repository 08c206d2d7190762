package events

import (
	"strings"
	"time"
	"unicode/utf8"
)

// timeLayout is RFC 3339 with milliseconds; times are written in UTC, so the zone is "Z".
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// controls are the ASCII control characters, C0 and DEL.
const controls = "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f" +
	"\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f\x7f"

// notUTF8 is a byte that is not UTF-8. In a set of strings.ContainsAny it matches every byte
// of the string searched that is not UTF-8 (and U+FFFD itself): strings.IndexRune, which
// IndexAny calls for each rune, finds utf8.RuneError at an invalid sequence of the set. So
// one call into compiled code decides whether a value is written as is, where a second
// (utf8.ValidString) would cost every field another call and its allocations under Yaegi.
const notUTF8 = "\xff"

// logfmtSpecial holds what makes a logfmt value quoted and a key rewritten: a space, '=', '"',
// a control character, bytes that are not UTF-8.
const logfmtSpecial = " =\"" + controls + notUTF8

// jsonSpecial holds what a JSON string escapes (RFC 8259 section 7), and bytes that are not
// UTF-8.
const jsonSpecial = "\"\\" + controls + notUTF8

const hexDigits = "0123456789abcdef"

// logfmtLine writes a line in logfmt. level is one of the Level constants, which need no
// quoting; mw is the line's middleware field, written once by New. A field whose key and
// value need no change is copied in the loop itself; the others go through logfmtField.
// Under Yaegi every interpreted call costs a frame, and the common field then costs two
// calls into compiled code and none of its own.
func logfmtLine(t time.Time, level, name, mw string, fields []Field) string {
	b := make([]byte, 0, 176)
	b = append(b, "time="...)
	b = t.UTC().AppendFormat(b, timeLayout)
	b = append(b, " level="...)
	b = append(b, level...)
	b = append(b, " event="...)
	b = logfmtValue(b, name)
	b = append(b, mw...)
	for _, f := range fields {
		// A raw value (a number or a boolean) is never empty and holds no special byte.
		if f.key == "" || f.val == "" || strings.ContainsAny(f.key, logfmtSpecial) || strings.ContainsAny(f.val, logfmtSpecial) {
			b = logfmtField(b, f)
			continue
		}
		b = append(b, ' ')
		b = append(b, f.key...)
		b = append(b, '=')
		b = append(b, f.val...)
	}
	return string(b)
}

// logfmtField appends a field whose key or value needs rewriting or quoting.
func logfmtField(b []byte, f Field) []byte {
	b = append(b, ' ')
	b = append(b, cleanKey(f.key)...)
	b = append(b, '=')
	return logfmtValue(b, f.val)
}

// jsonLine writes a line as a JSON object. level is one of the Level constants, which need no
// escaping; mw is the line's middleware member, written once by New. As in logfmtLine, a
// field that needs no escaping is copied in the loop.
func jsonLine(t time.Time, level, name, mw string, fields []Field) string {
	b := make([]byte, 0, 208)
	b = append(b, `{"time":"`...)
	b = t.UTC().AppendFormat(b, timeLayout)
	b = append(b, `","level":"`...)
	b = append(b, level...)
	b = append(b, `","event":`...)
	b = jsonString(b, name)
	b = append(b, mw...)
	for _, f := range fields {
		// A raw value (a number or a boolean) holds no special byte.
		if strings.ContainsAny(f.key, jsonSpecial) || strings.ContainsAny(f.val, jsonSpecial) {
			b = jsonField(b, f)
			continue
		}
		b = append(b, `,"`...)
		b = append(b, f.key...)
		if f.raw {
			b = append(b, `":`...)
			b = append(b, f.val...)
		} else {
			b = append(b, `":"`...)
			b = append(b, f.val...)
			b = append(b, '"')
		}
	}
	b = append(b, '}')
	return string(b)
}

// jsonField appends a field whose key or value needs escaping.
func jsonField(b []byte, f Field) []byte {
	b = append(b, ',')
	b = quote(b, f.key)
	b = append(b, ':')
	if f.raw {
		return append(b, f.val...)
	}
	return quote(b, f.val)
}

// logfmtValue appends s bare, or quoted when it is empty or holds a space, '=', '"', a control
// character or bytes that are not UTF-8.
func logfmtValue(b []byte, s string) []byte {
	if s != "" && !strings.ContainsAny(s, logfmtSpecial) {
		return append(b, s...)
	}
	return quote(b, s)
}

// cleanKey returns k with each byte a logfmt key cannot hold (a space, '=', '"', a control
// character, bytes that are not UTF-8) replaced by '_', and an empty key as "_". Keys are the
// engine's constants; this keeps a wrong one from breaking the line. A good key comes back
// unchanged.
func cleanKey(k string) string {
	if k == "" {
		return "_"
	}
	c := []byte(strings.ToValidUTF8(k, "_"))
	for i := 0; i < len(c); i++ {
		if c[i] <= ' ' || c[i] == '=' || c[i] == '"' || c[i] == 0x7f {
			c[i] = '_'
		}
	}
	return string(c)
}

// jsonString appends s as a JSON string.
func jsonString(b []byte, s string) []byte {
	if strings.ContainsAny(s, jsonSpecial) {
		return quote(b, s)
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// quote appends s within double quotes, escaped as a JSON string (RFC 8259 section 7), which
// is also how a quoted logfmt value is escaped: '"' and '\' with a backslash, \n, \r and \t,
// the other control characters (DEL too) as \u00XX, and each byte that is not UTF-8 as
// \ufffd, as encoding/json writes it. Only values that need it come here: the loop runs
// interpreted, byte by byte.
func quote(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	i := 0
	for i < len(s) {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, s[start:i]...)
				b = append(b, `\ufffd`...)
				i++
				start = i
				continue
			}
			i += size
			continue
		}
		if c >= ' ' && c != '"' && c != '\\' && c != 0x7f {
			i++
			continue
		}
		b = append(b, s[start:i]...)
		b = escapeByte(b, c)
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

func escapeByte(b []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(b, '\\', c)
	case '\n':
		return append(b, '\\', 'n')
	case '\r':
		return append(b, '\\', 'r')
	case '\t':
		return append(b, '\\', 't')
	}
	return append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
}
