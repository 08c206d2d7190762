package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/weirproxy/weir/core/entry"
)

// Layout 3 (encodingBlocks): an entry read from a shared store is decoded on every lookup that
// misses the near cache, interpreted, where each node the interpreter walks costs, and a call
// into compiled code more (docs/yaegi.md). Layouts 1 and 2 give every string its own length,
// so reading them takes a dozen interpreted steps a header field; layout 3 puts each kind of
// string in one block that one compiled call splits (strings.Split), and every number at a
// fixed offset, so that Decode takes two steps a header field (its map entry and its slice),
// and none per byte.
//
//	byte       version (3)
//	byte       flags, as in layout 1
//	byte       which times are present, as in layout 1
//	uint16     Status, big-endian
//	5 × int64  Born, FreshUntil, StaleWhileRevalidateUntil, StaleIfErrorUntil, KeepUntil, as
//	           Unix nanoseconds, big-endian; 0 for a time not present
//	5 × uint32 the lengths of the five blocks that follow, big-endian
//	names      the header field names, sorted, joined by LF
//	values     per field, its values joined by NUL; the fields' joined by LF, in the
//	           names' order
//	Vary       the Vary names, joined by LF
//	tags       the tags, in the entry's order, joined by LF
//	body       the body, which ends the input
//
// No valid name, value, Vary name or tag holds LF, and no value NUL (Decode refuses them),
// so splitting gives every string back; an empty block is no strings. Encode writes layout
// 3 when that holds: names, Vary names and tags not empty, every field with a value, no LF
// in any string and no NUL in a value, a status and a body length that fit. Any other entry
// keeps layout 1 or 2: one with a header field without values, or an invalid one (an empty
// name, LF in a value), which Decode refuses as it did.
//
// A Weir that knows only layouts 1 and 2 reads a layout-3 entry as one of a newer version
// (ErrUnknownVersion): a miss, left in place. During a rolling upgrade its instances fetch
// again what this version wrote, and store it in layout 1 or 2, which this version reads,
// until every instance runs this one.
const encodingBlocks = 3

// Offsets in layout 3.
const (
	blocksStatus = 3
	blocksTimes  = 5
	blocksLens   = blocksTimes + 5*8
	blocksHead   = blocksLens + 5*4
)

// tokenLines are tokenChars and LF: a block of tokens joined by LF holds nothing else.
const tokenLines = tokenChars + "\n"

// blocksFit tells whether layout 3 holds e (see encodingBlocks); names are e.Header's.
func blocksFit(e *Entry, names []string) bool {
	if e.Status < 0 || e.Status > 0xffff {
		return false
	}
	size := 0
	for _, k := range names {
		vs := e.Header[k]
		if k == "" || len(vs) == 0 || strings.IndexByte(k, '\n') >= 0 {
			return false
		}
		size += len(k) + 1
		for _, v := range vs {
			if strings.IndexAny(v, "\n\x00") >= 0 {
				return false
			}
			size += len(v) + 1
		}
	}
	for _, v := range e.Vary {
		if v == "" || strings.IndexByte(v, '\n') >= 0 {
			return false
		}
		size += len(v) + 1
	}
	for _, t := range e.Tags {
		if t == "" || strings.IndexByte(t, '\n') >= 0 {
			return false
		}
		size += len(t) + 1
	}
	// Every block's length fits its uint32.
	return uint64(size) < 1<<32 && uint64(len(e.Body)) < 1<<32
}

// encodeBlocks is Encode in layout 3; names are e.Header's, sorted.
func encodeBlocks(e *Entry, names []string) []byte {
	values := make([]string, len(names))
	for j, k := range names {
		values[j] = strings.Join(e.Header[k], "\x00")
	}
	nb := strings.Join(names, "\n")
	vb := strings.Join(values, "\n")
	yb := strings.Join(e.Vary, "\n")
	tb := strings.Join(e.Tags, "\n")

	b := make([]byte, blocksHead, blocksHead+len(nb)+len(vb)+len(yb)+len(tb)+len(e.Body))
	b[0] = encodingBlocks
	b[1] = flagsOf(e)
	binary.BigEndian.PutUint16(b[blocksStatus:], uint16(e.Status))
	times := [5]time.Time{e.Born, e.FreshUntil, e.StaleWhileRevalidateUntil, e.StaleIfErrorUntil, e.KeepUntil}
	bit := byte(1) // see encodeFields
	for k, t := range times {
		if !t.IsZero() {
			b[2] |= bit
			binary.BigEndian.PutUint64(b[blocksTimes+8*k:], uint64(clampedNano(t)))
		}
		bit <<= 1
	}
	binary.BigEndian.PutUint32(b[blocksLens:], uint32(len(nb)))
	binary.BigEndian.PutUint32(b[blocksLens+4:], uint32(len(vb)))
	binary.BigEndian.PutUint32(b[blocksLens+8:], uint32(len(yb)))
	binary.BigEndian.PutUint32(b[blocksLens+12:], uint32(len(tb)))
	binary.BigEndian.PutUint32(b[blocksLens+16:], uint32(len(e.Body)))
	b = append(b, nb...)
	b = append(b, vb...)
	b = append(b, yb...)
	b = append(b, tb...)
	return append(b, e.Body...)
}

// blocksFixed is layout 3's fixed part, which decodeBlocks reads with one compiled call
// (binary.Read): under Yaegi, reading its nine numbers with binary.BigEndian's methods, each
// call with its slice expression and conversion, costs more.
type blocksFixed struct {
	Version, Flags, Times             uint8
	Status                            uint16
	Born, Fresh, StaleWhile, StaleErr int64
	Keep                              int64
	Names, Values, Vary, Tags, Body   uint32
}

// decodeBlocks is Decode for layout 3, with Decode's rules (valid entries only, see Decode),
// applied to whole blocks where it can: one strings.Trim for every name's characters, one
// strings.Contains for an empty one, one strings.IndexByte for a CR in any value. Hot is
// filled as the fields are read, not by Prepare.
//
// Under Yaegi each node costs, and each value of the function's whole body a frame slot on
// every call: the common case (an answer fresh from its birth, without stale windows) is
// checked in one condition, and what explains a refusal lives in functions of its own
// (headProblem, fieldsProblem).
func decodeBlocks(b []byte) (*Entry, error) {
	var f blocksFixed
	if len(b) < blocksHead {
		return nil, malformed("short layout 3 header", len(b))
	}
	if err := binary.Read(bytes.NewReader(b[:blocksHead]), binary.BigEndian, &f); err != nil {
		return nil, malformed(fmt.Sprintf("layout 3 header unread: %v", err), 0)
	}
	nl := int64(f.Names)
	vl := int64(f.Values)
	// The body's length tells a truncated entry, or one with bytes added, from a whole one.
	if blocksHead+nl+vl+int64(f.Vary)+int64(f.Tags)+int64(f.Body) != int64(len(b)) {
		return nil, malformed("block lengths not the input's", blocksLens)
	}
	born := f.Born
	fresh := f.Fresh
	keep := f.Keep
	if f.Flags&^flagBody != 0 || f.Times != timeBorn|timeFreshUntil|timeKeepUntil || f.Status < 200 || f.Status > 599 ||
		born < minNano || born > fresh || fresh > keep || keep > maxNano {
		if err := headProblem(f.Flags, f.Times, int(f.Status), born, fresh, keep); err != nil {
			return nil, err
		}
	}
	answer := f.Flags&(flagVaryIndex|flagPass) == 0
	e := &Entry{
		Status:     int(f.Status),
		VaryIndex:  f.Flags&flagVaryIndex != 0,
		Pass:       f.Flags&flagPass != 0,
		Born:       time.Unix(0, born),
		FreshUntil: time.Unix(0, fresh),
		KeepUntil:  time.Unix(0, keep),
		Hot:        Hot{BornNano: born, FreshNano: fresh, KeepNano: keep},
	}
	if f.Times&(timeStaleWhileRevalidateUntil|timeStaleIfErrorUntil) != 0 {
		if err := staleWindows(e, f.StaleWhile, f.StaleErr, f.Times, keep); err != nil {
			return nil, err
		}
	}

	// The names and the values, one string; each within len(b), so an int.
	n := int(nl)
	i := blocksHead + n + int(vl)
	hs := string(b[blocksHead:i])
	nb := hs[:n]
	if n == 0 {
		if vl != 0 {
			return nil, malformed("header values without names", blocksHead)
		}
		// Not nil: a nil Names marks an entry not prepared (Prepare).
		e.Hot.Names = []string{}
	} else {
		vb := hs[n:]
		if !answer || strings.Trim(nb, tokenLines) != "" || strings.Contains("\n"+nb+"\n", "\n\n") {
			return nil, fieldsProblem(answer, nb, vb)
		}
		names := strings.Split(nb, "\n")
		vals := strings.Split(vb, "\n")
		if len(vals) != len(names) {
			return nil, malformed("header values not one a field", blocksHead)
		}
		hdr := make(http.Header, len(names))
		values := make([][]string, len(names))
		if strings.IndexAny(vb, "\r\x00") < 0 {
			// A value each: a slice of vals, sharing its array, capped so that an append
			// copies.
			for j, k := range names {
				values[j] = vals[j : j+1 : j+1]
				hdr[k] = values[j]
			}
		} else if err := splitValues(names, vals, values, hdr); err != nil {
			return nil, err
		}
		if len(hdr) != len(names) {
			return nil, malformed("duplicate header field", blocksHead)
		}
		e.Header = hdr
		e.Hot.Names = names
		e.Hot.Values = values
	}

	if f.Vary != 0 || f.Tags != 0 || e.VaryIndex {
		var err error
		if i, err = varyAndTags(e, b, i, int(f.Vary), int(f.Tags), answer); err != nil {
			return nil, err
		}
	}
	if f.Flags&flagBody != 0 {
		if !answer {
			return nil, invalidEntry("a body in an entry without an answer")
		}
		e.Body = b[i:len(b):len(b)]
		e.BodyPrefix = i
	} else if i != len(b) {
		return nil, malformed("body bytes without a body", i)
	}
	// Content-Length, in any case, one value at most, the body's length. Counted in the
	// names lowered: a name holding content-length that is not the one field of that
	// canonical name (another case, a longer name, a second one) takes lengthCheck.
	if n > 0 {
		low := strings.ToLower("\n" + nb + "\n")
		if hasUnsentLine(low) {
			return nil, invalidEntry(fmt.Sprintf("header field names %.64q: one Weir never stores", nb))
		}
		if c := strings.Count(low, "content-length"); c > 0 {
			cl := e.Header["Content-Length"]
			if c != 1 || len(cl) != 1 || cl[0] != strconv.Itoa(len(e.Body)) {
				if err := lengthCheck(e); err != nil {
					return nil, err
				}
			}
		}
	}
	return e, nil
}

// varyAndTags reads layout 3's Vary block, of y bytes, and tags block, of t bytes, from b
// at i into e, and returns where they end. A function of its own, called only for an entry
// with either (or a variant index, which must have Vary): each value of decodeBlocks takes a
// frame slot on every call, and most answers carry neither.
func varyAndTags(e *Entry, b []byte, i, y, t int, answer bool) (int, error) {
	if y > 0 {
		vary := string(b[i : i+y])
		if e.Pass || strings.Trim(vary, tokenLines) != "" || strings.Contains("\n"+vary+"\n", "\n\n") {
			return 0, invalidEntry(fmt.Sprintf("Vary names %.64q in an entry that may hold them", vary))
		}
		e.Vary = strings.Split(vary, "\n")
		i += y
	} else if e.VaryIndex {
		return 0, invalidEntry("variant index without Vary")
	}
	if t > 0 {
		if err := blockTags(e, string(b[i:i+t]), answer); err != nil {
			return 0, err
		}
		i += t
	}
	return i, nil
}

// headProblem says what is wrong with layout 3's fixed part, or nil when it is valid: unknown
// flags; Born, FreshUntil and KeepUntil present, in order and within range (a variant
// index's Born may be later than FreshUntil: it names its generation); a final status for an
// answer, 0 for a mark or an index. The stale windows' ends are checked where they are read
// (staleWindows).
func headProblem(flags, times byte, status int, born, fresh, keep int64) error {
	answer := flags&(flagVaryIndex|flagPass) == 0
	switch {
	case flags&^(flagVaryIndex|flagBody|flagPass) != 0 || times&^timeAll != 0:
		return malformed(fmt.Sprintf("unknown flags %#x %#x", flags, times), 1)
	case flags&(flagVaryIndex|flagPass) == flagVaryIndex|flagPass:
		return invalidEntry("both a variant index and a hit-for-pass mark")
	case answer && (status < 200 || status > 599):
		return invalidEntry(fmt.Sprintf("status %d of a stored answer", status))
	case !answer && status != 0:
		return invalidEntry(fmt.Sprintf("status %d of an entry without an answer", status))
	case times&(timeBorn|timeFreshUntil|timeKeepUntil) != timeBorn|timeFreshUntil|timeKeepUntil:
		return invalidEntry(fmt.Sprintf("times %#x lack Born, FreshUntil or KeepUntil", times))
	case born < minNano || born > maxNano || fresh < minNano || keep > maxNano:
		return invalidEntry("a time out of range")
	case fresh > keep:
		return invalidEntry("FreshUntil after KeepUntil")
	case flags&flagVaryIndex == 0 && born > fresh:
		return invalidEntry("Born after FreshUntil")
	}
	return nil
}

// fieldsProblem says what is wrong with header fields of layout 3: their names nb, their
// values vb.
func fieldsProblem(answer bool, nb, vb string) error {
	if !answer {
		return invalidEntry("header fields in an entry without an answer")
	}
	if strings.IndexByte(vb, '\r') >= 0 {
		return invalidEntry(fmt.Sprintf("header values %.64q", vb))
	}
	return invalidEntry(fmt.Sprintf("header field names %.64q", nb))
}

// staleWindows sets the ends of e's stale windows present in times, swr and sie (layout 3),
// each within minNano and keep.
func staleWindows(e *Entry, swr, sie int64, times uint8, keep int64) error {
	if times&timeStaleWhileRevalidateUntil != 0 {
		if swr < minNano || swr > keep {
			return invalidEntry("StaleWhileRevalidateUntil out of range or after KeepUntil")
		}
		e.StaleWhileRevalidateUntil = time.Unix(0, swr)
	}
	if times&timeStaleIfErrorUntil != 0 {
		if sie < minNano || sie > keep {
			return invalidEntry("StaleIfErrorUntil out of range or after KeepUntil")
		}
		e.StaleIfErrorUntil = time.Unix(0, sie)
	}
	return nil
}

// splitValues fills values and hdr from vals, a field's values joined by NUL each, when
// none holds a CR.
func splitValues(names, vals []string, values [][]string, hdr http.Header) error {
	for j, k := range names {
		if strings.IndexByte(vals[j], '\r') >= 0 {
			return fieldsProblem(true, "", vals[j])
		}
		values[j] = strings.Split(vals[j], "\x00")
		hdr[k] = values[j]
	}
	return nil
}

// blockTags sets e's tags from their block, tb (not empty), if they are valid.
func blockTags(e *Entry, tb string, answer bool) error {
	if !answer {
		return invalidEntry("tags in an entry without an answer")
	}
	tags := strings.Split(tb, "\n")
	if len(tags) > entry.MaxTags {
		return invalidEntry(fmt.Sprintf("%d tags, over %d", len(tags), entry.MaxTags))
	}
	for _, t := range tags {
		if !entry.ValidTag(t) {
			return invalidEntry(fmt.Sprintf("tag %.64q", t))
		}
	}
	e.Tags = tags
	return nil
}

// lengthCheck applies the rule on Content-Length to e, whose names include one ending in
// content-length: every field named Content-Length in any case counted, one value at most,
// the body's length in decimal.
func lengthCheck(e *Entry) error {
	lengths := 0
	value := ""
	for k, vs := range e.Header {
		if strings.EqualFold(k, "Content-Length") {
			lengths += len(vs)
			value = vs[0]
		}
	}
	if lengths > 1 {
		return invalidEntry("more than one Content-Length value")
	}
	if lengths == 1 && value != strconv.Itoa(len(e.Body)) {
		return invalidEntry(fmt.Sprintf("Content-Length %.64q for a body of %d bytes", value, len(e.Body)))
	}
	return nil
}

func invalidEntry(what string) error {
	return fmt.Errorf("%s: %w", what, ErrInvalid)
}
