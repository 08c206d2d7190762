package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/weirproxy/weir/core/entry"
)

// The binary form of an Entry, for stores outside the process (Redis).
//
// A stored entry may outlive the Weir that wrote it: a rolling upgrade shares one Redis
// between two versions, so the first byte names the layout. An entry this version cannot
// read is reported as an error, which a store turns into a miss; the answer is then fetched
// and stored again in the current layout.
//
// Layout 3, which Encode writes (blocks.go), puts each kind of string in one block, for a
// decoder that runs interpreted. Layouts 1 and 2, which Encode writes only for entries
// layout 3 cannot hold and which this version still reads (varint is encoding/binary's
// zig-zag form, uvarint the unsigned one):
//
//	byte     version (1, or 2 for an entry with tags)
//	byte     flags: 1 VaryIndex, 2 Body present (nil and empty bodies stay apart: HEAD), 4 Pass
//	byte     which times follow: 1 Born, 2 FreshUntil, 4 StaleWhileRevalidateUntil,
//	         8 StaleIfErrorUntil, 16 KeepUntil (a zero time is left out)
//	varint   Status
//	varint   each time present, as Unix nanoseconds, in the order above
//	uvarint  header field count, then per field: name, value count, values
//	uvarint  Vary count, then the names
//	uvarint  version 2 only: tag count, then the tags in the entry's order
//	uvarint  body length, then the body, which ends the input
//
// Strings are a uvarint length and the bytes. Header fields are written in sorted order so
// that one Entry always encodes to the same bytes.
//
// Version 2 added tags, and was written only for entries with tags, so that a Weir that
// knew only version 1 read every untagged entry and took a tagged one for a miss it left in
// place (ErrUnknownVersion) rather than a broken entry it deletes; a Weir that knows only
// versions 1 and 2 takes a layout-3 entry the same way.
//
// Times are Unix nanoseconds, which hold the years 1678 to 2261; Encode clamps a time
// outside them to the nearest end. Decoded times are in the local zone and carry no
// monotonic reading.

// EncodingVersion is the newest layout, which Encode writes for every entry Weir stores
// (encodingBlocks, blocks.go).
const EncodingVersion = encodingBlocks

// encodingUntagged is layout 1, of entries without tags, and encodingTagged layout 2, which
// adds tags: Encode writes them only for entries layout 3 cannot hold, all invalid.
const (
	encodingUntagged = 1
	encodingTagged   = 2
)

const (
	flagVaryIndex = 1
	flagBody      = 2
	flagPass      = 4
)

// The bits of the times byte, in the order Encode and Decode walk the times.
const (
	timeBorn = 1 << iota
	timeFreshUntil
	timeStaleWhileRevalidateUntil
	timeStaleIfErrorUntil
	timeKeepUntil
	timeAll = timeBorn | timeFreshUntil | timeStaleWhileRevalidateUntil | timeStaleIfErrorUntil | timeKeepUntil
)

const (
	// maxFields bounds the header fields, the values of one field and the Vary names that
	// Decode accepts. Every count is also checked against the bytes left, so no input can
	// make Decode allocate more than a small multiple of its own length.
	maxFields = 1 << 16
)

// The range of Unix nanoseconds that an int64 holds (1677-09-21 to 2262-04-11), kept a few
// months inside.
var (
	minNanoTime = time.Date(1678, 1, 1, 0, 0, 0, 0, time.UTC)
	maxNanoTime = time.Date(2261, 12, 31, 0, 0, 0, 0, time.UTC)
	minNano     = minNanoTime.UnixNano()
	maxNano     = maxNanoTime.UnixNano()
)

// tokenChars are the characters of a token (RFC 9110 section 5.6.2): header field names and
// the names in Vary.
const tokenChars = "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// Errors Decode returns, wrapped with where the input went wrong.
var (
	// ErrUnknownVersion marks an entry written in a layout this version does not know.
	ErrUnknownVersion = errors.New("unknown entry version")
	// ErrMalformed marks an entry whose bytes do not follow its layout.
	ErrMalformed = errors.New("malformed entry")
	// ErrInvalid marks an entry whose bytes follow the layout but hold what Weir never
	// stores: an impossible status, a header field that cannot be written, times out of
	// order (see Decode).
	ErrInvalid = errors.New("invalid entry")
)

// Encode returns the binary form of e: layout 3 (EncodingVersion, blocks.go) when its
// strings can be split back out of their blocks, which holds for every valid entry but one
// with a header field without values; otherwise layout 1, or 2 for an entry with tags, in
// which Decode finds what is invalid (an empty name, a value holding LF or NUL) as it did
// before layout 3.
//
// Encode and Decode are written out in few functions, without helper calls per field:
// under Yaegi each call allocates its frame, and the entry's shape is small and fixed.
func Encode(e *Entry) []byte {
	names := make([]string, 0, len(e.Header))
	for k := range e.Header {
		names = append(names, k)
	}
	sort.Strings(names)
	if blocksFit(e, names) {
		return encodeBlocks(e, names)
	}
	return encodeFields(e, names)
}

// encodeFields is Encode in layout 1, or 2 for an entry with tags; names are e.Header's,
// sorted.
func encodeFields(e *Entry, names []string) []byte {
	// Sizing the buffer up front keeps to one allocation; a uvarint takes at most 10 bytes.
	n := 3 + 10 + 5*10 + 10 + 10 + len(e.Body) + 10
	for _, k := range names {
		vs := e.Header[k]
		n += 20 + len(k) + 10*len(vs)
		for _, v := range vs {
			n += len(v)
		}
	}
	for _, v := range e.Vary {
		n += 10 + len(v)
	}
	for _, t := range e.Tags {
		n += 10 + len(t)
	}

	b := make([]byte, 3, n)
	b[0] = encodingUntagged
	if len(e.Tags) > 0 {
		b[0] = encodingTagged
	}
	b[1] = flagsOf(e)
	b = binary.AppendVarint(b, int64(e.Status))
	times := [5]time.Time{e.Born, e.FreshUntil, e.StaleWhileRevalidateUntil, e.StaleIfErrorUntil, e.KeepUntil}
	// bit is a typed variable: Yaegi gives `1 << k` the type int where Go gives it byte, and
	// then panics mixing it with a byte.
	bit := byte(1)
	for _, t := range times {
		if !t.IsZero() {
			b[2] |= bit
			b = binary.AppendVarint(b, clampedNano(t))
		}
		bit <<= 1
	}

	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, k := range names {
		vs := e.Header[k]
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, v := range vs {
			b = binary.AppendUvarint(b, uint64(len(v)))
			b = append(b, v...)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(e.Vary)))
	for _, v := range e.Vary {
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	if len(e.Tags) > 0 {
		b = binary.AppendUvarint(b, uint64(len(e.Tags)))
		for _, t := range e.Tags {
			b = binary.AppendUvarint(b, uint64(len(t)))
			b = append(b, t...)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(e.Body)))
	return append(b, e.Body...)
}

// flagsOf is e's flags byte.
func flagsOf(e *Entry) byte {
	var f byte
	if e.Pass {
		f |= flagPass
	}
	if e.VaryIndex {
		f |= flagVaryIndex
	}
	if e.Body != nil {
		f |= flagBody
	}
	return f
}

// clampedNano is t in Unix nanoseconds, clamped to the times Encode writes (minNanoTime to
// maxNanoTime).
func clampedNano(t time.Time) int64 {
	if t.Before(minNanoTime) {
		t = minNanoTime
	} else if t.After(maxNanoTime) {
		t = maxNanoTime
	}
	return t.UnixNano()
}

// Decode reads an entry written by Encode. It returns an error wrapping ErrUnknownVersion or
// ErrMalformed for input it cannot read, and ErrInvalid for input that reads but is not an
// entry Weir writes (see validity below), and never panics. Every count and length is
// checked against the bytes left before anything is allocated for it, so no input makes
// Decode allocate more than a small multiple of its length.
//
// What a store holds is untrusted: another process may write it, a rolling upgrade may mix
// versions, memory or disks fail. An entry Decode returns is valid:
//   - an answer (neither Pass nor VaryIndex) has a final status, 200 to 599 (Weir stores no
//     1xx; net/http panics on a status it cannot write, out of 100 to 999); a hit-for-pass
//     mark and a variant index have status 0, no header fields and no body, and an index
//     names at least one field in Vary; no entry is both;
//   - header field names and Vary names are tokens (RFC 9110 section 5.1), header values
//     hold no CR, LF or NUL (section 5.5), and a Content-Length field, in any case, is one
//     value, the body's length in decimal, as Weir writes it;
//   - no header field with a value is one Weir never stores, in any case (unsentNames):
//     Set-Cookie and the hop-by-hop fields, which whoever can write the store would
//     otherwise send every client of the URL;
//   - an answer carries at most entry.MaxTags tags, each entry.ValidTag (a tag listed twice
//     is accepted: it costs the index nothing, and finding it would cost every decode); a
//     mark and an index carry none;
//   - Born, FreshUntil and KeepUntil are present, FreshUntil is not after KeepUntil, nor is a
//     stale window's end, and an answer or mark is not fresh before it is born (a variant
//     index's Born names its generation and may be later); every time is within what Encode
//     writes (minNanoTime to maxNanoTime).
//
// The returned entry's Body shares b's memory: b must not be changed afterwards.
//
// An entry read from a shared store is decoded on every lookup that misses the near cache,
// interpreted: layout 3 is read by decodeBlocks, written for it. An entry of layout 1 or 2
// (written by a previous Weir) is read the short way first (decodeFast); what that way does
// not take, valid or not, decodeChecked reads, which says what is wrong. In layout 3 an
// entry both malformed and invalid may be reported as either.
func Decode(b []byte) (*Entry, error) {
	if len(b) > 0 && b[0] == encodingBlocks {
		return decodeBlocks(b)
	}
	e := decodeFast(b)
	if e == nil {
		var err error
		if e, err = decodeChecked(b); err != nil {
			return nil, err
		}
	}
	// A field without values sends nothing: layouts 1 and 2 hold such fields.
	for k, vs := range e.Header {
		if len(vs) > 0 && unsentNames[strings.ToLower(k)] {
			return nil, invalidEntry(fmt.Sprintf("header field %.64q, which Weir never stores", k))
		}
	}
	return e, nil
}

// unsentNames are the header fields, lowercase, that Weir never stores and Decode refuses
// in any case: Set-Cookie (an answer setting a cookie is never shared: httpcache.Policy's
// Storable) and the hop-by-hop fields (RFC 9110 section 7.6.1; httpcache's unstoredHeader),
// whose values another client would be sent. Anyone who can write the shared store could
// otherwise set a cookie on every client of a URL or break its framing. A field named in
// Connection is hop-by-hop too: Connection itself is refused, and the proxy in front of
// Weir removes what it names before Weir stores the answer.
var unsentNames = map[string]bool{
	"set-cookie": true, "connection": true, "keep-alive": true, "proxy-connection": true, "te": true,
	"trailer": true, "transfer-encoding": true, "upgrade": true, "proxy-authenticate": true,
}

// hasUnsentLine tells whether any of unsentNames is a line of low, a lowercase string of
// names, one a line, that begins and ends with LF: one call for layout 3's whole block of
// names. One native call, since under Yaegi each call costs thousands of instructions: a
// Replacer's trie finds any of the nine lines in one pass and returns its input unchanged
// when it finds none; a regexp's alternation, and nine substring searches, each cost a
// decode more (docs/benchmarks.md, "Decoding a stored entry").
func hasUnsentLine(low string) bool {
	return unsentLines.Replace(low) != low
}

// unsentLines replaces each of unsentNames, as a whole line, with nothing (hasUnsentLine).
var unsentLines = strings.NewReplacer("\nset-cookie\n", "", "\nconnection\n", "", "\nkeep-alive\n", "",
	"\nproxy-connection\n", "", "\nte\n", "", "\ntrailer\n", "", "\ntransfer-encoding\n", "",
	"\nupgrade\n", "", "\nproxy-authenticate\n", "")

// decodeFast reads the entries Weir writes in the fewest interpreted steps and returns nil
// for anything else: a layout-1 entry whose counts and string lengths take one byte each
// (a header value two), at most 127 header fields, Vary names and values per field, whose
// Born is not after FreshUntil. It accepts an input only if decodeChecked returns the same
// entry for it (FuzzDecode checks it), whose rules it applies in another order, with fewer
// steps: one range check per time where order implies the others, one strings.Trim of the
// names joined, one map lookup for Content-Length, the map's size for duplicate names. Hot
// is filled as the fields are read, in the order they are stored, not by Prepare.
//
// Every string is checked to end before the input does, with at least one byte after it
// (the body's length ends every entry), so the next single byte read is in range.
func decodeFast(b []byte) *Entry {
	end := len(b)
	if end < 12 || b[0] != encodingUntagged || b[1]&^(flagVaryIndex|flagBody|flagPass) != 0 ||
		b[1]&(flagVaryIndex|flagPass) == flagVaryIndex|flagPass {
		return nil
	}
	times := b[2]
	if times&^timeAll != 0 || times&(timeBorn|timeFreshUntil|timeKeepUntil) != timeBorn|timeFreshUntil|timeKeepUntil {
		return nil
	}
	e := &Entry{VaryIndex: b[1]&flagVaryIndex != 0, Pass: b[1]&flagPass != 0}
	answer := b[1]&(flagVaryIndex|flagPass) == 0
	status, n := binary.Varint(b[3:])
	if n <= 0 || (answer && (status < 200 || status > 599)) || (!answer && status != 0) {
		return nil
	}
	e.Status = int(status)
	i := 3 + n
	born, n := binary.Varint(b[i:])
	if n <= 0 {
		return nil
	}
	i += n
	fresh, n := binary.Varint(b[i:])
	if n <= 0 {
		return nil
	}
	i += n
	var swr, sie int64
	if times&timeStaleWhileRevalidateUntil != 0 {
		swr, n = binary.Varint(b[i:])
		if n <= 0 {
			return nil
		}
		i += n
	}
	if times&timeStaleIfErrorUntil != 0 {
		sie, n = binary.Varint(b[i:])
		if n <= 0 {
			return nil
		}
		i += n
	}
	keep, n := binary.Varint(b[i:])
	// In order and within range: Born, FreshUntil and KeepUntil, and each stale window's
	// end, when present, within minNano and KeepUntil.
	if n <= 0 || i+n >= end || born < minNano || born > fresh || fresh > keep || keep > maxNano {
		return nil
	}
	i += n
	if times&timeStaleWhileRevalidateUntil != 0 {
		if swr < minNano || swr > keep {
			return nil
		}
		e.StaleWhileRevalidateUntil = time.Unix(0, swr)
	}
	if times&timeStaleIfErrorUntil != 0 {
		if sie < minNano || sie > keep {
			return nil
		}
		e.StaleIfErrorUntil = time.Unix(0, sie)
	}
	e.Born = time.Unix(0, born)
	e.FreshUntil = time.Unix(0, fresh)
	e.KeepUntil = time.Unix(0, keep)
	e.Hot.BornNano = born
	e.Hot.FreshNano = fresh
	e.Hot.KeepNano = keep

	// Header fields: a count, then per field its name and its values. i < end holds before
	// every byte read.
	nf := int(b[i])
	i++
	if nf >= 0x80 || i >= end || (nf > 0 && !answer) {
		return nil
	}
	names := make([]string, nf)
	values := make([][]string, nf)
	e.Hot.Names = names
	e.Hot.Values = values
	if nf > 0 {
		e.Header = make(http.Header, nf)
	}
	for j := range names {
		l := int(b[i])
		if l == 0 || l >= 0x80 || i+l+1 >= end {
			return nil
		}
		names[j] = string(b[i+1 : i+l+1])
		i += l + 1
		vs := make([]string, b[i])
		i++
		if len(vs) >= 0x80 || i >= end {
			return nil
		}
		for k := range vs {
			l = int(b[i])
			if l >= 0x80 {
				// Two bytes: a value of 128 bytes to 16 KiB.
				if i+2 >= end || b[i+1] >= 0x80 {
					return nil
				}
				i++
				l = l&0x7f | int(b[i])<<7
			}
			if i+l+1 >= end {
				return nil
			}
			vs[k] = string(b[i+1 : i+l+1])
			i += l + 1
			if strings.IndexAny(vs[k], "\r\n\x00") >= 0 {
				return nil
			}
		}
		values[j] = vs
		e.Header[names[j]] = vs
	}
	// A name read twice leaves the map smaller; one token check for every name.
	if len(e.Header) != nf || strings.Trim(strings.Join(names, ""), tokenChars) != "" {
		return nil
	}

	nv := int(b[i])
	i++
	if nv >= 0x80 || i >= end || (nv > 0 && e.Pass) || (nv == 0 && e.VaryIndex) {
		return nil
	}
	if nv > 0 {
		e.Vary = make([]string, nv)
		for j := range e.Vary {
			l := int(b[i])
			if l == 0 || l >= 0x80 || i+l+1 >= end {
				return nil
			}
			e.Vary[j] = string(b[i+1 : i+l+1])
			i += l + 1
		}
		if strings.Trim(strings.Join(e.Vary, ""), tokenChars) != "" {
			return nil
		}
	}

	size, n := binary.Uvarint(b[i:])
	if n <= 0 || size != uint64(end-i-n) {
		return nil
	}
	i += n
	if b[1]&flagBody != 0 {
		if !answer {
			return nil
		}
		e.Body = b[i:end:end]
		e.BodyPrefix = i
	} else if size != 0 {
		return nil
	}
	// Content-Length, in any case, one value at most, the body's length: found in the
	// names joined and lowered, it must be the one field of that canonical name.
	if nf > 0 && strings.Contains(strings.ToLower(strings.Join(names, "\x00")), "content-length") {
		cl := e.Header["Content-Length"]
		if cl == nil || strings.Count(strings.ToLower(strings.Join(names, "\x00")), "content-length") != 1 ||
			len(cl) > 1 || (len(cl) == 1 && cl[0] != strconv.Itoa(len(e.Body))) {
			return nil
		}
	}
	return e
}

// decodeChecked is Decode for any input: every layout, every check, an error saying what
// is wrong.
func decodeChecked(b []byte) (*Entry, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("empty input: %w", ErrMalformed)
	}
	if b[0] != encodingUntagged && b[0] != encodingTagged {
		return nil, fmt.Errorf("version %d: %w", b[0], ErrUnknownVersion)
	}
	if len(b) < 3 {
		return nil, malformed("short header", len(b))
	}
	flags, times := b[1], b[2]
	if flags&^(flagVaryIndex|flagBody|flagPass) != 0 || times&^timeAll != 0 {
		return nil, malformed(fmt.Sprintf("unknown flags %#x %#x", flags, times), 1)
	}
	e := &Entry{VaryIndex: flags&flagVaryIndex != 0, Pass: flags&flagPass != 0}
	answer := !e.VaryIndex && !e.Pass
	// invalid records the first reason the entry is not valid; it is reported once the
	// input has been read whole, so that input that does not follow the layout is reported
	// as malformed whatever else is wrong with it.
	invalid := ""
	if e.VaryIndex && e.Pass {
		invalid = "both a variant index and a hit-for-pass mark"
	}
	if times&(timeBorn|timeFreshUntil|timeKeepUntil) != timeBorn|timeFreshUntil|timeKeepUntil && invalid == "" {
		invalid = fmt.Sprintf("times %#x lack Born, FreshUntil or KeepUntil", times)
	}
	i := 3

	status, n := binary.Varint(b[i:])
	if n <= 0 || int64(int(status)) != status {
		return nil, malformed("bad status", i)
	}
	i += n
	e.Status = int(status)
	if answer && (status < 200 || status > 599) && invalid == "" {
		invalid = fmt.Sprintf("status %d of a stored answer", status)
	}
	if !answer && status != 0 && invalid == "" {
		invalid = fmt.Sprintf("status %d of an entry without an answer", status)
	}
	// nanos holds the times read, in the order of the times byte; absent ones stay 0.
	var nanos [5]int64
	if times != 0 {
		fields := [5]*time.Time{&e.Born, &e.FreshUntil, &e.StaleWhileRevalidateUntil, &e.StaleIfErrorUntil, &e.KeepUntil}
		bit := byte(1) // see Encode
		for k, f := range fields {
			present := times&bit != 0
			bit <<= 1
			if !present {
				continue
			}
			v, n := binary.Varint(b[i:])
			if n <= 0 {
				return nil, malformed("bad time", i)
			}
			i += n
			if (v < minNano || v > maxNano) && invalid == "" {
				invalid = fmt.Sprintf("time %d out of range", v)
			}
			nanos[k] = v
			*f = time.Unix(0, v)
		}
	}
	if invalid == "" {
		born, fresh, swr, sie, keep := nanos[0], nanos[1], nanos[2], nanos[3], nanos[4]
		switch {
		case fresh > keep:
			invalid = "FreshUntil after KeepUntil"
		case !e.VaryIndex && born > fresh:
			invalid = "Born after FreshUntil"
		case times&timeStaleWhileRevalidateUntil != 0 && swr > keep:
			invalid = "StaleWhileRevalidateUntil after KeepUntil"
		case times&timeStaleIfErrorUntil != 0 && sie > keep:
			invalid = "StaleIfErrorUntil after KeepUntil"
		}
	}

	// A header field takes at least two bytes (an empty name, no values).
	nf, n := binary.Uvarint(b[i:])
	if n <= 0 || nf > maxFields || 2*nf > uint64(len(b)-i-n) {
		return nil, malformed("bad header field count", i)
	}
	i += n
	if nf > 0 {
		e.Header = make(http.Header, nf)
		if !answer && invalid == "" {
			invalid = "header fields in an entry without an answer"
		}
	}
	// contentLength is a Content-Length value, checked against the body once it is read;
	// lengths counts the values of fields named Content-Length in any case.
	contentLength := ""
	lengths := 0
	for ; nf > 0; nf-- {
		l, n := binary.Uvarint(b[i:])
		if n <= 0 || l > uint64(len(b)-i-n) {
			return nil, malformed("bad header field name", i)
		}
		i += n
		k := string(b[i : i+int(l)])
		i += int(l)
		if _, dup := e.Header[k]; dup {
			return nil, malformed("duplicate header field", i)
		}
		// strings.Trim with the token characters as the cutset leaves nothing of a token and
		// something of anything else: one compiled call rather than a loop interpreted byte
		// by byte.
		if (k == "" || strings.Trim(k, tokenChars) != "") && invalid == "" {
			invalid = fmt.Sprintf("header field name %.64q", k)
		}
		nv, n := binary.Uvarint(b[i:])
		if n <= 0 || nv > maxFields || nv > uint64(len(b)-i-n) {
			return nil, malformed("bad header value count", i)
		}
		i += n
		vs := make([]string, nv)
		for j := range vs {
			l, n := binary.Uvarint(b[i:])
			if n <= 0 || l > uint64(len(b)-i-n) {
				return nil, malformed("bad header value", i)
			}
			i += n
			vs[j] = string(b[i : i+int(l)])
			i += int(l)
			if strings.IndexAny(vs[j], "\r\n\x00") >= 0 && invalid == "" {
				invalid = fmt.Sprintf("header field %.64q value %.64q", k, vs[j])
			}
		}
		e.Header[k] = vs
		if len(k) == len("Content-Length") && strings.EqualFold(k, "Content-Length") && len(vs) > 0 {
			lengths += len(vs)
			contentLength = vs[0]
		}
	}

	nv, n := binary.Uvarint(b[i:])
	if n <= 0 || nv > maxFields || nv > uint64(len(b)-i-n) {
		return nil, malformed("bad Vary count", i)
	}
	i += n
	if nv > 0 {
		e.Vary = make([]string, nv)
		if e.Pass && invalid == "" {
			invalid = "Vary in a hit-for-pass mark"
		}
	} else if e.VaryIndex && invalid == "" {
		invalid = "variant index without Vary"
	}
	for j := range e.Vary {
		l, n := binary.Uvarint(b[i:])
		if n <= 0 || l > uint64(len(b)-i-n) {
			return nil, malformed("bad Vary name", i)
		}
		i += n
		e.Vary[j] = string(b[i : i+int(l)])
		i += int(l)
		if (e.Vary[j] == "" || strings.Trim(e.Vary[j], tokenChars) != "") && invalid == "" {
			invalid = fmt.Sprintf("Vary name %.64q", e.Vary[j])
		}
	}

	if b[0] == encodingTagged {
		// A tag takes at least two bytes (its length and one byte), like a header field.
		nt, n := binary.Uvarint(b[i:])
		if n <= 0 || nt > maxFields || 2*nt > uint64(len(b)-i-n) {
			return nil, malformed("bad tag count", i)
		}
		i += n
		if nt > 0 {
			e.Tags = make([]string, nt)
			if nt > entry.MaxTags && invalid == "" {
				invalid = fmt.Sprintf("%d tags, over %d", nt, entry.MaxTags)
			}
			if !answer && invalid == "" {
				invalid = "tags in an entry without an answer"
			}
		}
		for j := range e.Tags {
			l, n := binary.Uvarint(b[i:])
			if n <= 0 || l > uint64(len(b)-i-n) {
				return nil, malformed("bad tag", i)
			}
			i += n
			e.Tags[j] = string(b[i : i+int(l)])
			i += int(l)
			if !entry.ValidTag(e.Tags[j]) && invalid == "" {
				invalid = fmt.Sprintf("tag %.64q", e.Tags[j])
			}
		}
	}

	size, n := binary.Uvarint(b[i:])
	if n <= 0 || size != uint64(len(b)-i-n) {
		return nil, malformed("body length not the bytes left", i)
	}
	i += n
	if flags&flagBody != 0 {
		e.Body = b[i:len(b):len(b)]
		e.BodyPrefix = i
		if !answer && invalid == "" {
			invalid = "a body in an entry without an answer"
		}
	} else if size != 0 {
		return nil, malformed("body bytes without a body", i)
	}
	if lengths > 1 && invalid == "" {
		invalid = "more than one Content-Length value"
	}
	if lengths == 1 && contentLength != strconv.Itoa(len(e.Body)) && invalid == "" {
		invalid = fmt.Sprintf("Content-Length %.64q for a body of %d bytes", contentLength, len(e.Body))
	}
	if invalid != "" {
		return nil, fmt.Errorf("%s: %w", invalid, ErrInvalid)
	}
	e.Prepare()
	return e, nil
}

func malformed(what string, offset int) error {
	return fmt.Errorf("%s at offset %d: %w", what, offset, ErrMalformed)
}
