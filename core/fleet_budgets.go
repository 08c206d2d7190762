package core

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirproxy/weir/core/budget"
	"github.com/weirproxy/weir/core/store"
)

// Shared budgets (budgets.shared): each instance decides from its own buckets, and counts
// what it allowed, key by key; at most every budgetShareEvery, a request that finds the
// count due hands it to a goroutine, which adds it to the store's buckets in one call
// (store.Booker: on the store's clock) and books each local bucket as far ahead as the
// store's says, every instance's requests included. No request waits for the store, and a
// store that fails or is slow leaves the local buckets to decide alone: never closed.
const (
	// budgetShareEvery is how often an instance adds its counts to the store, at most: a
	// fleet of n instances allows a key at most n bursts and n times this much of its
	// rate before each learns what the others allowed.
	budgetShareEvery = 200 * time.Millisecond
	// budgetSharePending bounds the keys counted between two shares, per budget; further
	// keys count locally only until the next.
	budgetSharePending = 1000
	// budgetKeyPrefix keeps shared buckets apart from cache keys, which start with a scheme.
	budgetKeyPrefix = "\x00budget:"
	// budgetBookedBeyond caps how far past a bucket's horizon (budget.Horizon) a booking
	// read from the store raises it: whoever can write the store cannot keep a key refused
	// here for longer than that from one read (a year ahead, with a Retry-After to match).
	// The fleet's own bookings stay within it: the others' bursts of one share.
	budgetBookedBeyond = time.Minute
)

// budgetShare is the sharing of one engine's budgets.
type budgetShare struct {
	// prefix names the middleware in the shared keys: middlewares sharing a store keep
	// budgets of their own.
	prefix  string
	timeout time.Duration
	now     func() time.Time

	// last is the UnixNano of the last share started; sharing is 1 while one runs.
	last    int64
	sharing int32

	// mu guards st, seen and log.
	mu  sync.Mutex
	st  store.Booker // nil: no shared store yet, nothing to share
	log func(string)
	// seen is the engine's entry in the presence record, which a share marks.
	seen *presence
}

// setStore gives the share what counts the budgets of the engine's current store (bookerOf):
// nil when it has no shared store; and seen, the engine's presence.
func (sh *budgetShare) setStore(booker store.Booker, seen *presence, log func(string)) {
	sh.mu.Lock()
	sh.st = booker
	sh.seen = seen
	sh.log = log
	sh.mu.Unlock()
}

// shareBudgets starts a share of b's counts when one is due and none runs.
func shareBudgets(b *budgets, now time.Time) {
	sh := b.share
	at := now.UnixNano()
	last := atomic.LoadInt64(&sh.last)
	if at-last < int64(budgetShareEvery) || !atomic.CompareAndSwapInt64(&sh.last, last, at) {
		return
	}
	if !atomic.CompareAndSwapInt32(&sh.sharing, 0, 1) {
		return
	}
	go func() {
		defer atomic.StoreInt32(&sh.sharing, 0)
		flushBudgets(b)
	}()
}

// flushBudgets adds each budget's counts since the last share to the store and books the
// local buckets as far ahead as the store's. A failed call leaves the local buckets as they
// are; its counts are not sent again.
func flushBudgets(b *budgets) {
	sh := b.share
	sh.mu.Lock()
	st, log, seen := sh.st, sh.log, sh.seen
	sh.mu.Unlock()
	defer recoverTo(log, "sharing request budgets")
	if st == nil {
		return
	}
	tables := []struct {
		name string
		t    *budget.Table
	}{{"client", b.client}, {"host", b.host}}
	for _, tb := range tables {
		if tb.t == nil {
			continue
		}
		keys, counts := budget.Drain(tb.t)
		if len(keys) == 0 {
			continue
		}
		shared := make([]string, len(keys))
		for i, k := range keys {
			shared[i] = sh.prefix + tb.name + "\x00" + k
		}
		ctx, cancel := context.WithTimeout(context.Background(), sh.timeout)
		ahead, err := st.Book(ctx, shared, counts, budget.Interval(tb.t))
		cancel()
		if err != nil || len(ahead) != len(keys) {
			continue
		}
		now := sh.now()
		markSeen(seen, now)
		most := budget.Horizon(tb.t) + budgetBookedBeyond
		for i, k := range keys {
			a := ahead[i]
			if a > most {
				a = most
			}
			if a > 0 {
				budget.Raise(tb.t, k, a, now)
			}
		}
	}
}
