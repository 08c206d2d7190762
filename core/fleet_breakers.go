package core

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirproxy/weir/core/store"
)

// breakerSyncEvery is how often an instance reads the open deadlines that others wrote, at
// most, and only while it is fetching from the origin: a fleet stops within about that much
// of the first instance that tripped.
const breakerSyncEvery = 500 * time.Millisecond

// breakerKeyPrefix keeps shared breaker deadlines apart from cache keys, which start with a
// scheme.
const breakerKeyPrefix = "\x00breaker:"

// breakerSync shares open deadlines through a shared store, so that Traefik instances stop
// together; each still decides locally, and a store that fails never blocks a request: reads
// and writes run on goroutines of their own, bounded by timeouts.store.
//
// One breakerSync lives as long as the engine's breaker group, across reloads; the store it
// writes to is the engine's current one.
type breakerSync struct {
	// name is the middleware's, for logs; prefix names it in the shared keys: middlewares
	// sharing a store keep breakers of their own.
	name   string
	prefix string

	// lastRead is the UnixNano of the last read started; reading is 1 while one runs.
	lastRead int64
	reading  int32

	// fleet shares operators' actions on the same breakers.
	fleet *fleet

	// mu guards st and log.
	mu  sync.Mutex
	st  store.Store // nil: process memory, nothing to share
	log func(string)
}

// setStore points the sync and its fleet at st (nil: none), whose changes ch tells (nil:
// none; see changesOf).
func (bs *breakerSync) setStore(st store.Store, ch *storeChanges, log func(string)) {
	bs.mu.Lock()
	bs.st = st
	bs.log = log
	bs.mu.Unlock()
	if bs.fleet != nil {
		bs.fleet.setStore(st, ch, log)
	}
}

func (bs *breakerSync) current() (store.Store, func(string)) {
	bs.mu.Lock()
	st, log := bs.st, bs.log
	bs.mu.Unlock()
	return st, log
}

// tripped publishes a breaker's open deadline; it is the breaker group's OnTrip.
func (bs *breakerSync) tripped(key string, until time.Time, timeout time.Duration) {
	st, log := bs.current()
	if st == nil {
		return
	}
	go func() {
		defer recoverTo(log, "sharing a breaker's deadline")
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		// Written as a hit-for-pass mark, the one kind of entry that holds nothing but times
		// and that the store's codec accepts without an answer (store.Decode); a breaker's
		// key is never a cache key, so no request takes it for one.
		if st.Set(ctx, bs.prefix+key, &store.Entry{Pass: true, Born: until, FreshUntil: until, KeepUntil: until}) == nil && bs.fleet != nil {
			markSeen(bs.fleet.presence, bs.fleet.now())
		}
	}()
}

// observeShared reads key's shared deadline in the background, at most every
// breakerSyncEvery, and opens the local breaker until it when it is later than the local one,
// for breaker.maxOpenFor at most.
func (h *Handler) observeShared(key string, now time.Time) {
	bs := h.e.breakerSync
	if bs == nil || h.mem != nil {
		return
	}
	last := atomic.LoadInt64(&bs.lastRead)
	if now.UnixNano()-last < int64(breakerSyncEvery) || !atomic.CompareAndSwapInt32(&bs.reading, 0, 1) {
		return
	}
	atomic.StoreInt64(&bs.lastRead, now.UnixNano())
	st, log := bs.current()
	// The generation before the read: a breaker that changed meanwhile (closed by hand, with
	// its shared deadline cleared) does not adopt what the read found.
	b := h.e.breakers.Get(key, now)
	gen := b.Generation()
	timeout := h.s.StoreTimeout
	nowFn := h.s.Now
	go func() {
		defer atomic.StoreInt32(&bs.reading, 0)
		defer recoverTo(log, "reading a shared breaker deadline")
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		ent, err := st.Get(ctx, bs.prefix+key)
		if err != nil || ent == nil {
			return
		}
		// A deadline further than breaker.maxOpenFor away, which no trip writes, is adopted
		// capped there (Breaker.ObserveAt), and logged once each time it is.
		read := ent.FreshUntil
		adopted := b.ObserveAt(gen, read, nowFn())
		if !adopted.IsZero() && adopted.Before(read) && log != nil {
			log(fmt.Sprintf("middleware %s: breaker %q: shared open deadline %s is beyond breaker.maxOpenFor; open until %s",
				bs.name, key, read.UTC().Format(time.RFC3339), adopted.UTC().Format(time.RFC3339)))
		}
	}()
}
