// Package entry holds the stored answer: the Entry that the engine builds from an origin's
// answer (httpcache.Policy.NewEntry), that a store keeps under a cache key (core/store, where
// it is named store.Entry) and that the hit path serves, with its hit-path view (Hot), the
// heap it holds (Size) and the bounds on its tags (MaxTags, MaxTagLen, ValidTag).
//
// It lies below both the HTTP caching rules (core/httpcache), which build and read entries,
// and the stores (core/store, core/redisstore), which keep them, so that neither imports the
// other. It imports the standard library only and holds no state.
package entry

import (
	"net/http"
	"strings"
	"time"
)

// Bounds on an entry's tags (Entry.Tags), which come from an answer's Surrogate-Key and
// Cache-Tag fields and, in a shared store, from untrusted bytes (store.Decode). Fastly allows
// surrogate keys of up to 1 KiB and Cloudflare cache tags of up to 1 KiB in a field of
// 16 KiB; Weir keeps fewer and shorter ones, because each tag of each entry is an entry of
// the store's tag index (a member of a set in Redis) for as long as the entry is kept.
const (
	// MaxTags is how many tags an entry carries at most.
	MaxTags = 64
	// MaxTagLen is the longest tag, in bytes.
	MaxTagLen = 256
)

// ValidTag tells whether t may be one of an entry's tags: 1 to MaxTagLen bytes, no control
// character (bytes 0 to 31 and 127: a tag is read from one header field value, and names a
// key in Redis), and no space at either end (the fields' separators and white space are
// trimmed). Any other byte, UTF-8 included, is kept as sent: tags are compared byte for byte.
func ValidTag(t string) bool {
	return t != "" && len(t) <= MaxTagLen && strings.IndexAny(t, ctlChars) < 0 &&
		t[0] != ' ' && t[len(t)-1] != ' '
}

// ctlChars are the control characters, which no tag holds.
const ctlChars = "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f" +
	"\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f\x7f"

// Entry is one stored answer, or a variant index for a key whose answers vary.
//
// An Entry is immutable once handed to a Store: the engine serves it to many requests at once
// and never writes to it; a refresh stores a new Entry.
type Entry struct {
	// Status is the answer's status code. Zero in a variant index.
	Status int
	// Header holds the answer's header fields as the origin sent them, less hop-by-hop
	// fields and Age (which is recomputed on every answer from storage).
	Header http.Header
	// Body is the whole answer body; nil for HEAD answers and variant indexes.
	Body []byte

	// Born is when the answer would have had age zero at the origin: the time it was received
	// less its corrected initial age (RFC 9111 section 4.2.3). Age now is now minus Born.
	Born time.Time
	// FreshUntil is when the answer stops being fresh (Born plus the freshness lifetime).
	// Equal to Born for an answer that must be revalidated before every use.
	FreshUntil time.Time
	// StaleWhileRevalidateUntil ends the window in which a stale answer may be served while a
	// background refresh runs (RFC 5861 section 3). Zero or before FreshUntil: no such window.
	StaleWhileRevalidateUntil time.Time
	// StaleIfErrorUntil ends the window in which a stale answer may be served when the origin
	// fails (RFC 5861 section 4). Zero or before FreshUntil: no such window.
	StaleIfErrorUntil time.Time
	// KeepUntil is when no rule lets the entry be served or revalidated any more; a store may
	// forget it from then on.
	KeepUntil time.Time

	// Vary lists the canonical names of the request header fields the answer varies on, in the
	// answer's order. In a variant index it names the fields that select the variant.
	Vary []string
	// VaryIndex marks an entry that holds no answer, only Vary: the answer is stored under the
	// variant key that those request fields select.
	VaryIndex bool
	// Pass marks a key whose last answer could not be shared (hit-for-pass): until KeepUntil,
	// requests for it go straight to the origin without waiting on each other. It holds no
	// answer.
	Pass bool
	// Fallback marks a copy that a shared store's local fallback kept in process memory while
	// the shared store was lost (store.Fallback): its hits are the fallback's, counted apart
	// (weir_store_fallback_hits_total). Never encoded: no other process ever holds such a copy.
	Fallback bool
	// Tags are the answer's surrogate keys (its Surrogate-Key and Cache-Tag fields, as
	// httpcache.Tags reads them): a purge of one tag drops every entry carrying it
	// (store.Purger.PurgeTag). At most MaxTags, each ValidTag. Nil in a variant index and a
	// hit-for-pass mark, which hold no answer.
	Tags []string

	// BodyPrefix is how many bytes of the array under Body lie in front of it: a decoder's
	// input up to the body (store.Decode), kept alive by Body (Size counts them). Set only by
	// the decoder that made Body a slice of its input; zero otherwise.
	BodyPrefix int

	// Hot holds what the hit path reads, derived from the fields above by Prepare: plain
	// integers and slices, because in Yaegi each call into compiled code (time.Time's
	// methods, a map iteration step) goes through reflection. Zero until Prepare.
	Hot Hot
}

// Hot is an entry's hit-path view.
type Hot struct {
	// BornNano, FreshNano and KeepNano are Born, FreshUntil and KeepUntil in Unix
	// nanoseconds.
	BornNano, FreshNano, KeepNano int64
	// Names and Values are Header's fields in two parallel slices.
	Names  []string
	Values [][]string
}

// Prepare fills e.Hot from e's other fields. Call it before handing e to a Store: stores
// serve entries as they were given (Decode prepares what it decodes).
func (e *Entry) Prepare() {
	MakeHot(e)
}

// MakeHot is e.Prepare as a function, for the engine's miss path: under Yaegi a method call
// goes through a reflective wrapper that a function call does not. The header is copied
// into slices made at their length, an index assignment a field rather than an append.
func MakeHot(e *Entry) {
	h := e.Header
	names := make([]string, len(h))
	values := make([][]string, len(h))
	i := 0
	for k, v := range h {
		names[i] = k
		values[i] = v
		i++
	}
	e.Hot = Hot{
		BornNano: e.Born.UnixNano(), FreshNano: e.FreshUntil.UnixNano(), KeepNano: e.KeepUntil.UnixNano(),
		Names: names, Values: values,
	}
}

// What an entry's parts take on the heap of a 64-bit platform, for Size. Every allocation is
// rounded up to a size class (Go's runtime size classes: 16-byte steps up to 128 bytes, then
// steps of up to about an eighth), so a string or an array of n bytes is counted as
// (n + n/8 + 15) rounded down to 16.
const (
	stringHeader = 16
	sliceHeader  = 24
	// entryStruct is an Entry itself (296 bytes) in its size class.
	entryStruct = 320
	// mapHeader is a map's header and table directory. A map keeps its slots at most 7/8
	// full (13/16 before Go 1.24) and doubles them when it would be fuller, so the slots of
	// an http.Header are counted as the first power of two, at least 8, that holds 5/4 of its
	// keys; each slot holds a string and a []string header and a control byte.
	mapHeader    = 112
	headerSlot   = stringHeader + sliceHeader + 1
	minMapSlots  = 8
	slotsPerFour = 5 // slots for every four keys, at least
)

// Size is the heap an entry holds, for byte budgets: its own struct, the body's whole array
// (and, for a decoded entry, the part of the decoder's input in front of the body, which the body
// keeps alive), the header map's slots, each header name and value and each array of
// values, the Hot copies of the header's slices (Prepare), Vary and Tags. Strings and arrays
// that the entry shares with another are counted in both; none of the engine's entries share
// any.
func (e *Entry) Size() int {
	return SizeOf(e)
}

// SizeOf is e.Size as a function, for the memory store's Set: under Yaegi a method call goes
// through a reflective wrapper that a function call does not.
func SizeOf(e *Entry) int {
	body := cap(e.Body)
	if e.BodyPrefix > 0 {
		body = decodedBodySize(body, e.BodyPrefix)
	}
	n := entryStruct + body
	h := e.Header
	if h != nil {
		slots := minMapSlots
		for slots*4 < len(h)*slotsPerFour {
			slots *= 2
		}
		n += mapHeader + slots*headerSlot
	}
	for k, vs := range h {
		n += (len(k) + len(k)>>3 + 15) &^ 15
		// Arrays of up to 8 strings fill their size class exactly.
		n += cap(vs) * stringHeader
		for _, v := range vs {
			n += (len(v) + len(v)>>3 + 15) &^ 15
		}
	}
	hot := cap(e.Hot.Names)*stringHeader + cap(e.Hot.Values)*sliceHeader
	n += (hot + hot>>3 + 15) &^ 15
	if e.Vary != nil {
		n += varySize(e.Vary)
	}
	if len(e.Tags) > 0 {
		n += tagsSize(e.Tags)
	}
	return n
}

// decodedBodySize is what a decoded entry's body of capacity body keeps alive with the
// prefix bytes of the decoder's input in front of it: that whole input, allocated at its
// exact length (as redigo reads a reply), in its size class: pages of 8 KiB above 32 KiB.
// Out of line, as varySize and tagsSize: under Yaegi every call of Size would otherwise pay
// for the locals of what few entries have.
func decodedBodySize(body, prefix int) int {
	body += prefix
	if body > 32<<10 {
		return (body + 8191) &^ 8191
	}
	return (body + body>>3 + 15) &^ 15
}

// varySize is what an entry's Vary names take: their array and each name's bytes.
func varySize(vary []string) int {
	n := cap(vary) * stringHeader
	for _, v := range vary {
		n += (len(v) + len(v)>>3 + 15) &^ 15
	}
	return n
}

// tagsSize is what an entry's tags take: their array, in its size class past 128 bytes
// (MaxTags string headers fill 1 KiB, a class of its own), and each tag's bytes. A function
// of its own: under Yaegi every call of Size would otherwise pay for its locals.
func tagsSize(tags []string) int {
	n := cap(tags) * stringHeader
	if n > 128 {
		n = (n + n>>3 + 15) &^ 15
	}
	for _, t := range tags {
		n += (len(t) + len(t)>>3 + 15) &^ 15
	}
	return n
}
