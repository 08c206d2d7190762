package store

import (
	"context"
	"errors"

	"github.com/weirproxy/weir/core/breaker"
)

// Losing a shared store must cost hit ratio, not the whole cache: while it is lost, every
// request would otherwise be a miss and the origin would take all of them, bounded only by
// the limiter. A Fallback keeps caching in process memory for as long as that lasts.

// Fallback is a shared store (a Guard over the remote store) with process memory behind it.
// While the shared store is lost (Down: its breaker is open, or the server no longer
// tracks this process's copies), an entry it did not take is kept in local memory instead,
// within local's budget; Get answers from local memory when the shared store fails;
// Delete and the purges drop local copies too, whatever the shared store answers. Entries in
// local memory are served under the same freshness rules as any, since the engine checks
// every entry it serves, and local memory is what the hit path reads (for a Redis store
// with its near cache on, local memory is the near cache itself).
//
// What local memory keeps while the shared store is lost was seen by no other instance,
// and no other instance's purge reaches it. So when the shared store is back the owner
// empties local memory (Memory.Clear): on the store breaker closing, and, for the near
// cache, when tracking is back (redisstore clears the near cache then, before it trusts a
// copy again). An entry whose write failed just before such an emptying is not kept after
// it: Set reads local memory's epoch before it writes and keeps the entry only in that epoch
// (Memory.SetInEpoch). What it keeps is a copy marked Entry.Fallback: the engine counts
// the hits such copies answer apart (weir_store_fallback_hits_total).
//
// A write the shared store refuses while it is not lost (one slow call) keeps nothing:
// local copies are only for an outage, and only an outage's end empties them.
type Fallback struct {
	remote Store
	// guard is remote when it is a Guard, which ReadShared calls as a function.
	guard *Guard
	local *Memory
	down  func() bool
}

var (
	_ Store  = (*Fallback)(nil)
	_ Purger = (*Fallback)(nil)
)

// NewFallback puts local behind remote. down tells whether remote is lost now; it is
// called only after a write remote refused, so it may take a lock.
func NewFallback(remote Store, local *Memory, down func() bool) *Fallback {
	g, _ := remote.(*Guard)
	return &Fallback{remote: remote, guard: g, local: local, down: down}
}

// Local is the process memory behind the shared store: what the hit path reads.
func (f *Fallback) Local() *Memory {
	return f.local
}

// Get implements Store: the shared store's answer, or, when it fails, local memory's. A
// Redis store with its near cache on looks in local memory itself before it asks the
// server, so a local copy is found there while the breaker is closed.
func (f *Fallback) Get(ctx context.Context, key string) (*Entry, error) {
	return ReadShared(f, ctx, key)
}

// ReadShared is f.Get as a function, for the engine's read of a shared store on the
// request's path: under Yaegi a method called through an interface costs several times a
// function call, and so does each layer's call and frame. So the common case, a guard whose
// breaker is closed and quiet and a read that succeeds, is the guard's Get written out here
// (guardGet); anything else takes sharedOther or sharedFailed.
func ReadShared(f *Fallback, ctx context.Context, key string) (*Entry, error) {
	g := f.guard
	if g == nil {
		return sharedOther(f, ctx, key)
	}
	gen := breaker.Quiet(g.b)
	if gen == 0 {
		return sharedOther(f, ctx, key)
	}
	e, err := g.timed.GetWithin(ctx, key, g.s.Timeout)
	if err != nil || breaker.Quiet(g.b) == 0 {
		return sharedFailed(f, ctx, key, gen, e, err)
	}
	return e, nil
}

// sharedOther is ReadShared through f.remote's Get: without a guard, or with its breaker not
// quiet (open, or counting failures).
func sharedOther(f *Fallback, ctx context.Context, key string) (*Entry, error) {
	e, err := f.remote.Get(ctx, key)
	if err == nil {
		return e, nil
	}
	return sharedLost(f, key, err)
}

// sharedFailed finishes ReadShared after a read let through at the guard's generation gen
// that failed, or that the breaker must hear of: the outcome recorded as guardGet records
// it, then local memory for a read that failed.
func sharedFailed(f *Fallback, ctx context.Context, key string, gen uint64, e *Entry, err error) (*Entry, error) {
	record(f.guard, ctx, breaker.QuietPermit(gen), err)
	if err == nil {
		return e, nil
	}
	return sharedLost(f, key, err)
}

// sharedLost is what ReadShared answers when the shared store failed with err: what local
// memory holds for key, else err.
func sharedLost(f *Fallback, key string, err error) (*Entry, error) {
	if le := Lookup(f.local, key); le != nil {
		return le, nil
	}
	return nil, err
}

// Set implements Store: the shared store takes e, or, while it is lost, local memory keeps
// it. An entry kept locally is a success: it will be served.
func (f *Fallback) Set(ctx context.Context, key string, e *Entry) error {
	epoch := f.local.Epoch()
	err := f.remote.Set(ctx, key, e)
	if err == nil || errors.Is(err, ErrTooLarge) || !f.down() {
		return err
	}
	// A copy marked as the fallback's: e itself goes on to the flight's waiters, and the
	// hits this copy answers are counted apart (Entry.Fallback).
	kept := *e
	kept.Fallback = true
	if f.local.SetInEpoch(key, &kept, epoch) != nil {
		return err
	}
	return nil
}

// Delete implements Store: the local copy goes whatever the shared store answers.
func (f *Fallback) Delete(ctx context.Context, key string) error {
	f.local.Delete(ctx, key)
	return f.remote.Delete(ctx, key)
}

// PurgeKey implements Purger on local memory and the shared store (see fallbackPurge).
func (f *Fallback) PurgeKey(ctx context.Context, key string) (int, error) {
	return fallbackPurge(f, ctx, opPurgeKey, key)
}

// PurgePrefix implements Purger on local memory and the shared store (see fallbackPurge).
func (f *Fallback) PurgePrefix(ctx context.Context, prefix string) (int, error) {
	return fallbackPurge(f, ctx, opPurgePrefix, prefix)
}

// PurgeTag implements Purger on local memory and the shared store (see fallbackPurge).
func (f *Fallback) PurgeTag(ctx context.Context, tag string) (int, error) {
	return fallbackPurge(f, ctx, opPurgeTag, tag)
}

// fallbackPurge purges local memory, then the shared store. It returns the shared store's
// count when it answered (local copies of its entries are copies, not entries of their
// own), and otherwise local memory's with the shared store's error: the purge did not reach
// the other instances, and the caller must say so.
func fallbackPurge(f *Fallback, ctx context.Context, op int, arg string) (int, error) {
	local, _ := purgeBy(f.local, ctx, op, arg)
	p, ok := f.remote.(Purger)
	if !ok {
		return local, ErrPurgeUnsupported
	}
	n, err := purgeBy(p, ctx, op, arg)
	if err != nil {
		return local, err
	}
	return n, nil
}
