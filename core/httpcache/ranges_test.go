package httpcache

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseRange(t *testing.T) {
	tests := []struct {
		desc       string
		value      string
		size       int64
		wantFirst  int64
		wantLast   int64
		wantAnswer int
	}{
		{desc: "first and last", value: "bytes=0-1", size: 10, wantLast: 1, wantAnswer: rangePart},
		{desc: "one byte", value: "bytes=4-4", size: 10, wantFirst: 4, wantLast: 4, wantAnswer: rangePart},
		{desc: "no last", value: "bytes=3-", size: 10, wantFirst: 3, wantLast: 9, wantAnswer: rangePart},
		{desc: "last past the end", value: "bytes=8-100", size: 10, wantFirst: 8, wantLast: 9, wantAnswer: rangePart},
		{desc: "huge last", value: "bytes=8-99999999999999999999999", size: 10, wantFirst: 8, wantLast: 9, wantAnswer: rangePart},
		{desc: "suffix", value: "bytes=-2", size: 10, wantFirst: 8, wantLast: 9, wantAnswer: rangePart},
		{desc: "suffix longer than the representation", value: "bytes=-20", size: 10, wantLast: 9, wantAnswer: rangePart},
		{desc: "huge suffix", value: "bytes=-99999999999999999999999", size: 10, wantLast: 9, wantAnswer: rangePart},
		{desc: "unit is case-insensitive", value: "BYTES=1-2", size: 10, wantFirst: 1, wantLast: 2, wantAnswer: rangePart},
		{desc: "empty list elements", value: "bytes=, 1-2 ,", size: 10, wantFirst: 1, wantLast: 2, wantAnswer: rangePart},
		{desc: "first at the end", value: "bytes=10-", size: 10, wantAnswer: rangeNone},
		{desc: "first past the end", value: "bytes=11-20", size: 10, wantAnswer: rangeNone},
		{desc: "huge first", value: "bytes=99999999999999999999999-", size: 10, wantAnswer: rangeNone},
		{desc: "suffix of zero", value: "bytes=-0", size: 10, wantAnswer: rangeNone},
		{desc: "empty representation, first", value: "bytes=0-", size: 0, wantAnswer: rangeNone},
		{desc: "empty representation, suffix", value: "bytes=-5", size: 0, wantAnswer: rangeWhole},
		{desc: "two ranges", value: "bytes=0-1,3-4", size: 10, wantAnswer: rangeWhole},
		{desc: "two ranges, one unsatisfiable", value: "bytes=20-30, 0-1", size: 10, wantAnswer: rangeWhole},
		{desc: "last before first", value: "bytes=5-2", size: 10, wantAnswer: rangeWhole},
		{desc: "other unit", value: "items=0-1", size: 10, wantAnswer: rangeWhole},
		{desc: "no unit", value: "0-1", size: 10, wantAnswer: rangeWhole},
		{desc: "no range", value: "bytes=", size: 10, wantAnswer: rangeWhole},
		{desc: "no dash", value: "bytes=5", size: 10, wantAnswer: rangeWhole},
		{desc: "lone dash", value: "bytes=-", size: 10, wantAnswer: rangeWhole},
		{desc: "not a number", value: "bytes=a-b", size: 10, wantAnswer: rangeWhole},
		{desc: "negative first", value: "bytes=--1", size: 10, wantAnswer: rangeWhole},
		{desc: "space inside the range", value: "bytes=1 -2", size: 10, wantAnswer: rangeWhole},
		{desc: "sign", value: "bytes=+1-2", size: 10, wantAnswer: rangeWhole},
		{desc: "space before the equals sign", value: "bytes =1-2", size: 10, wantAnswer: rangeWhole},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			first, last, answer := parseRange(tc.value, tc.size)
			if answer != tc.wantAnswer {
				t.Fatalf("parseRange(%q, %d) answer = %d, want %d", tc.value, tc.size, answer, tc.wantAnswer)
			}
			if answer == rangePart && (first != tc.wantFirst || last != tc.wantLast) {
				t.Errorf("parseRange(%q, %d) = %d-%d, want %d-%d", tc.value, tc.size, first, last, tc.wantFirst, tc.wantLast)
			}
		})
	}
}

func TestIfRangeHolds(t *testing.T) {
	lm := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	strong := http.Header{"Etag": {`"v1"`}, "Last-Modified": {lm.Format(http.TimeFormat)}}
	weak := http.Header{"Etag": {`W/"v1"`}}
	tests := []struct {
		desc   string
		lines  []string
		stored http.Header
		want   bool
	}{
		{desc: "no If-Range", stored: strong, want: true},
		{desc: "same strong tag", lines: []string{`"v1"`}, stored: strong, want: true},
		{desc: "other tag", lines: []string{`"v2"`}, stored: strong, want: false},
		{desc: "weak tag asked", lines: []string{`W/"v1"`}, stored: strong, want: false},
		{desc: "weak tag stored", lines: []string{`"v1"`}, stored: weak, want: false},
		{desc: "weak tag asked and stored", lines: []string{`W/"v1"`}, stored: weak, want: false},
		{desc: "tag without a stored ETag", lines: []string{`"v1"`}, stored: http.Header{}, want: false},
		{desc: "same date", lines: []string{lm.Format(http.TimeFormat)}, stored: strong, want: true},
		{desc: "same date, RFC 850 form", lines: []string{lm.Format(time.RFC850)}, stored: strong, want: true},
		{desc: "later date", lines: []string{lm.Add(time.Second).Format(http.TimeFormat)}, stored: strong, want: false},
		{desc: "earlier date", lines: []string{lm.Add(-time.Second).Format(http.TimeFormat)}, stored: strong, want: false},
		{desc: "date without a stored Last-Modified", lines: []string{lm.Format(http.TimeFormat)}, stored: weak, want: false},
		{desc: "neither tag nor date", lines: []string{"yesterday"}, stored: strong, want: false},
		{desc: "two lines", lines: []string{`"v1"`, `"v1"`}, stored: strong, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if got := ifRangeHolds(tc.lines, tc.stored); got != tc.want {
				t.Errorf("ifRangeHolds(%q) = %v, want %v", tc.lines, got, tc.want)
			}
		})
	}
}

// Range values seen in the wild and at the edges of the grammar (RFC 9110 section 14.1.1).
var rangeSeeds = []string{
	"", "bytes=0-0", "bytes=0-", "bytes=-1", "bytes=-0", "bytes=0-1,2-3", "bytes=, ,0-1", "Bytes=5-",
	"bytes=99999999999999999999-", "bytes=-99999999999999999999", "bytes=9223372036854775807-9223372036854775807",
	"bytes=1-0", "bytes=a-", "bytes==0-1", "bytes=0-1-2", "bytes= 0-1", "bytes=\t-3\t", "items=0-1", "bytes",
	"bytes=-", "bytes=--", ",", "bytes=0-1,", "bytes=,",
}

func FuzzParseRange(f *testing.F) {
	for _, s := range rangeSeeds {
		f.Add(s, uint16(10))
		f.Add(s, uint16(0))
	}
	f.Fuzz(func(t *testing.T, v string, size uint16) {
		checkRangeProps(t, v, int64(size))
	})
}

func TestParseRangeSeeds(t *testing.T) {
	for _, s := range rangeSeeds {
		for _, size := range []int64{0, 1, 10, 1 << 40} {
			checkRangeProps(t, s, size)
		}
	}
}

func checkRangeProps(t *testing.T, v string, size int64) {
	first, last, answer := parseRange(v, size)
	switch answer {
	case rangeWhole, rangeNone:
	case rangePart:
		if first < 0 || first > last || last >= size {
			t.Fatalf("parseRange(%q, %d) = %d-%d: not within the representation", v, size, first, last)
		}
		// The range written back out canonically reads the same.
		canon := "bytes=" + strconv.FormatInt(first, 10) + "-" + strconv.FormatInt(last, 10)
		if f2, l2, a2 := parseRange(canon, size); a2 != rangePart || f2 != first || l2 != last {
			t.Fatalf("parseRange(%q, %d) = %d-%d, but %q reads %d-%d (%d)", v, size, first, last, canon, f2, l2, a2)
		}
	default:
		t.Fatalf("parseRange(%q, %d) answer = %d, not one of the three", v, size, answer)
	}
	// The unit is case-insensitive.
	if len(v) >= 6 && strings.EqualFold(v[:6], "bytes=") {
		f2, l2, a2 := parseRange("BYTES="+v[6:], size)
		if f2 != first || l2 != last || a2 != answer {
			t.Fatalf("parseRange(%q, %d) = %d-%d (%d), in capitals %d-%d (%d)", v, size, first, last, answer, f2, l2, a2)
		}
	}
}
