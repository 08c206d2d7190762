package store

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"
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
		{desc: "zero entry", e: &Entry{}},
		{desc: "full answer", e: &Entry{
			Status: 200,
			Header: http.Header{
				"Content-Type":  {"text/html; charset=utf-8"},
				"Cache-Control": {"max-age=60", "stale-while-revalidate=30"},
				"Set-Cookie":    {},
				"X-Empty":       {""},
			},
			Body:                      []byte("<html>\x00\xff binary \r\n</html>"),
			Born:                      codecBorn,
			FreshUntil:                codecBorn.Add(time.Minute),
			StaleWhileRevalidateUntil: codecBorn.Add(90 * time.Second),
			StaleIfErrorUntil:         codecBorn.Add(time.Hour),
			KeepUntil:                 codecBorn.Add(time.Hour),
			Vary:                      []string{"Accept-Encoding", "Accept-Language"},
		}},
		{desc: "HEAD answer keeps a nil body", e: &Entry{Status: 204, Born: codecBorn, KeepUntil: codecBorn.Add(time.Second)}},
		{desc: "empty body stays empty, not nil", e: &Entry{Status: 200, Body: []byte{}}},
		{desc: "variant index", e: &Entry{VaryIndex: true, Vary: []string{"Accept"}, KeepUntil: codecBorn}},
		{desc: "hit-for-pass mark", e: &Entry{Pass: true, Born: codecBorn, FreshUntil: codecBorn, KeepUntil: codecBorn.Add(30 * time.Second)}},
		{desc: "some times zero", e: &Entry{Status: 301, FreshUntil: codecBorn, StaleIfErrorUntil: codecBorn.Add(-time.Hour)}},
		{desc: "odd status", e: &Entry{Status: -7}},
		{desc: "Unix epoch is not the zero time", e: &Entry{Born: time.Unix(0, 0)}},
		{desc: "large body", e: &Entry{Status: 200, Body: bytes.Repeat([]byte("0123456789abcdef"), 1<<14)}},
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
	if (got.Body == nil) != (want.Body == nil) || !bytes.Equal(got.Body, want.Body) {
		return fmt.Sprintf("Body = %.40q (nil %v), want %.40q (nil %v)", got.Body, got.Body == nil, want.Body, want.Body == nil)
	}
	return ""
}

func TestCodecRoundTrip(t *testing.T) {
	for _, tc := range codecEntries() {
		t.Run(tc.desc, func(t *testing.T) {
			b := Encode(tc.e)
			if b[0] != EncodingVersion {
				t.Fatalf("first byte = %d, want version %d", b[0], EncodingVersion)
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
	e := codecEntries()[1].e
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
	if got := Encode(e); !bytes.Equal(got, want) {
		t.Errorf("Encode = %v, want %v", got, want)
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
			got, err := Decode(Encode(&Entry{KeepUntil: tc.in}))
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
	valid := Encode(&Entry{Status: 200, Header: http.Header{"A": {"b"}}, Body: []byte("hi")})
	tests := []struct {
		desc string
		in   []byte
		want error
	}{
		{desc: "empty", in: nil, want: ErrMalformed},
		{desc: "unknown version", in: []byte{2, 0, 0, 0, 0, 0, 0}, want: ErrUnknownVersion},
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

func TestDecodeRejectsEveryTruncation(t *testing.T) {
	b := Encode(codecEntries()[1].e)
	for i := 0; i < len(b); i++ {
		if e, err := Decode(b[:i]); err == nil {
			t.Fatalf("Decode(first %d of %d bytes) = %+v, want an error", i, len(b), e)
		}
	}
}

// decodeSeeds are FuzzDecode's seed inputs.
func decodeSeeds() [][]byte {
	seeds := [][]byte{
		{},
		{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f},
		{2, 0, 0},
	}
	for _, tc := range codecEntries() {
		seeds = append(seeds, Encode(tc.e))
	}
	return seeds
}

// checkDecode holds FuzzDecode's properties: Decode either fails with one of its errors and no
// entry, or returns an entry that survives another round trip unchanged.
func checkDecode(t *testing.T, b []byte) {
	t.Helper()
	e, err := Decode(b)
	if err != nil {
		if e != nil {
			t.Fatalf("Decode returned an entry with error %v", err)
		}
		if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnknownVersion) {
			t.Fatalf("Decode error %v wraps neither ErrMalformed nor ErrUnknownVersion", err)
		}
		return
	}
	again, err := Decode(Encode(e))
	if err != nil {
		t.Fatalf("Decode(Encode(Decode(b))) error: %v", err)
	}
	if d := entryDiff(again, e); d != "" {
		t.Fatalf("re-encoded entry differs: %s", d)
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
		Status:    200,
		Header:    http.Header{"Content-Type": {"text/plain"}},
		Body:      []byte("hello"),
		KeepUntil: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	b := Encode(e)
	got, err := Decode(b)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(b[0], got.Status, got.Header.Get("Content-Type"), string(got.Body), got.KeepUntil.UTC().Year())
	// Output: 1 200 text/plain hello 2030
}

func ExampleDecode() {
	_, err := Decode([]byte{9, 0, 0})
	fmt.Println(errors.Is(err, ErrUnknownVersion), err)
	// Output: true version 9: unknown entry version
}

func BenchmarkEncode(b *testing.B) {
	e := codecEntries()[1].e
	for i := 0; i < b.N; i++ {
		Encode(e)
	}
}

func BenchmarkDecode(b *testing.B) {
	enc := Encode(codecEntries()[1].e)
	for i := 0; i < b.N; i++ {
		if _, err := Decode(enc); err != nil {
			b.Fatal(err)
		}
	}
}
