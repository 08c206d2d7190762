package core

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/weirproxy/weir/core/budget"
	"github.com/weirproxy/weir/core/hostkey"
)

// Request budgets (budgets.*): token buckets per client and per Host, spent before any
// lookup, so that a flood over its budget costs a bucket and a 429, never a lookup or a
// fetch. The mechanism is core/budget; what a client is, and the answer, are decided here.

// reasonOverBudget refuses a request whose client's or Host's bucket is empty: 429, with
// Retry-After when a token comes back. Made before any lookup, so no stale entry answers.
var reasonOverBudget = &reason{name: "over-budget", status: http.StatusTooManyRequests, text: textTooMany}

func init() { registerReasons(reasonOverBudget) }

// BudgetSettings are the request budgets. A zero Client and Host: off, at no cost to the
// hit path.
type BudgetSettings struct {
	// Client is each client's rate; IPv6 clients count as their /64. Zero: no client budget.
	Client budget.Rate
	// Host is each Host's rate, every spelling of a host that Traefik routes alike counted
	// as one (hostkey.Canonical). Zero: no host budget.
	Host budget.Rate
	// Burst is how much of its rate each bucket saves up. Zero: one request's interval.
	Burst time.Duration
	// ClientHeader names the header field that carries the client's address (X-Real-IP), as
	// set by a proxy in front. A value that holds no address counts as the connection's
	// address (weir_client_address_invalid_total). Empty: ForwardedDepth, else the
	// connection's address.
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

// overBudget spends r's tokens and, when its client's or its Host's bucket is empty,
// answers 429 with Retry-After and reports true.
func overBudget(h *Handler, w http.ResponseWriter, r *http.Request) bool {
	b := h.budgets
	now := h.s.Now()
	var wait time.Duration
	if b.client != nil || len(b.s.Exempt) > 0 {
		ip, key, invalid := clientOf(b.s, r)
		if invalid {
			atomic.AddInt64(&h.e.metrics.clientAddrInvalid.N, 1)
		}
		if exempt(b.s.Exempt, ip) {
			return false
		}
		if b.client != nil {
			wait = budget.Take(b.client, key, now)
		}
	}
	if wait == 0 && b.host != nil {
		wait = budget.Take(b.host, hostkey.Canonical(r.Host), now)
	}
	if b.share != nil {
		shareBudgets(b, now)
	}
	if wait == 0 {
		return false
	}
	refuse(h, w, r, nil, statusWeir, refusal{why: reasonOverBudget, retryAfter: wait})
	return true
}

// clientOf is r's client address as budgets.clientSource says where to read it, and the key
// of its bucket: the address itself, or an IPv6 address's /64 (one host's whole allocation).
// A header value that holds no address (clientAddr) is the connection's address instead,
// and invalid says so: whoever can write the field could otherwise make a bucket of each
// value, and a flood of forty values would pass a budget of one forty times. A connection's
// address that does not parse, which Traefik never gives, is its own key and matches no
// exempt network.
//
// Locals, not named results: with named results, TestBudgetClientKeys under yaegi test
// (Yaegi v0.16.1) got the previous call's address and flag back; not reduced to a smaller
// case.
func clientOf(s BudgetSettings, r *http.Request) (net.IP, string, bool) {
	addr := ""
	switch {
	case s.ClientHeader != "":
		addr = r.Header.Get(s.ClientHeader)
	case s.ForwardedDepth > 0:
		addr = forwardedAt(r.Header["X-Forwarded-For"], s.ForwardedDepth)
	}
	var ip net.IP
	invalid := false
	if addr != "" {
		ip = clientAddr(addr)
		invalid = ip == nil
	}
	if ip == nil {
		addr = r.RemoteAddr
		if host, _, err := net.SplitHostPort(addr); err == nil {
			addr = host
		}
		ip = net.ParseIP(strings.Trim(addr, "[]"))
		if ip == nil {
			return nil, addr, invalid
		}
	}
	if v4 := ip.To4(); v4 != nil {
		key := v4.String()
		return v4, key, invalid
	}
	key := ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	return ip, key, invalid
}

// clientAddr is the address a client address field holds: its first element when it is a
// comma-separated list, trimmed, an IPv4 or IPv6 address, bare or with a port ("192.0.2.1",
// "192.0.2.1:4711", "2001:db8::1", "[2001:db8::1]", "[2001:db8::1]:4711"); nil for anything
// else.
func clientAddr(v string) net.IP {
	if i := strings.IndexByte(v, ','); i >= 0 {
		v = v[:i]
	}
	v = strings.TrimSpace(v)
	if ip := net.ParseIP(v); ip != nil {
		return ip
	}
	if host, _, err := net.SplitHostPort(v); err == nil {
		return net.ParseIP(host)
	}
	if len(v) > 2 && v[0] == '[' && v[len(v)-1] == ']' {
		return net.ParseIP(v[1 : len(v)-1])
	}
	return nil
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

// keepBudgets gives e the budgets of s: old's tables when their settings are the same, so
// that a reload does not hand every client a fresh burst, new ones otherwise.
func keepBudgets(e, old *engine, s Settings) error {
	var err error
	e.budgetConf = fmt.Sprintf(" budgets=%+v storeTimeout=%s", s.Budgets, s.StoreTimeout)
	if old.budgetConf == e.budgetConf {
		e.budgets = old.budgets
	} else if e.budgets, err = newBudgets(e.name, s.Budgets, s.StoreTimeout, s.Now); err != nil {
		return err
	}
	if e.budgets != nil && e.budgets.share != nil {
		if e.mem == nil {
			e.budgets.share.setStore(bookerOf(e.store), e.presence, s.Log)
		} else {
			e.budgets.share.setStore(nil, nil, s.Log)
		}
	}
	return nil
}
