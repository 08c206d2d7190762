// Package store holds Weir's stored answers: the Entry that the engine keeps for a cache key,
// the small Store interface that every backend implements, the Purger interface for the
// operator's purges, and the in-process memory backend.
//
// A Store knows nothing of HTTP semantics: it maps keys to entries, bounds what it holds, and
// forgets entries once they can no longer be served. The engine decides what is stored and
// how long it may be served.
package store

import (
	"context"
	"errors"
	"time"

	"github.com/weirproxy/weir/core/entry"
)

// Errors a Store may return.
var (
	// ErrTooLarge is returned by Set for an entry over the store's per-entry limit.
	ErrTooLarge = errors.New("entry over the per-entry size limit")
	// ErrUnavailable is returned while a store cannot be reached.
	ErrUnavailable = errors.New("store unavailable")
	// ErrPurgeUnsupported is returned by a Guard's purges when the store it guards is no
	// Purger.
	ErrPurgeUnsupported = errors.New("store cannot purge")
	// ErrBookUnsupported is returned by a Guard's Book when the store it guards is no
	// Booker.
	ErrBookUnsupported = errors.New("store cannot count budgets")
	// ErrEmptied is returned by Memory.SetInEpoch when the store was emptied since the
	// epoch it was given.
	ErrEmptied = errors.New("memory store emptied since")
)

// Booker counts request budgets shared by several instances, on the store's own clock, so
// that instances whose clocks differ count alike.
type Booker interface {
	// Book adds counts[i] requests, of interval each, to the bucket under keys[i] (a bucket
	// booked no further than the store's now starts from now), and returns how far past the
	// store's now each bucket is booked once they are added. Buckets expire once their
	// bookings have passed.
	Book(ctx context.Context, keys []string, counts []int64, interval time.Duration) ([]time.Duration, error)
}

// Entry is one stored answer, or a variant index for a key whose answers vary: entry.Entry,
// named here too because every store and the engine deal in it.
type Entry = entry.Entry

// Hot is an entry's hit-path view: entry.Hot.
type Hot = entry.Hot

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

// Purger drops many entries at once, for the operator's purges. The memory store, the Redis
// store and a Guard over a Purger implement it. Purges are an operator's rare requests, never
// on a request's path: they may take the store's lock or many round trips.
//
// Each method returns how many entries it dropped: keys under which an entry was stored, a
// variant index and each variant counted apiece, not the stores' own bookkeeping. A store
// outside the process may fail part-way: it then returns what it dropped so far with the
// error, and the purge may be repeated. An entry stored while a purge runs may or may not be
// dropped by it; one stored once the purge has returned is not.
type Purger interface {
	// PurgeKey drops the entry under key and its variants: every key that begins with key
	// and a NUL byte (httpcache.VariantKey under httpcache.GenerationKey), every
	// generation of them. It is what purging one URL takes: the key alone would leave the
	// variants, and the prefix key would drop /ab with /a. key is a primary key, holding no
	// NUL byte (an HTTP request's cannot); the empty key drops only an entry stored under "".
	PurgeKey(ctx context.Context, key string) (int, error)
	// PurgePrefix drops every entry whose key begins with prefix: a host ("http://h/",
	// which a port keeps apart from "http://h:8080/"), a path, or "" for everything the
	// store holds, the engine's own keys (shared breaker deadlines, keys beginning with a
	// NUL byte) included. Keys are compared byte for byte: "http://h/a" drops "http://h/ab"
	// too. Entries of both schemes take two purges ("http://" and "https://").
	PurgePrefix(ctx context.Context, prefix string) (int, error)
	// PurgeTag drops every entry stored with tag among its Tags. An empty tag, which no
	// entry carries, drops nothing. The Redis store may also drop an entry stored with the
	// tag and since replaced, under the same key, by one without it (its index is pruned
	// lazily): a purge then costs that key one more fetch from the origin, never a stale
	// answer.
	PurgeTag(ctx context.Context, tag string) (int, error)
}
