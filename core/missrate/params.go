package missrate

import (
	"hash/maphash"
	"math/bits"
	"net/url"
	"sort"
	"strings"
	"unicode/utf8"
)

// Bounds of the query sample kept per slot (FR-MR-1: memory does not grow with traffic).
const (
	// maxParams is how many parameter names a slot remembers.
	maxParams = 16
	// maxPieces is how many '&'-separated pieces of one sampled query are read, so a query of
	// a hundred thousand ampersands costs no more than a short one.
	maxPieces = 32
	// maxNameLen truncates parameter names, in bytes.
	maxNameLen = 64
	// topVarying is how many varying names an Anomaly carries.
	topVarying = 3
	// maxSamples is how many queries a slot samples in one window: a busy slot that never
	// qualifies stops paying for samples once it has this many.
	maxSamples = 64
)

// ctlChars are the bytes a reported name must not carry: the name ends up in a log line.
const ctlChars = "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f" +
	"\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f\x7f"

// param is what a slot remembers of one query parameter name.
type param struct {
	// raw is the name as written in the query (at most maxNameLen bytes); name is how a log
	// line shows it (see cleanName). Spellings of one name are separate entries, merged by varying.
	raw  string
	name string
	// values has bit (hash(value) mod 64) set for every value seen: its population count
	// estimates the distinct values (linear counting), up to a few dozen, in eight bytes.
	values uint64
	// touched is the sample number that last saw the name; the oldest goes first when the
	// table is full.
	touched int64
}

// paramTable tells which query parameter names vary most among a slot's sampled misses. It is
// guarded by its slot's mutex. Its operations are functions, not methods, for Yaegi's sake (see
// Hit): record runs for every parameter of every sampled query.
type paramTable struct {
	// index maps raw names to their place in entries.
	index   map[string]int
	entries []param
	samples int64
}

func newParamTable() paramTable {
	return paramTable{index: make(map[string]int, maxParams), entries: make([]param, 0, maxParams)}
}

// clearParams empties the table for a new window, keeping its storage.
func clearParams(t *paramTable) {
	if len(t.entries) == 0 {
		return
	}
	t.index = make(map[string]int, maxParams)
	t.entries = t.entries[:0]
	t.samples = 0
}

// sample records the parameter names and values of one raw query. Malformed queries are read
// as far as they make sense: empty pieces and empty names are skipped, a name whose escapes do
// not decode is shown as written.
func sample(t *paramTable, seed maphash.Seed, rawQuery string) {
	t.samples++
	pieces := strings.SplitN(rawQuery, "&", maxPieces+1)
	if len(pieces) > maxPieces {
		pieces = pieces[:maxPieces]
	}
	for _, piece := range pieces {
		name, value, _ := strings.Cut(piece, "=")
		if name != "" {
			record(t, name, maphash.String(seed, value))
		}
	}
}

// record counts one value (by its hash) for a raw name.
func record(t *paramTable, raw string, valueHash uint64) {
	if len(raw) > maxNameLen {
		raw = raw[:maxNameLen]
	}
	// uint64(1), not 1: Yaegi gives an untyped constant shifted by a variable the type int
	// whatever the context, and SetUint on it panics.
	bit := uint64(1) << (valueHash & 63)
	if i, ok := t.index[raw]; ok {
		e := &t.entries[i]
		e.values |= bit
		e.touched = t.samples
		return
	}
	insert(t, raw, bit)
}

// insert remembers a new raw name with its first value bit, in place of the name that varied
// least when the table is full. Kept out of record, which runs for every sampled parameter,
// because Yaegi sets up every value of a function body on each call.
func insert(t *paramTable, raw string, bit uint64) {
	// The name came from a request: copy it so the table does not pin the request's query.
	raw = strings.Clone(raw)
	e := param{raw: raw, name: cleanName(raw), values: bit, touched: t.samples}
	if len(t.entries) < maxParams {
		t.index[raw] = len(t.entries)
		t.entries = append(t.entries, e)
		return
	}
	// Full: the name that varied least gives way, the one seen longest ago among equals. A
	// varying name has more bits set than a constant one, so it survives a crowd of constants.
	victim := 0
	for i := 1; i < len(t.entries); i++ {
		c := bits.OnesCount64(t.entries[i].values)
		v := bits.OnesCount64(t.entries[victim].values)
		if c < v || (c == v && t.entries[i].touched < t.entries[victim].touched) {
			victim = i
		}
	}
	if bits.OnesCount64(t.entries[victim].values) > 1 {
		// Every remembered name varies: the newcomer, seen once, cannot tell more.
		return
	}
	delete(t.index, t.entries[victim].raw)
	t.entries[victim] = e
	t.index[raw] = victim
}

// ranked is a shown name and the value bits of all its spellings.
type ranked struct {
	name   string
	values uint64
}

// varying names up to n parameters that took more than one value, the most varying first,
// merging the spellings of a name.
func varying(t *paramTable, n int) []string {
	var rs []ranked
	for _, e := range t.entries {
		merged := false
		for i := range rs {
			if rs[i].name == e.name {
				rs[i].values |= e.values
				merged = true
			}
		}
		if !merged {
			rs = append(rs, ranked{name: e.name, values: e.values})
		}
	}
	var names []string
	sort.Slice(rs, func(i, j int) bool {
		ci := bits.OnesCount64(rs[i].values)
		cj := bits.OnesCount64(rs[j].values)
		if ci != cj {
			return ci > cj
		}
		return rs[i].name < rs[j].name
	})
	for _, r := range rs {
		if len(names) == n || bits.OnesCount64(r.values) < 2 {
			break
		}
		names = append(names, r.name)
	}
	return names
}

// cleanName gives a raw name as a log line may show it: decoded when its escapes are valid and
// decode to printable text (so "utm%5Fsource" and "utm_source" are shown, and counted, as one
// name), at most maxNameLen bytes, valid UTF-8, without control characters.
func cleanName(raw string) string {
	name := raw
	if strings.ContainsAny(raw, "%+") {
		if dec, err := url.QueryUnescape(raw); err == nil && !strings.ContainsAny(dec, ctlChars) {
			name = dec
		}
	}
	if len(name) > maxNameLen {
		name = name[:maxNameLen]
	}
	if !utf8.ValidString(name) {
		name = strings.ToValidUTF8(name, "?")
	}
	if strings.ContainsAny(name, ctlChars) {
		name = strings.Map(func(r rune) rune {
			if r < 0x20 || r == 0x7f {
				return '?'
			}
			return r
		}, name)
	}
	return name
}
