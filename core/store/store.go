// Package store holds Weir's stored answers: the Entry that the engine keeps for a cache key,
// the small Store interface that every backend implements, and the in-process memory backend.
//
// A Store knows nothing of HTTP semantics: it maps keys to entries, bounds what it holds, and
// forgets entries once they can no longer be served. The engine decides what is stored and
// how long it may be served.
package store

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// Errors a Store may return.
var (
	// ErrTooLarge is returned by Set for an entry over the store's per-entry limit.
	ErrTooLarge = errors.New("entry over the per-entry size limit")
	// ErrUnavailable is returned while a store cannot be reached.
	ErrUnavailable = errors.New("store unavailable")
)

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

	// bodyPrefix is how many bytes of the array under Body lie in front of it: Decode's
	// input up to the body, kept alive by Body (Size counts them).
	bodyPrefix int

	// Hot holds what the hit path reads, derived from the fields above by Prepare: plain
	// integers and slices, because in Yaegi each call into compiled code (time.Time's
	// methods, a map iteration step) costs a fraction of a microsecond. Zero until Prepare.
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
	e.Hot.BornNano = e.Born.UnixNano()
	e.Hot.FreshNano = e.FreshUntil.UnixNano()
	e.Hot.KeepNano = e.KeepUntil.UnixNano()
	e.Hot.Names = make([]string, 0, len(e.Header))
	e.Hot.Values = make([][]string, 0, len(e.Header))
	for k, v := range e.Header {
		e.Hot.Names = append(e.Hot.Names, k)
		e.Hot.Values = append(e.Hot.Values, v)
	}
}

// What an entry's parts take on the heap of a 64-bit platform, for Size. Every allocation is
// rounded up to a size class (Go's runtime size classes: 16-byte steps up to 128 bytes, then
// steps of up to about an eighth), so a string or an array of n bytes is counted as
// (n + n/8 + 15) rounded down to 16.
const (
	stringHeader = 16
	sliceHeader  = 24
	// entryStruct is an Entry itself (272 bytes) in its size class.
	entryStruct = 288
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
// (and, for a decoded entry, the part of Decode's input in front of the body, which the body
// keeps alive), the header map's slots, each header name and value and each array of
// values, the Hot copies of the header's slices (Prepare), and Vary. Strings and arrays that
// the entry shares with another are counted in both; none of the engine's entries share any.
func (e *Entry) Size() int {
	body := cap(e.Body)
	if e.bodyPrefix > 0 {
		// Decode's whole input, allocated at its exact length (as redigo reads a reply), in
		// its size class: pages of 8 KiB above 32 KiB.
		body += e.bodyPrefix
		if body > 32<<10 {
			body = (body + 8191) &^ 8191
		} else {
			body = (body + body>>3 + 15) &^ 15
		}
	}
	n := entryStruct + body
	if e.Header != nil {
		slots := minMapSlots
		for slots*4 < len(e.Header)*slotsPerFour {
			slots *= 2
		}
		n += mapHeader + slots*headerSlot
	}
	for k, vs := range e.Header {
		n += (len(k) + len(k)>>3 + 15) &^ 15
		// Arrays of up to 8 strings fill their size class exactly.
		n += cap(vs) * stringHeader
		for _, v := range vs {
			n += (len(v) + len(v)>>3 + 15) &^ 15
		}
	}
	hot := cap(e.Hot.Names)*stringHeader + cap(e.Hot.Values)*sliceHeader
	n += (hot + hot>>3 + 15) &^ 15
	n += cap(e.Vary) * stringHeader
	for _, v := range e.Vary {
		n += (len(v) + len(v)>>3 + 15) &^ 15
	}
	return n
}

// Store maps cache keys to entries.
//
// Get returns (nil, nil) for a key with nothing stored. Every method is bounded by its
// context; a Store that cannot answer in time returns an error, and the engine treats the
// lookup as a miss.
type Store interface {
	Get(ctx context.Context, key string) (*Entry, error)
	// Set stores e under key until e.KeepUntil. It may refuse an entry over its per-entry
	// limit with ErrTooLarge.
	Set(ctx context.Context, key string, e *Entry) error
	Delete(ctx context.Context, key string) error
}
