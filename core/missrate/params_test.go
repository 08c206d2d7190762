package missrate

import (
	"hash/maphash"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCleanName(t *testing.T) {
	tests := []struct {
		desc string
		raw  string
		want string
	}{
		{desc: "plain", raw: "utm_source", want: "utm_source"},
		{desc: "escaped", raw: "utm%5Fsource", want: "utm_source"},
		{desc: "plus is a space", raw: "a+b", want: "a b"},
		{desc: "bad escape kept as written", raw: "a%zz", want: "a%zz"},
		{desc: "escaped control kept as written", raw: "a%0Ab", want: "a%0Ab"},
		{desc: "raw control replaced", raw: "a\nb\x7f", want: "a?b?"},
		{desc: "long", raw: strings.Repeat("x", 100), want: strings.Repeat("x", maxNameLen)},
		{desc: "invalid UTF-8", raw: "a\xffb", want: "a?b"},
		{desc: "escaped invalid UTF-8", raw: "%ff", want: "?"},
		{desc: "cut inside a rune", raw: "a" + strings.Repeat("é", 40), want: "a" + strings.Repeat("é", 31) + "?"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if got := cleanName(tc.raw); got != tc.want {
				t.Errorf("cleanName(%q) = %q, want %q", tc.raw, got, tc.want)
			}
		})
	}
}

func TestParamTableSampleNames(t *testing.T) {
	tests := []struct {
		desc  string
		query string
		want  []string
	}{
		{desc: "empty", query: "", want: nil},
		{desc: "plain", query: "q=shoes&page=2", want: []string{"page", "q"}},
		{desc: "malformed", query: "a=%zz&&=&b", want: []string{"a", "b"}},
		{desc: "name without value", query: "flag&x=", want: []string{"flag", "x"}},
		{desc: "value holding '='", query: "a==b=c", want: []string{"a"}},
		{desc: "only separators", query: "&&&=&=", want: nil},
		{desc: "repeated name", query: "a=1&a=2&a=3", want: []string{"a"}},
		{desc: "escaped and plain spelling", query: "utm%5Fid=1&utm_id=2", want: []string{"utm_id"}},
		{desc: "pieces past the limit ignored", query: strings.Repeat("&", maxPieces-1) + "a=1&b=2", want: []string{"a"}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			pt := newParamTable()
			sample(&pt, maphash.MakeSeed(), tc.query)
			var got []string
			for _, e := range pt.entries {
				if !contains(got, e.name) {
					got = append(got, e.name)
				}
			}
			sort.Strings(got)
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("names after sampling %q = %q, want %q", tc.query, got, tc.want)
			}
		})
	}
}

func TestParamTableVarying(t *testing.T) {
	type add struct {
		name   string
		hashes []uint64
	}
	tests := []struct {
		desc string
		adds []add
		n    int
		want []string
	}{
		{desc: "nothing sampled", n: 3, want: nil},
		{desc: "constant names are not varying", adds: []add{{"lang", []uint64{5, 5, 5}}}, n: 3, want: nil},
		{
			desc: "most varying first",
			adds: []add{{"lang", []uint64{5}}, {"page", []uint64{1, 2}}, {"cb", []uint64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}}},
			n:    3,
			want: []string{"cb", "page"},
		},
		{
			desc: "ties by name, cut at n",
			adds: []add{{"b", []uint64{1, 2}}, {"a", []uint64{3, 4}}, {"c", []uint64{5, 6}}, {"d", []uint64{1, 2, 3}}},
			n:    2,
			want: []string{"d", "a"},
		},
		{desc: "spellings of one name merged", adds: []add{{"utm%5Fid", []uint64{1}}, {"utm_id", []uint64{2}}}, n: 3, want: []string{"utm_id"}},
		{desc: "hashes that share a bit count once", adds: []add{{"x", []uint64{1, 65, 129}}}, n: 3, want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			pt := newParamTable()
			for _, a := range tc.adds {
				for _, h := range a.hashes {
					record(&pt, a.name, h)
				}
			}
			got := varying(&pt, tc.n)
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("varying(%d) = %q, want %q", tc.n, got, tc.want)
			}
		})
	}
}

func TestParamTableEviction(t *testing.T) {
	pt := newParamTable()
	// A full table of names seen once, the oldest first.
	for i := 0; i < maxParams; i++ {
		pt.samples++
		record(&pt, "const"+strconv.Itoa(i), 7)
	}
	pt.samples++
	record(&pt, "cb", 1)
	record(&pt, "cb", 2)
	if _, ok := pt.index["const0"]; ok {
		t.Errorf("const0, the oldest constant name, still remembered after a newcomer")
	}
	if _, ok := pt.index["cb"]; !ok {
		t.Fatalf("cb not remembered")
	}
	// Make every name vary: a newcomer cannot take a place.
	for i := range pt.entries {
		pt.entries[i].values |= 3
	}
	record(&pt, "late", 9)
	if _, ok := pt.index["late"]; ok {
		t.Errorf("late took the place of a varying name")
	}
	if len(pt.entries) != maxParams || len(pt.index) != maxParams {
		t.Errorf("table holds %d entries, %d indexed, want %d", len(pt.entries), len(pt.index), maxParams)
	}
	for name, i := range pt.index {
		if pt.entries[i].raw != name {
			t.Errorf("index[%q] = %d, which holds %q", name, i, pt.entries[i].name)
		}
	}
}

func TestParamTableClear(t *testing.T) {
	pt := newParamTable()
	sample(&pt, maphash.MakeSeed(), "a=1&b=2")
	clearParams(&pt)
	if len(pt.entries) != 0 || len(pt.index) != 0 || pt.samples != 0 {
		t.Errorf("after clearParams: %d entries, %d indexed, %d samples, want none", len(pt.entries), len(pt.index), pt.samples)
	}
	if cap(pt.entries) != maxParams {
		t.Errorf("after clearParams: capacity %d, want %d kept", cap(pt.entries), maxParams)
	}
}

// FuzzParamSample feeds the query sampler malformed queries: it must not panic, must stay
// within its bounds, and must only remember names a log line can show.
func FuzzParamSample(f *testing.F) {
	for _, q := range []string{
		"a=%zz&&=&b", "", "&", "=", "%", "%%", "a=1;b=2", "+=+", strings.Repeat("&", 1000),
		"\x00=\x7f", "na%00me=1", "%e2%82=1", "%ff%fe=1", "a=1&a=2&b", strings.Repeat("x", 200) + "=1",
	} {
		f.Add(q)
	}
	seed := maphash.MakeSeed()
	f.Fuzz(func(t *testing.T, q string) {
		pt := newParamTable()
		sample(&pt, seed, q)
		sample(&pt, seed, q+"&"+q)
		if len(pt.entries) > maxParams || len(pt.index) != len(pt.entries) {
			t.Fatalf("%d entries, %d indexed, want at most %d and equal", len(pt.entries), len(pt.index), maxParams)
		}
		for i, e := range pt.entries {
			if e.name == "" || len(e.name) > maxNameLen || !utf8.ValidString(e.name) || strings.ContainsAny(e.name, ctlChars) {
				t.Errorf("entry %d has name %q: want non-empty, at most %d bytes, printable UTF-8", i, e.name, maxNameLen)
			}
			if pt.index[e.raw] != i || len(e.raw) > maxNameLen {
				t.Errorf("index[%q] = %d, want %d, for a raw name of at most %d bytes", e.raw, pt.index[e.raw], i, maxNameLen)
			}
		}
		if got := varying(&pt, topVarying); len(got) > topVarying {
			t.Errorf("varying(%d) = %q, too many", topVarying, got)
		}
	})
}
