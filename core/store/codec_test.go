package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"net/http"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/entry"
)

var codecBorn = time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)

func codecEntries() []struct {
	desc string
	e    *Entry
} {
	return []struct {
		desc string
		e    *Entry
	}{
		{desc: "full answer", e: fullAnswer()},
		{desc: "HEAD answer keeps a nil body", e: &Entry{Status: 204, Header: http.Header{"Content-Length": {"0"}}, Born: codecBorn, FreshUntil: codecBorn, KeepUntil: codecBorn.Add(time.Second)}},
		{desc: "empty body stays empty, not nil", e: &Entry{Status: 200, Body: []byte{}, Born: codecBorn, FreshUntil: codecBorn, KeepUntil: codecBorn}},
		{desc: "variant index born after its freshness ends", e: &Entry{VaryIndex: true, Vary: []string{"Accept"}, Born: codecBorn.Add(time.Millisecond), FreshUntil: codecBorn, KeepUntil: codecBorn}},
		{desc: "hit-for-pass mark", e: &Entry{Pass: true, Born: codecBorn, FreshUntil: codecBorn, KeepUntil: codecBorn.Add(30 * time.Second)}},
		{desc: "stale window ended before freshness", e: &Entry{Status: 301, Born: codecBorn, FreshUntil: codecBorn, StaleIfErrorUntil: codecBorn.Add(-time.Hour), KeepUntil: codecBorn}},
		{desc: "status 599", e: &Entry{Status: 599, Born: codecBorn, FreshUntil: codecBorn, KeepUntil: codecBorn}},
		{desc: "status 200", e: &Entry{Status: 200, Born: codecBorn, FreshUntil: codecBorn, KeepUntil: codecBorn}},
		{desc: "Unix epoch is not the zero time", e: &Entry{Status: 200, Born: time.Unix(0, 0), FreshUntil: time.Unix(0, 0), KeepUntil: time.Unix(0, 0)}},
		{desc: "large body", e: &Entry{Status: 200, Body: bytes.Repeat([]byte("0123456789abcdef"), 1<<14), Born: codecBorn, FreshUntil: codecBorn, KeepUntil: codecBorn}},
		{desc: "tagged answer", e: &Entry{
			Status:     200,
			Header:     http.Header{"Surrogate-Key": {"product-1 \tproducts"}, "Content-Length": {"2"}},
			Body:       []byte("hi"),
			Born:       codecBorn,
			FreshUntil: codecBorn.Add(time.Minute),
			KeepUntil:  codecBorn.Add(time.Hour),
			Vary:       []string{"Accept"},
			Tags:       []string{"product-1", "products", "caf\xc3\xa9", "a b", "\xff"},
		}},
		{desc: "most and longest tags", e: &Entry{Status: 200, Born: codecBorn, FreshUntil: codecBorn, KeepUntil: codecBorn, Tags: manyTags(entry.MaxTags, entry.MaxTagLen)}},
		{desc: "full answer in layout 3", e: fullAnswer3()},
		{desc: "one field of one empty value", e: &Entry{Status: 200, Header: http.Header{"X": {""}}, Born: codecBorn, FreshUntil: codecBorn, KeepUntil: codecBorn}},
		{desc: "non-canonical content-length", e: &Entry{Status: 200, Header: http.Header{"content-length": {"0"}}, Body: []byte{}, Born: codecBorn, FreshUntil: codecBorn, KeepUntil: codecBorn}},
	}
}

// fullAnswer has every part an answer may have, and a field without values, which layout 3
// cannot hold.
func fullAnswer() *Entry {
	return &Entry{
		Status: 200,
		Header: http.Header{
			"Content-Type":   {"text/html; charset=utf-8"},
			"Cache-Control":  {"max-age=60", "stale-while-revalidate=30"},
			"Content-Length": {"25"},
			"Set-Cookie":     {},
			"X-Empty":        {""},
			"X-Tab":          {"a\tb"},
		},
		Body:                      []byte("<html>\x00\xff binary \r\n</html>"),
		Born:                      codecBorn,
		FreshUntil:                codecBorn.Add(time.Minute),
		StaleWhileRevalidateUntil: codecBorn.Add(90 * time.Second),
		StaleIfErrorUntil:         codecBorn.Add(time.Hour),
		KeepUntil:                 codecBorn.Add(time.Hour),
		Vary:                      []string{"Accept-Encoding", "Accept-Language"},
	}
}

// fullAnswer3 is fullAnswer as layout 3 holds it: no field without values, with tags and a
// field whose name ends in Content-Length.
func fullAnswer3() *Entry {
	e := fullAnswer()
	delete(e.Header, "Set-Cookie")
	e.Header["X-Content-Length"] = []string{"7"}
	e.Tags = []string{"product-1", "caf\xc3\xa9"}
	return e
}

// layoutOf is the layout Encode writes e in: layout 3, but for an entry it cannot hold
// (a field without values: the "full answer" of codecEntries).
func layoutOf(e *Entry) byte {
	for _, vs := range e.Header {
		if len(vs) == 0 {
			if len(e.Tags) > 0 {
				return 2
			}
			return 1
		}
	}
	return EncodingVersion
}

// sortedNames are e's header field names, sorted, as Encode takes them.
func sortedNames(e *Entry) []string {
	names := make([]string, 0, len(e.Header))
	for k := range e.Header {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// manyTags returns n distinct tags of size bytes each.
func manyTags(n, size int) []string {
	tags := make([]string, n)
	for i := range tags {
		tags[i] = fmt.Sprintf("%0*d", size, i)
	}
	return tags
}

// v1FullAnswer is codecEntries' "full answer" as Encode wrote it in layout 1, before entries
// had tags: a Weir that reads tags must read it still, as it must read what the previous
// version keeps writing during a rolling upgrade.
const v1FullAnswer = "" +
	"\x01\x02\x1f\x90\x03\xaa\xb4\x92\xb3\xb7\xf6\xda\x98\x31\xaa\x94" +
	"\xcd\xb7\xf6\xf9\xda\x98\x31\xaa\xc4\xea\xf9\xd5\xfb\xda\x98\x31" +
	"\xaa\xb4\xd7\xbe\xfd\xc7\xdc\x98\x31\xaa\xb4\xd7\xbe\xfd\xc7\xdc" +
	"\x98\x31\x06\x0d\x43\x61\x63\x68\x65\x2d\x43\x6f\x6e\x74\x72\x6f" +
	"\x6c\x02\x0a\x6d\x61\x78\x2d\x61\x67\x65\x3d\x36\x30\x19\x73\x74" +
	"\x61\x6c\x65\x2d\x77\x68\x69\x6c\x65\x2d\x72\x65\x76\x61\x6c\x69" +
	"\x64\x61\x74\x65\x3d\x33\x30\x0e\x43\x6f\x6e\x74\x65\x6e\x74\x2d" +
	"\x4c\x65\x6e\x67\x74\x68\x01\x02\x32\x35\x0c\x43\x6f\x6e\x74\x65" +
	"\x6e\x74\x2d\x54\x79\x70\x65\x01\x18\x74\x65\x78\x74\x2f\x68\x74" +
	"\x6d\x6c\x3b\x20\x63\x68\x61\x72\x73\x65\x74\x3d\x75\x74\x66\x2d" +
	"\x38\x0a\x53\x65\x74\x2d\x43\x6f\x6f\x6b\x69\x65\x00\x07\x58\x2d" +
	"\x45\x6d\x70\x74\x79\x01\x00\x05\x58\x2d\x54\x61\x62\x01\x03\x61" +
	"\x09\x62\x02\x0f\x41\x63\x63\x65\x70\x74\x2d\x45\x6e\x63\x6f\x64" +
	"\x69\x6e\x67\x0f\x41\x63\x63\x65\x70\x74\x2d\x4c\x61\x6e\x67\x75" +
	"\x61\x67\x65\x19\x3c\x68\x74\x6d\x6c\x3e\x00\xff\x20\x62\x69\x6e" +
	"\x61\x72\x79\x20\x0d\x0a\x3c\x2f\x68\x74\x6d\x6c\x3e"

func TestDecodeVersion1(t *testing.T) {
	got, err := Decode([]byte(v1FullAnswer))
	if err != nil {
		t.Fatalf("Decode(layout 1 bytes): %v", err)
	}
	if d := entryDiff(got, codecEntries()[0].e); d != "" {
		t.Errorf("Decode(layout 1 bytes): %s", d)
	}
	if got.Tags != nil {
		t.Errorf("Tags = %q, want nil", got.Tags)
	}
	// Layout 3 cannot hold its Set-Cookie field without values: Encode keeps layout 1.
	if again := Encode(got); string(again) != v1FullAnswer {
		t.Errorf("Encode of the entry differs from layout 1's bytes")
	}
	if again := encodeFields(got, sortedNames(got)); string(again) != v1FullAnswer {
		t.Errorf("encodeFields of the untagged entry differs from layout 1's bytes")
	}
}

// entryDiff describes how got differs from want, or returns "" when they hold the same answer.
func entryDiff(got, want *Entry) string {
	if got.Status != want.Status || got.VaryIndex != want.VaryIndex {
		return fmt.Sprintf("status/varyIndex = %d/%v, want %d/%v", got.Status, got.VaryIndex, want.Status, want.VaryIndex)
	}
	times := []struct {
		name      string
		got, want time.Time
	}{
		{"Born", got.Born, want.Born},
		{"FreshUntil", got.FreshUntil, want.FreshUntil},
		{"StaleWhileRevalidateUntil", got.StaleWhileRevalidateUntil, want.StaleWhileRevalidateUntil},
		{"StaleIfErrorUntil", got.StaleIfErrorUntil, want.StaleIfErrorUntil},
		{"KeepUntil", got.KeepUntil, want.KeepUntil},
	}
	for _, tm := range times {
		if !tm.got.Equal(tm.want) || tm.got.IsZero() != tm.want.IsZero() {
			return fmt.Sprintf("%s = %v, want %v", tm.name, tm.got, tm.want)
		}
	}
	if (len(got.Header) != 0 || len(want.Header) != 0) && !reflect.DeepEqual(got.Header, want.Header) {
		return fmt.Sprintf("Header = %q, want %q", got.Header, want.Header)
	}
	if (len(got.Vary) != 0 || len(want.Vary) != 0) && !reflect.DeepEqual(got.Vary, want.Vary) {
		return fmt.Sprintf("Vary = %q, want %q", got.Vary, want.Vary)
	}
	if (len(got.Tags) != 0 || len(want.Tags) != 0) && !reflect.DeepEqual(got.Tags, want.Tags) {
		return fmt.Sprintf("Tags = %q, want %q", got.Tags, want.Tags)
	}
	if (got.Body == nil) != (want.Body == nil) || !bytes.Equal(got.Body, want.Body) {
		return fmt.Sprintf("Body = %.40q (nil %v), want %.40q (nil %v)", got.Body, got.Body == nil, want.Body, want.Body == nil)
	}
	return ""
}

func TestCodecRoundTrip(t *testing.T) {
	for _, tc := range codecEntries() {
		t.Run(tc.desc, func(t *testing.T) {
			b := Encode(tc.e)
			want := layoutOf(tc.e)
			if b[0] != want {
				t.Fatalf("first byte = %d, want version %d", b[0], want)
			}
			got, err := Decode(b)
			if err != nil {
				t.Fatalf("Decode(Encode(e)) error: %v", err)
			}
			if d := entryDiff(got, tc.e); d != "" {
				t.Errorf("round trip: %s", d)
			}
			if again := Encode(got); !bytes.Equal(again, b) {
				t.Errorf("Encode(Decode(b)) differs from b")
			}
		})
	}
}

func TestEncodeIsDeterministic(t *testing.T) {
	e := codecEntries()[0].e
	first := Encode(e)
	for i := 0; i < 20; i++ {
		if got := Encode(e); !bytes.Equal(got, first) {
			t.Fatalf("encoding %d differs from the first", i)
		}
	}
}

func TestEncodeLayout(t *testing.T) {
	e := &Entry{
		Status:    200,
		Header:    http.Header{"A": {"b"}},
		Body:      []byte("hi"),
		Born:      time.Unix(0, 1),
		KeepUntil: time.Unix(0, 2),
		Vary:      []string{"V"},
	}
	want := []byte{
		1,          // version
		2,          // flags: body present
		1 | 16,     // times: Born, KeepUntil
		0x90, 0x03, // varint 200
		2,                    // varint 1 (Born)
		4,                    // varint 2 (KeepUntil)
		1, 1, 'A', 1, 1, 'b', // one field "A": one value "b"
		1, 1, 'V', // Vary: "V"
		2, 'h', 'i', // body
	}
	if got := encodeFields(e, []string{"A"}); !bytes.Equal(got, want) {
		t.Errorf("encodeFields = %v, want %v", got, want)
	}

	e.Tags = []string{"t", "uv"}
	want = []byte{
		2, 2, 1 | 16, 0x90, 0x03, 2, 4,
		1, 1, 'A', 1, 1, 'b',
		1, 1, 'V',
		2, 1, 't', 2, 'u', 'v', // tags: "t", "uv"
		2, 'h', 'i',
	}
	if got := encodeFields(e, []string{"A"}); !bytes.Equal(got, want) {
		t.Errorf("encodeFields with tags = %v, want %v", got, want)
	}

	e.Header["C"] = []string{"d", "e"}
	want = []byte{
		3,      // version
		2,      // flags: body present
		1 | 16, // times: Born, KeepUntil
		0, 200, // status
		0, 0, 0, 0, 0, 0, 0, 1, // Born
		0, 0, 0, 0, 0, 0, 0, 0, // FreshUntil, not present
		0, 0, 0, 0, 0, 0, 0, 0, // StaleWhileRevalidateUntil, not present
		0, 0, 0, 0, 0, 0, 0, 0, // StaleIfErrorUntil, not present
		0, 0, 0, 0, 0, 0, 0, 2, // KeepUntil
		0, 0, 0, 3, // names
		0, 0, 0, 5, // values
		0, 0, 0, 1, // Vary
		0, 0, 0, 4, // tags
		0, 0, 0, 2, // body
		'A', '\n', 'C',
		'b', '\n', 'd', 0, 'e',
		'V',
		't', '\n', 'u', 'v',
		'h', 'i',
	}
	if got := Encode(e); !bytes.Equal(got, want) {
		t.Errorf("Encode in layout 3 = %v, want %v", got, want)
	}
}

func TestEncodeClampsTimes(t *testing.T) {
	tests := []struct {
		desc string
		in   time.Time
		want time.Time
	}{
		{desc: "far future", in: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), want: maxNanoTime},
		{desc: "far past", in: time.Date(1, 1, 2, 0, 0, 0, 0, time.UTC), want: minNanoTime},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := Decode(Encode(&Entry{Status: 200, Born: tc.in, FreshUntil: tc.in, KeepUntil: tc.in}))
			if err != nil {
				t.Fatalf("Decode error: %v", err)
			}
			if !got.KeepUntil.Equal(tc.want) {
				t.Errorf("KeepUntil = %v, want %v", got.KeepUntil, tc.want)
			}
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	valid := Encode(&Entry{Status: 200, Header: http.Header{"A": {"b"}}, Body: []byte("hi"), Born: codecBorn, FreshUntil: codecBorn, KeepUntil: codecBorn})
	tests := []struct {
		desc string
		in   []byte
		want error
	}{
		{desc: "empty", in: nil, want: ErrMalformed},
		{desc: "unknown version", in: []byte{4, 0, 0, 0, 0, 0, 0}, want: ErrUnknownVersion},
		{desc: "layout 3 short header", in: valid[:blocksHead-1], want: ErrMalformed},
		{desc: "layout 3 truncated body", in: valid[:len(valid)-1], want: ErrMalformed},
		{desc: "layout 3 block beyond the input", in: withByte(valid, blocksLens+3, 9), want: ErrMalformed},
		{desc: "layout 3 block lengths short of the input", in: withByte(withByte(valid, blocksLens+3, 0), blocksLens+19, 4), want: ErrMalformed},
		{desc: "layout 3 values without names", in: withByte(withByte(valid, blocksLens+3, 0), blocksLens+7, 2), want: ErrMalformed},
		{desc: "layout 3 more values than names", in: encodeBlocks(&Entry{Status: 200, Header: http.Header{"A": {"b\nc"}}, Born: codecBorn, FreshUntil: codecBorn, KeepUntil: codecBorn}, []string{"A"}), want: ErrMalformed},
		{desc: "layout 3 duplicate header field", in: encodeBlocks(&Entry{Status: 200, Header: http.Header{"A": {"b"}}, Born: codecBorn, FreshUntil: codecBorn, KeepUntil: codecBorn}, []string{"A", "A"}), want: ErrMalformed},
		{desc: "layout 3 body bytes without body flag", in: withByte(valid, 1, 0), want: ErrMalformed},
		{desc: "layout 2 without its tag count", in: []byte{2, 0, 0, 0, 0, 0}, want: ErrMalformed},
		{desc: "tag count beyond input", in: []byte{2, 0, 0, 0, 0, 0, 5, 1, 'a', 0}, want: ErrMalformed},
		{desc: "tag beyond input", in: []byte{2, 0, 0, 0, 0, 0, 1, 9, 'a', 0}, want: ErrMalformed},
		{desc: "absurd tag count", in: []byte{2, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f, 0}, want: ErrMalformed},
		{desc: "version zero", in: []byte{0}, want: ErrUnknownVersion},
		{desc: "short header", in: []byte{1, 0}, want: ErrMalformed},
		{desc: "unknown flag", in: []byte{1, 8, 0, 0, 0, 0, 0}, want: ErrMalformed},
		{desc: "unknown time bit", in: []byte{1, 0, 32, 0, 0, 0, 0}, want: ErrMalformed},
		{desc: "trailing bytes", in: append(append([]byte{}, valid...), 0), want: ErrMalformed},
		{desc: "body bytes without body flag", in: []byte{1, 0, 0, 0, 0, 0, 1, 'x'}, want: ErrMalformed},
		{desc: "varint overflow", in: []byte{1, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, want: ErrMalformed},
		{desc: "absurd header count", in: []byte{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0}, want: ErrMalformed},
		{desc: "header count beyond input", in: []byte{1, 0, 0, 0, 10, 0, 0, 0, 0}, want: ErrMalformed},
		{desc: "value count beyond input", in: []byte{1, 0, 0, 0, 1, 1, 'A', 100, 0, 0}, want: ErrMalformed},
		{desc: "string beyond input", in: []byte{1, 0, 0, 0, 1, 0x80, 0x80, 0x80, 0x80, 0x08, 0, 0, 0}, want: ErrMalformed},
		{desc: "vary count beyond input", in: []byte{1, 0, 0, 0, 0, 50, 0}, want: ErrMalformed},
		{desc: "body length beyond input", in: []byte{1, 2, 0, 0, 0, 0, 9, 'x'}, want: ErrMalformed},
		{desc: "duplicate header field", in: []byte{1, 0, 0, 0, 2, 1, 'A', 0, 1, 'A', 0, 0, 0}, want: ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			e, err := Decode(tc.in)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Decode(%v) = %v, %v; want error %v", tc.in, e, err, tc.want)
			}
			if e != nil {
				t.Errorf("Decode returned an entry with its error: %+v", e)
			}
		})
	}
}

// withByte is a copy of b with b[i] set to c.
func withByte(b []byte, i int, c byte) []byte {
	b = append([]byte(nil), b...)
	b[i] = c
	return b
}

// An entry that follows the layout but holds what Weir never stores is invalid: a store's
// contents are untrusted input. Each case breaks one rule of a valid answer, mark or index.
func TestDecodeRejectsInvalid(t *testing.T) {
	answer := func(change func(e *Entry)) []byte {
		e := &Entry{
			Status:     200,
			Header:     http.Header{"Content-Type": {"text/plain"}, "Content-Length": {"2"}},
			Body:       []byte("hi"),
			Born:       codecBorn,
			FreshUntil: codecBorn.Add(time.Minute),
			KeepUntil:  codecBorn.Add(time.Hour),
			Vary:       []string{"Accept"},
		}
		change(e)
		return Encode(e)
	}
	mark := func(change func(e *Entry)) []byte {
		e := &Entry{Pass: true, Born: codecBorn, FreshUntil: codecBorn, KeepUntil: codecBorn.Add(time.Minute)}
		change(e)
		return Encode(e)
	}
	index := func(change func(e *Entry)) []byte {
		e := &Entry{VaryIndex: true, Vary: []string{"Accept"}, Born: codecBorn, FreshUntil: codecBorn, KeepUntil: codecBorn.Add(time.Minute)}
		change(e)
		return Encode(e)
	}
	// A mark whose times are past what Encode writes (it clamps them), written byte by byte:
	// version, flags, times present, status 0, three times, no fields, no Vary, no body.
	outOfRange := []byte{1, flagPass, timeBorn | timeFreshUntil | timeKeepUntil, 0}
	outOfRange = binary.AppendVarint(outOfRange, math.MaxInt64)
	outOfRange = binary.AppendVarint(outOfRange, math.MaxInt64)
	outOfRange = binary.AppendVarint(outOfRange, math.MaxInt64)
	outOfRange = append(outOfRange, 0, 0, 0)

	tests := []struct {
		desc string
		in   []byte
	}{
		{desc: "status 0", in: answer(func(e *Entry) { e.Status = 0 })},
		{desc: "status 1000", in: answer(func(e *Entry) { e.Status = 1000 })},
		{desc: "status 600", in: answer(func(e *Entry) { e.Status = 600 })},
		{desc: "interim status 100", in: answer(func(e *Entry) { e.Status = 100 })},
		{desc: "status 199", in: answer(func(e *Entry) { e.Status = 199 })},
		{desc: "negative status", in: answer(func(e *Entry) { e.Status = -200 })},
		{desc: "mark with a status", in: mark(func(e *Entry) { e.Status = 200 })},
		{desc: "mark with header fields", in: mark(func(e *Entry) { e.Header = http.Header{"A": {"b"}} })},
		{desc: "mark with a body", in: mark(func(e *Entry) { e.Body = []byte{} })},
		{desc: "mark with Vary", in: mark(func(e *Entry) { e.Vary = []string{"Accept"} })},
		{desc: "mark that is also an index", in: mark(func(e *Entry) { e.VaryIndex, e.Vary = true, []string{"Accept"} })},
		{desc: "index with a status", in: index(func(e *Entry) { e.Status = 200 })},
		{desc: "index without Vary", in: index(func(e *Entry) { e.Vary = nil })},
		{desc: "index with a body", in: index(func(e *Entry) { e.Body = []byte("x") })},
		{desc: "index with header fields", in: index(func(e *Entry) { e.Header = http.Header{"A": {"b"}} })},
		{desc: "empty header field name", in: answer(func(e *Entry) { e.Header[""] = []string{"x"} })},
		{desc: "header field name with a space", in: answer(func(e *Entry) { e.Header["X Y"] = []string{"x"} })},
		{desc: "header field name with a colon", in: answer(func(e *Entry) { e.Header["X:"] = []string{"x"} })},
		{desc: "header field name with CR LF", in: answer(func(e *Entry) { e.Header["X\r\nY"] = []string{"x"} })},
		{desc: "header field name not ASCII", in: answer(func(e *Entry) { e.Header["X-\xc3\xa9"] = []string{"x"} })},
		{desc: "header value with CR LF", in: answer(func(e *Entry) { e.Header["X"] = []string{"a\r\nSet-Cookie: b"} })},
		{desc: "header value with LF", in: answer(func(e *Entry) { e.Header["X"] = []string{"a\nb"} })},
		{desc: "header value with NUL", in: answer(func(e *Entry) { e.Header["X"] = []string{"ok", "a\x00b"} })},
		{desc: "Vary name not a token", in: answer(func(e *Entry) { e.Vary = []string{"Accept", "A B"} })},
		{desc: "empty Vary name", in: index(func(e *Entry) { e.Vary = []string{""} })},
		{desc: "Content-Length longer than the body", in: answer(func(e *Entry) { e.Header["Content-Length"] = []string{"3"} })},
		{desc: "Content-Length shorter than the body", in: answer(func(e *Entry) { e.Header["Content-Length"] = []string{"1"} })},
		{desc: "Content-Length not decimal", in: answer(func(e *Entry) { e.Header["Content-Length"] = []string{"+2"} })},
		{desc: "Content-Length with a leading zero", in: answer(func(e *Entry) { e.Header["Content-Length"] = []string{"02"} })},
		{desc: "two Content-Length values", in: answer(func(e *Entry) { e.Header["Content-Length"] = []string{"2", "2"} })},
		{desc: "Content-Length in another case", in: answer(func(e *Entry) { e.Header["content-length"] = []string{"5"} })},
		{desc: "Content-Length of a HEAD answer with no body", in: answer(func(e *Entry) { e.Body = nil })},
		{desc: "no Born", in: answer(func(e *Entry) { e.Born = time.Time{} })},
		{desc: "no FreshUntil", in: answer(func(e *Entry) { e.FreshUntil = time.Time{} })},
		{desc: "no KeepUntil", in: answer(func(e *Entry) { e.KeepUntil = time.Time{} })},
		{desc: "no times at all", in: answer(func(e *Entry) { e.Born, e.FreshUntil, e.KeepUntil = time.Time{}, time.Time{}, time.Time{} })},
		{desc: "fresh beyond KeepUntil", in: answer(func(e *Entry) { e.FreshUntil = e.KeepUntil.Add(time.Second) })},
		{desc: "born after its freshness ends", in: answer(func(e *Entry) { e.Born = e.FreshUntil.Add(time.Second) })},
		{desc: "mark born after its end", in: mark(func(e *Entry) { e.Born = e.FreshUntil.Add(time.Second) })},
		{desc: "stale-while-revalidate beyond KeepUntil", in: answer(func(e *Entry) { e.StaleWhileRevalidateUntil = e.KeepUntil.Add(time.Second) })},
		{desc: "stale-if-error beyond KeepUntil", in: answer(func(e *Entry) { e.StaleIfErrorUntil = e.KeepUntil.Add(time.Second) })},
		{desc: "times past what Encode writes", in: outOfRange},
		{desc: "more tags than entry.MaxTags", in: answer(func(e *Entry) { e.Tags = manyTags(entry.MaxTags+1, 4) })},
		{desc: "empty tag", in: answer(func(e *Entry) { e.Tags = []string{"a", ""} })},
		{desc: "tag over entry.MaxTagLen", in: answer(func(e *Entry) { e.Tags = manyTags(1, entry.MaxTagLen+1) })},
		{desc: "tag with CR LF", in: answer(func(e *Entry) { e.Tags = []string{"a\r\nb"} })},
		{desc: "tag with NUL", in: answer(func(e *Entry) { e.Tags = []string{"a\x00b"} })},
		{desc: "tag with a tab", in: answer(func(e *Entry) { e.Tags = []string{"a\tb"} })},
		{desc: "tag with DEL", in: answer(func(e *Entry) { e.Tags = []string{"a\x7f"} })},
		{desc: "tag with a leading space", in: answer(func(e *Entry) { e.Tags = []string{" a"} })},
		{desc: "tag with a trailing space", in: answer(func(e *Entry) { e.Tags = []string{"a "} })},
		{desc: "mark with tags", in: mark(func(e *Entry) { e.Tags = []string{"a"} })},
		{desc: "index with tags", in: index(func(e *Entry) { e.Tags = []string{"a"} })},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			e, err := Decode(tc.in)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Decode = %+v, %v; want error %v", e, err, ErrInvalid)
			}
			if e != nil {
				t.Errorf("Decode returned an entry with its error: %+v", e)
			}
		})
	}
}

// TestDecodeRejectsUnsentFields: an entry holding a field Weir never stores, in any case
// and in every layout, is invalid: whoever can write the shared store must not set cookies
// on its clients nor send them hop-by-hop fields.
func TestDecodeRejectsUnsentFields(t *testing.T) {
	names := []string{"Set-Cookie", "set-cookie", "SET-COOKIE", "Connection", "Keep-Alive", "Proxy-Connection",
		"Te", "TE", "Trailer", "Transfer-Encoding", "Upgrade", "Proxy-Authenticate"}
	layouts := []struct {
		desc   string
		encode func(e *Entry) []byte
	}{
		{desc: "layout 3", encode: Encode},
		{desc: "layout 1", encode: func(e *Entry) []byte { return encodeFields(e, sortedNames(e)) }},
	}
	for _, l := range layouts {
		for _, name := range names {
			for _, others := range []bool{false, true} {
				e := benchAnswer()
				if !others {
					e.Header = http.Header{}
					e.Body = nil
				}
				e.Header[name] = []string{"a=b; Path=/"}
				got, err := Decode(l.encode(e))
				if !errors.Is(err, ErrInvalid) || got != nil {
					t.Errorf("%s, %s (other fields %v): Decode = %v, %v; want error %v", l.desc, name, others, got, err, ErrInvalid)
				}
			}
		}
		// Names that only start or end as one of them are an origin's own.
		e := benchAnswer()
		e.Header["Set-Cookie-Policy"] = []string{"x"}
		e.Header["X-Upgrade"] = []string{"x"}
		e.Header["Tea"] = []string{"x"}
		if _, err := Decode(l.encode(e)); err != nil {
			t.Errorf("%s: names that contain unstored ones: %v, want the entry", l.desc, err)
		}
	}
}

func TestDecodeRejectsEveryTruncation(t *testing.T) {
	for _, tc := range codecEntries() {
		b := Encode(tc.e)
		for i := 0; i < len(b) && i < 1024; i++ {
			if e, err := Decode(b[:i]); err == nil {
				t.Fatalf("%s: Decode(first %d of %d bytes) = %+v, want an error", tc.desc, i, len(b), e)
			}
		}
	}
}

// decodeSeeds are FuzzDecode's seed inputs.
func decodeSeeds() [][]byte {
	seeds := [][]byte{
		{},
		{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f},
		{2, 0, 0},
		{3, 0, 0},
		{4, 0, 0},
		[]byte(v1FullAnswer),
	}
	for _, tc := range codecEntries() {
		seeds = append(seeds, Encode(tc.e), encodeFields(tc.e, sortedNames(tc.e)))
	}
	return seeds
}

// checkDecode holds FuzzDecode's properties: Decode does not panic, and either fails with one
// of its errors and no entry, or returns a valid entry (entryProblem) that survives another
// round trip unchanged.
func checkDecode(t *testing.T, b []byte) {
	t.Helper()
	var e *Entry
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("Decode(%q) panicked: %v", b, r)
			}
		}()
		e, err = Decode(b)
	}()
	if err != nil {
		if e != nil {
			t.Fatalf("Decode returned an entry with error %v", err)
		}
		if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnknownVersion) && !errors.Is(err, ErrInvalid) {
			t.Fatalf("Decode error %v wraps none of ErrMalformed, ErrUnknownVersion, ErrInvalid", err)
		}
		return
	}
	if p := entryProblem(e); p != "" {
		t.Fatalf("Decode(%q) returned an invalid entry: %s", b, p)
	}
	if f := decodeFast(b); f != nil {
		c, err := decodeChecked(b)
		if err != nil {
			t.Fatalf("decodeFast(%q) took what decodeChecked refuses: %v", b, err)
		}
		if d := sameDecoded(f, c); d != "" {
			t.Fatalf("decodeFast(%q) differs from decodeChecked: %s", b, d)
		}
	}
	again, err := Decode(Encode(e))
	if err != nil {
		t.Fatalf("Decode(Encode(Decode(b))) error: %v", err)
	}
	if d := entryDiff(again, e); d != "" {
		t.Fatalf("re-encoded entry differs: %s", d)
	}
}

// sameDecoded says how two decodings of one input differ, in every field, Hot included
// (whose field order may differ), or "" when they do not.
func sameDecoded(got, want *Entry) string {
	if d := entryDiff(got, want); d != "" {
		return d
	}
	switch {
	case got.Pass != want.Pass:
		return fmt.Sprintf("Pass = %v, want %v", got.Pass, want.Pass)
	case (got.Header == nil) != (want.Header == nil):
		return fmt.Sprintf("Header nil %v, want nil %v", got.Header == nil, want.Header == nil)
	case (got.Vary == nil) != (want.Vary == nil):
		return fmt.Sprintf("Vary nil %v, want nil %v", got.Vary == nil, want.Vary == nil)
	case cap(got.Body) != cap(want.Body) || got.BodyPrefix != want.BodyPrefix || got.Size() != want.Size():
		return fmt.Sprintf("body cap %d, prefix %d, Size %d; want %d, %d, %d", cap(got.Body), got.BodyPrefix, got.Size(),
			cap(want.Body), want.BodyPrefix, want.Size())
	case got.Hot.BornNano != want.Hot.BornNano || got.Hot.FreshNano != want.Hot.FreshNano || got.Hot.KeepNano != want.Hot.KeepNano:
		return fmt.Sprintf("Hot times %+v, want %+v", got.Hot, want.Hot)
	case got.Hot.Names == nil || len(got.Hot.Names) != len(want.Hot.Names) || len(got.Hot.Values) != len(got.Hot.Names):
		return fmt.Sprintf("Hot.Names %q, want %q", got.Hot.Names, want.Hot.Names)
	}
	for i, name := range got.Hot.Names {
		if !reflect.DeepEqual(got.Hot.Values[i], want.Header[name]) {
			return fmt.Sprintf("Hot field %q = %q, want %q", name, got.Hot.Values[i], want.Header[name])
		}
	}
	return ""
}

// TestDecodeFast: the entries the previous Weir writes (layouts 1 and 2) take decodeFast,
// and decode as decodeChecked reads them; those it leaves to decodeChecked do not.
func TestDecodeFast(t *testing.T) {
	long := strings.Repeat("v", 300)
	tests := []struct {
		desc string
		e    *Entry
		fast bool
	}{
		{desc: "full answer", e: codecEntries()[0].e, fast: true},
		{desc: "a value of two length bytes", e: &Entry{Status: 200, Header: http.Header{"Set-Cookie": {long, "a"}, "Content-Length": {"1"}}, Body: []byte("x"), Born: codecBorn, FreshUntil: codecBorn, KeepUntil: codecBorn}, fast: true},
		{desc: "HEAD answer", e: codecEntries()[1].e, fast: true},
		{desc: "hit-for-pass mark", e: &Entry{Pass: true, Born: codecBorn, FreshUntil: codecBorn, KeepUntil: codecBorn.Add(30 * time.Second)}, fast: true},
		{desc: "variant index", e: &Entry{VaryIndex: true, Vary: []string{"Accept"}, Born: codecBorn, FreshUntil: codecBorn, KeepUntil: codecBorn}, fast: true},
		{desc: "variant index born after its freshness ends", e: codecEntries()[3].e},
		{desc: "tags", e: &Entry{Status: 200, Tags: []string{"t"}, Born: codecBorn, FreshUntil: codecBorn, KeepUntil: codecBorn}},
		{desc: "a value of three length bytes", e: &Entry{Status: 200, Header: http.Header{"X": {strings.Repeat("v", 1<<14)}}, Born: codecBorn, FreshUntil: codecBorn, KeepUntil: codecBorn}},
		{desc: "non-canonical content-length", e: &Entry{Status: 200, Header: http.Header{"content-length": {"0"}}, Born: codecBorn, FreshUntil: codecBorn, KeepUntil: codecBorn}},
	}
	for _, tc := range tests {
		b := encodeFields(tc.e, sortedNames(tc.e))
		f := decodeFast(b)
		if (f != nil) != tc.fast {
			t.Errorf("%s: decodeFast took it: %v, want %v", tc.desc, f != nil, tc.fast)
		}
		c, err := decodeChecked(b)
		if err != nil {
			t.Fatalf("%s: decodeChecked: %v", tc.desc, err)
		}
		if f != nil {
			if d := sameDecoded(f, c); d != "" {
				t.Errorf("%s: %s", tc.desc, d)
			}
		}
		checkDecode(t, b)
	}
}

// entryProblem says what makes e an entry Weir never stores, or "" for a valid one. It is
// written apart from Decode's checks, byte by byte, so that the fuzz target checks them.
func entryProblem(e *Entry) string {
	answer := !e.Pass && !e.VaryIndex
	for k, vs := range e.Header {
		if len(vs) > 0 && unsentNames[strings.ToLower(k)] {
			return fmt.Sprintf("header field %q, which Weir never stores", k)
		}
	}
	switch {
	case e.Pass && e.VaryIndex:
		return "both a mark and an index"
	case answer && (e.Status < 200 || e.Status > 599):
		return fmt.Sprintf("answer status %d", e.Status)
	case !answer && (e.Status != 0 || len(e.Header) != 0 || e.Body != nil || len(e.Tags) != 0):
		return "a mark or index with an answer's parts"
	case e.Pass && len(e.Vary) != 0:
		return "a mark with Vary"
	case e.VaryIndex && len(e.Vary) == 0:
		return "an index without Vary"
	case e.Born.IsZero() || e.FreshUntil.IsZero() || e.KeepUntil.IsZero():
		return "a missing time"
	case e.FreshUntil.After(e.KeepUntil):
		return "fresh after KeepUntil"
	case !e.VaryIndex && e.Born.After(e.FreshUntil):
		return "born after FreshUntil"
	case e.StaleWhileRevalidateUntil.After(e.KeepUntil) || e.StaleIfErrorUntil.After(e.KeepUntil):
		return "a stale window past KeepUntil"
	}
	for _, tm := range []time.Time{e.Born, e.FreshUntil, e.StaleWhileRevalidateUntil, e.StaleIfErrorUntil, e.KeepUntil} {
		if !tm.IsZero() && (tm.Before(minNanoTime) || tm.After(maxNanoTime)) {
			return fmt.Sprintf("time %v out of range", tm)
		}
	}
	lengths := 0
	for k, vs := range e.Header {
		if !isToken(k) {
			return fmt.Sprintf("field name %q", k)
		}
		for _, v := range vs {
			for i := 0; i < len(v); i++ {
				if v[i] == '\r' || v[i] == '\n' || v[i] == 0 {
					return fmt.Sprintf("field value %q", v)
				}
			}
		}
		if strings.ToLower(k) == "content-length" {
			lengths += len(vs)
			if len(vs) > 0 && vs[0] != strconv.Itoa(len(e.Body)) {
				return fmt.Sprintf("Content-Length %q for %d bytes", vs[0], len(e.Body))
			}
		}
	}
	if lengths > 1 {
		return "Content-Length values"
	}
	for _, v := range e.Vary {
		if !isToken(v) {
			return fmt.Sprintf("Vary name %q", v)
		}
	}
	if len(e.Tags) > entry.MaxTags {
		return fmt.Sprintf("%d tags", len(e.Tags))
	}
	for _, tag := range e.Tags {
		if tag == "" || len(tag) > entry.MaxTagLen || tag[0] == ' ' || tag[len(tag)-1] == ' ' {
			return fmt.Sprintf("tag %q", tag)
		}
		for i := 0; i < len(tag); i++ {
			if tag[i] < ' ' || tag[i] == 0x7f {
				return fmt.Sprintf("tag %q", tag)
			}
		}
	}
	return ""
}

// isToken reports whether s is a token (RFC 9110 section 5.6.2).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z':
		case c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// TestDecodeMutations runs FuzzDecode's properties over the seeds with bytes changed, from
// a fixed seed: every byte of layout 3's fixed part, and random ones elsewhere.
func TestDecodeMutations(t *testing.T) {
	rnd := rand.New(rand.NewSource(1))
	for _, b := range decodeSeeds() {
		if len(b) < blocksHead || b[0] != encodingBlocks || len(b) > 4096 {
			continue
		}
		for i := 1; i < blocksHead; i++ {
			for _, c := range []byte{0, 1, 0x7f, 0xff, b[i] + 1, b[i] - 1} {
				checkDecode(t, withByte(b, i, c))
			}
		}
		for k := 0; k < 200; k++ {
			m := withByte(b, blocksHead+rnd.Intn(len(b)-blocksHead+1)-1, byte(rnd.Intn(256)))
			checkDecode(t, m)
		}
	}
}

func FuzzDecode(f *testing.F) {
	for _, b := range decodeSeeds() {
		f.Add(b)
	}
	f.Fuzz(checkDecode)
}

// TestDecodeSeeds runs FuzzDecode's properties over its seeds and every prefix of them, for
// test runners that skip fuzz targets (yaegi test).
func TestDecodeSeeds(t *testing.T) {
	for _, b := range decodeSeeds() {
		for i := 0; i <= len(b) && i < 512; i++ {
			checkDecode(t, b[:i])
		}
	}
}

func ExampleEncode() {
	e := &Entry{
		Status:     200,
		Header:     http.Header{"Content-Type": {"text/plain"}},
		Body:       []byte("hello"),
		Born:       time.Date(2029, 12, 31, 0, 0, 0, 0, time.UTC),
		FreshUntil: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC),
		KeepUntil:  time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	b := Encode(e)
	got, err := Decode(b)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(b[0], got.Status, got.Header.Get("Content-Type"), string(got.Body), got.KeepUntil.UTC().Year())
	// Output: 3 200 text/plain hello 2030
}

func ExampleDecode() {
	_, err := Decode([]byte{9, 0, 0})
	fmt.Println(errors.Is(err, ErrUnknownVersion), err)
	// Output: true version 9: unknown entry version
}

func BenchmarkEncode(b *testing.B) {
	e := codecEntries()[0].e
	for i := 0; i < b.N; i++ {
		Encode(e)
	}
}

// BenchmarkDecode decodes codecEntries' "full answer", which layout 3 cannot hold (a field
// without values): layout 1.
func BenchmarkDecode(b *testing.B) {
	benchmarkDecode(b, Encode(codecEntries()[0].e))
}

// benchAnswer is a stored answer of 1 KiB with the fields a typical origin sends
// (core/redisstore's BenchmarkGet).
func benchAnswer() *Entry {
	return &Entry{
		Status: 200,
		Header: http.Header{
			"Cache-Control":  {"max-age=3600"},
			"Content-Type":   {"text/plain; charset=utf-8"},
			"Content-Length": {"1024"},
			"Date":           {"Tue, 01 Dec 2026 12:00:00 GMT"},
		},
		Body:       bytes.Repeat([]byte("x"), 1024),
		Born:       codecBorn,
		FreshUntil: codecBorn.Add(time.Hour),
		KeepUntil:  codecBorn.Add(time.Hour),
	}
}

// BenchmarkDecodeAnswer decodes benchAnswer as Encode writes it (layout 3); under Yaegi
// (scripts/yaegi-cost.sh core/store BenchmarkDecodeAnswer) it counts what decoding costs a
// hit read from a shared store.
func BenchmarkDecodeAnswer(b *testing.B) {
	benchmarkDecode(b, Encode(benchAnswer()))
}

// BenchmarkDecodeAnswerLayout1 decodes benchAnswer in layout 1, as the previous Weir wrote
// it (decodeFast).
func BenchmarkDecodeAnswerLayout1(b *testing.B) {
	e := benchAnswer()
	benchmarkDecode(b, encodeFields(e, sortedNames(e)))
}

func benchmarkDecode(b *testing.B, enc []byte) {
	b.Helper()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Decode(enc); err != nil {
			b.Fatal(err)
		}
	}
}
