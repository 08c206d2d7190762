package core

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirproxy/weir/core/budget"
	"github.com/weirproxy/weir/core/store"
)

// Request budgets (budgets.*): token buckets per client and per Host, spent before any
// lookup, so that a flood over its budget costs a bucket and a 429, never a lookup or a
// fetch. The mechanism is core/budget; what a client is, and the answer, are decided here.

// detailOverBudget is the Cache-Status detail and the shed reason of a request over budget.
const detailOverBudget = "over-budget"

// BudgetSettings are the request budgets. A zero Client and Host: off, at no cost to the
// hit path.
type BudgetSettings struct {
	// Client is each client's rate; IPv6 clients count as their /64. Zero: no client budget.
	Client budget.Rate
	// Host is each Host's rate. Zero: no host budget.
	Host budget.Rate
	// Burst is how much of its rate each bucket saves up. Zero: one request's interval.
	Burst time.Duration
	// ClientHeader names the header field that carries the client's address (X-Real-IP), as
	// set by a proxy in front. Empty: ForwardedDepth, else the connection's address.
	ClientHeader string
	// ForwardedDepth takes the client's address from X-Forwarded-For, the Nth from the right
	// (Traefik's ipStrategy.depth). Zero: not from X-Forwarded-For.
	ForwardedDepth int
	// Exempt lists networks whose clients no budget counts.
	Exempt []*net.IPNet
	// MaxBuckets bounds each budget's table. Zero: budget.DefaultMaxBuckets.
	MaxBuckets int
	// Shared counts the budgets with every instance sharing the store (budgets.shared), in
	// batches on the store's clock; needs a shared store. False: each instance counts alone.
	Shared bool
}

// on tells whether any budget is set.
func (b BudgetSettings) on() bool {
	return b.Client.N > 0 || b.Host.N > 0
}

// budgets are an engine's budget tables and how a request is counted against them.
type budgets struct {
	s      BudgetSettings
	client *budget.Table
	host   *budget.Table
	// share counts them with the other instances; nil unless budgets.shared.
	share *budgetShare
}

// newBudgets builds the tables of s, or nil when no budget is set. name is the
// middleware's, which names its shared buckets.
func newBudgets(name string, s BudgetSettings, timeout time.Duration, now func() time.Time) (*budgets, error) {
	if !s.on() {
		return nil, nil
	}
	b := &budgets{s: s}
	pending := 0
	if s.Shared {
		pending = budgetSharePending
		b.share = &budgetShare{prefix: budgetKeyPrefix + name + "\x00", timeout: timeout, now: now}
	}
	var err error
	if s.Client.N > 0 {
		if b.client, err = budget.New(budget.Settings{Rate: s.Client, Burst: s.Burst, MaxBuckets: s.MaxBuckets, MaxPending: pending}); err != nil {
			return nil, fmt.Errorf("%w: budgets.client: %v", ErrSettings, err)
		}
	}
	if s.Host.N > 0 {
		if b.host, err = budget.New(budget.Settings{Rate: s.Host, Burst: s.Burst, MaxBuckets: s.MaxBuckets, MaxPending: pending}); err != nil {
			return nil, fmt.Errorf("%w: budgets.host: %v", ErrSettings, err)
		}
	}
	return b, nil
}

// Front is the handler Traefik is given: h itself, or with admission or budgets on, h
// behind them. They decide in front of h.ServeHTTP, before any lookup, so that with both
// off the hit path pays nothing for them, not even a check (docs/yaegi.md: every value of a
// function's body costs each call a frame slot).
func (h *Handler) Front() http.Handler {
	if h.budgets == nil && h.admission == nil {
		return h
	}
	return &front{h: h}
}

// front is a Handler behind admission and its budgets.
type front struct {
	h *Handler
}

// ServeHTTP refuses what admission refuses, answers 429 to a request over budget, and
// serves the others.
func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := f.h
	if h.admission != nil {
		admitted(h, w, r)
		return
	}
	// No admission: budgets, or there would be no front. budgeted written out, one call
	// less.
	if overBudget(h, w, r) {
		return
	}
	h.ServeHTTP(w, r)
}

// budgeted serves r unless it is over budget.
func budgeted(h *Handler, w http.ResponseWriter, r *http.Request) {
	if h.budgets != nil && overBudget(h, w, r) {
		return
	}
	h.ServeHTTP(w, r)
}

// overBudget spends r's tokens and, when its client's or its Host's bucket is empty,
// answers 429 with Retry-After and reports true.
func overBudget(h *Handler, w http.ResponseWriter, r *http.Request) bool {
	b := h.budgets
	now := h.s.Now()
	var wait time.Duration
	if b.client != nil || len(b.s.Exempt) > 0 {
		ip, key := clientOf(b.s, r)
		if exempt(b.s.Exempt, ip) {
			return false
		}
		if b.client != nil {
			wait = budget.Take(b.client, key, now)
		}
	}
	if wait == 0 && b.host != nil {
		wait = budget.Take(b.host, strings.ToLower(r.Host), now)
	}
	if b.share != nil {
		shareBudgets(b, now)
	}
	if wait == 0 {
		return false
	}
	countShed(h.e, detailOverBudget)
	h.write(w, r, &answer{status: http.StatusTooManyRequests, text: "too many requests, retry later",
		cache: "Weir", detail: detailOverBudget, retryAfter: wait})
	return true
}

// clientOf is r's client address as budgets.clientSource says where to read it, and the key
// of its bucket: the address itself, or an IPv6 address's /64 (one host's whole allocation).
// An address that does not parse is its own key and matches no exempt network.
func clientOf(s BudgetSettings, r *http.Request) (net.IP, string) {
	addr := ""
	switch {
	case s.ClientHeader != "":
		addr = strings.TrimSpace(r.Header.Get(s.ClientHeader))
	case s.ForwardedDepth > 0:
		addr = forwardedAt(r.Header["X-Forwarded-For"], s.ForwardedDepth)
	}
	if addr == "" {
		addr = r.RemoteAddr
		if host, _, err := net.SplitHostPort(addr); err == nil {
			addr = host
		}
	}
	ip := net.ParseIP(strings.Trim(addr, "[]"))
	if ip == nil {
		return nil, addr
	}
	if v4 := ip.To4(); v4 != nil {
		return v4, v4.String()
	}
	return ip, ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// forwardedAt is the depth-th address from the right of X-Forwarded-For's values (1: the
// one the nearest proxy added), or "" when there are fewer.
func forwardedAt(values []string, depth int) string {
	var all []string
	for _, v := range values {
		for _, a := range strings.Split(v, ",") {
			all = append(all, strings.TrimSpace(a))
		}
	}
	if depth > len(all) {
		return ""
	}
	return all[len(all)-depth]
}

// exempt tells whether ip is in one of nets.
func exempt(nets []*net.IPNet, ip net.IP) bool {
	if ip == nil {
		return false
	}
	for _, n := range nets {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

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

	// mu guards st and log.
	mu  sync.Mutex
	st  store.Booker // nil: no shared store yet, nothing to share
	log func(string)
}

// setStore gives the share what counts the budgets of the engine's current store (bookerOf):
// nil when it has no shared store.
func (sh *budgetShare) setStore(booker store.Booker, log func(string)) {
	sh.mu.Lock()
	sh.st = booker
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
	st, log := sh.st, sh.log
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
		for i, k := range keys {
			budget.Raise(tb.t, k, ahead[i], now)
		}
	}
}
