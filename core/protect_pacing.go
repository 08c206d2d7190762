package core

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirproxy/weir/core/budget"
	"github.com/weirproxy/weir/core/hostkey"
	"github.com/weirproxy/weir/core/wait"
)

// Pacing an origin (pacing): the requests that reach a paced host or domain are spaced
// evenly, one every period/N, each waiting for its turn in the gate (at most
// limiter.maxQueueWait) after the breaker has let it through. A turn is a core/budget
// bucket without a burst, booked ahead by Reserve.
//
// An operator sets, changes and clears paces through the admin (operator.go); a pace set so wins
// over the configuration's for its name until cleared, survives reloads, and reaches the
// other instances sharing the store through the control record (fleet_control.go).

// reasonPaced refuses a request whose host's turn lies past limiter.maxQueueWait. A stale
// entry within either window answers instead: the host is held back, not down.
var reasonPaced = &reason{name: "paced", status: http.StatusServiceUnavailable, text: textUnavailable, stale: staleAny}

func init() { registerReasons(reasonPaced) }

// operatorPacesMax bounds the paces an operator may set on one middleware.
const operatorPacesMax = 256

// Pace is one entry of pacing: a host, or a domain and every host under it, and its rate.
type Pace struct {
	// Name is a host ("feeds.example.com") or a domain ("example.com"), lower case.
	Name string
	// Rate is how many requests reach it per period, evenly spaced.
	Rate budget.Rate
}

// PaceName reads the name of a pacing entry as pacing and the admin take it: a host or a
// domain, without port, path or space, its case and a final dot dropped. It reports false
// for anything else.
func PaceName(s string) (string, bool) {
	name := strings.ToLower(strings.TrimSuffix(strings.TrimSpace(s), "."))
	if name == "" || strings.ContainsAny(name, "/:= \t?#@[]") {
		return "", false
	}
	return name, true
}

// pacing is the paces in force for one middleware: those of the configuration and those an
// operator set. One pacing lives as long as the middleware, across reloads, and the handlers
// of every router and every configuration share it, so that an operator's pace applies to
// all of them at once.
type pacing struct {
	// on is 1 while any pace is in force, else 0: pass and enter load it before anything
	// else, so that a middleware without pacing pays one atomic load and no call.
	on int32
	// current holds the *paceTable in force, replaced whole on every change and read
	// without a lock.
	current atomic.Value

	// mu guards the fields below, and orders the replacements of current.
	mu sync.Mutex
	// configured are pacing's rates by name, operator those an operator set.
	configured map[string]budget.Rate
	operator   map[string]budget.Rate
	// maxWait and afterFunc are the limiter's as configured (afterFunc: tests' timer).
	maxWait   time.Duration
	afterFunc func(d time.Duration, f func()) func() bool
}

// paceTable is one state of pacing, never changed once built: a table of one bucket for
// each entry, by name.
type paceTable struct {
	byName map[string]*budget.Table
	// rates are the rates byName's tables were built with, maxWait how far ahead they book.
	rates   map[string]budget.Rate
	maxWait time.Duration
	// afterFunc is limiter's injected timer (tests); nil: a real timer.
	afterFunc func(d time.Duration, f func()) func() bool
}

// newPacing is a middleware's pacing, with no pace in force.
func newPacing() *pacing {
	p := &pacing{configured: map[string]budget.Rate{}, operator: map[string]budget.Rate{}}
	p.current.Store(&paceTable{byName: map[string]*budget.Table{}, rates: map[string]budget.Rate{}})
	return p
}

// paces is the table in force.
func paces(p *pacing) *paceTable {
	return p.current.Load().(*paceTable)
}

// pacesByName is list by name.
func pacesByName(list []Pace) map[string]budget.Rate {
	m := make(map[string]budget.Rate, len(list))
	for _, e := range list {
		m[e.Name] = e.Rate
	}
	return m
}

// buildPaceTable builds the table of configured and operator (which wins for a name), each
// booking at most maxWait ahead. A name whose rate old already paces at the same maxWait
// keeps old's bucket, so that a change elsewhere hands it no free turn.
func buildPaceTable(old *paceTable, configured, operator map[string]budget.Rate, maxWait time.Duration,
	afterFunc func(d time.Duration, f func()) func() bool) (*paceTable, error) {
	merged := make(map[string]budget.Rate, len(configured)+len(operator))
	for name, r := range configured {
		merged[name] = r
	}
	for name, r := range operator {
		merged[name] = r
	}
	t := &paceTable{byName: make(map[string]*budget.Table, len(merged)), rates: make(map[string]budget.Rate, len(merged)),
		maxWait: maxWait, afterFunc: afterFunc}
	for name, r := range merged {
		t.rates[name] = r
		if old != nil && old.maxWait == maxWait && old.byName[name] != nil {
			if was := old.rates[name]; was.N == r.N && was.Per == r.Per {
				t.byName[name] = old.byName[name]
				continue
			}
		}
		tb, err := budget.New(budget.Settings{Rate: r, MaxAhead: maxWait, MaxBuckets: 2})
		if err != nil {
			return nil, fmt.Errorf("%w: pacing: %q: %v", ErrSettings, name, err)
		}
		t.byName[name] = tb
	}
	return t, nil
}

// installLocked puts t in force. p.mu must be held.
func (p *pacing) installLocked(t *paceTable) {
	p.current.Store(t)
	on := int32(0)
	if len(t.byName) > 0 {
		on = 1
	}
	atomic.StoreInt32(&p.on, on)
}

// configure puts the configuration's paces in force, with the operator's over them.
func (p *pacing) configure(list []Pace, maxWait time.Duration, afterFunc func(d time.Duration, f func()) func() bool) error {
	configured := pacesByName(list)
	p.mu.Lock()
	defer p.mu.Unlock()
	t, err := buildPaceTable(paces(p), configured, p.operator, maxWait, afterFunc)
	if err != nil {
		return err
	}
	p.configured = configured
	p.maxWait = maxWait
	p.afterFunc = afterFunc
	p.installLocked(t)
	return nil
}

// setOperator paces name at r until clearOperator, whatever the configuration says.
func (p *pacing) setOperator(name string, r budget.Rate) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	operator := make(map[string]budget.Rate, len(p.operator)+1)
	for n, v := range p.operator {
		operator[n] = v
	}
	operator[name] = r
	if len(operator) > operatorPacesMax {
		return fmt.Errorf("name: %q: %d paces are set already, clear one first", name, operatorPacesMax)
	}
	return p.installOperatorLocked(operator)
}

// clearOperator drops the operator's pace of name, back to the configuration's, and tells
// whether there was one.
func (p *pacing) clearOperator(name string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.operator[name]; !ok {
		return false
	}
	operator := make(map[string]budget.Rate, len(p.operator))
	for n, v := range p.operator {
		if n != name {
			operator[n] = v
		}
	}
	// Every rate was built before: nothing can be refused.
	return p.installOperatorLocked(operator) == nil
}

// installOperatorLocked puts operator's paces in force over the configuration's, unless a
// table cannot be built of them. p.mu must be held.
func (p *pacing) installOperatorLocked(operator map[string]budget.Rate) error {
	t, err := buildPaceTable(paces(p), p.configured, operator, p.maxWait, p.afterFunc)
	if err != nil {
		return err
	}
	p.operator = operator
	p.installLocked(t)
	return nil
}

// paceEntry is a pace in force as the admin lists it.
type paceEntry struct {
	name string
	rate budget.Rate
	// byOperator marks an operator's pace; configured is the configuration's rate for the
	// name, zero for none.
	byOperator bool
	configured budget.Rate
}

// entries lists the paces in force by name.
func (p *pacing) entries() []paceEntry {
	p.mu.Lock()
	var out []paceEntry
	for name, r := range p.configured {
		if _, ok := p.operator[name]; !ok {
			out = append(out, paceEntry{name: name, rate: r, configured: r})
		}
	}
	for name, r := range p.operator {
		out = append(out, paceEntry{name: name, rate: r, byOperator: true, configured: p.configured[name]})
	}
	p.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// paceOf is host's entry in the paces in force: its own, else that of the nearest domain
// above it; nil for none. host is taken in any spelling Traefik routes alike (its key is
// hostkey.Canonical's, which allocates nothing for a host already canonical). It runs for
// every pass-through request while pacing is on, so it makes few calls: the table is loaded
// here rather than by a call of paces.
func paceOf(p *pacing, host string) *budget.Table {
	t := p.current.Load().(*paceTable)
	host = hostkey.Canonical(host)
	for {
		if tb := t.byName[host]; tb != nil {
			return tb
		}
		i := strings.IndexByte(host, '.')
		if i < 0 {
			return nil
		}
		host = host[i+1:]
	}
}

// paceTurn waits for the turn of a request for host, when host is paced: nil once it is
// its turn, else the refusal. Background work never waits: it goes only when a turn is free
// at once. A wait is no failure of the origin and is recorded with no breaker; a probe's
// permit is given back when the request is refused.
func paceTurn(h *Handler, t *ticket, ctx context.Context, host string, way int) *refusal {
	tb := paceOf(h.pacing, host)
	if tb == nil {
		return nil
	}
	now := h.s.Now()
	var f *refusal
	if way&wayBackground != 0 {
		if wait := budget.Take(tb, "", now); wait > 0 {
			f = &refusal{why: reasonPaced, retryAfter: wait}
		}
	} else if wait, ok := budget.Reserve(tb, "", now); !ok {
		f = &refusal{why: reasonPaced, retryAfter: wait}
	} else if wait > 0 && !waitTurn(ctx, paces(h.pacing), wait) {
		f = &refusal{why: reasonClientLeft}
	} else {
		t.paced = wait
	}
	if f != nil && t.permit.Probe {
		t.b.Release(t.permit, h.s.Now())
	}
	return f
}

// waitTurn waits d, or until ctx ends (false).
func waitTurn(ctx context.Context, p *paceTable, d time.Duration) bool {
	var fired <-chan time.Time
	var timer *time.Timer
	if p.afterFunc != nil {
		ch := make(chan time.Time, 1)
		stop := p.afterFunc(d, func() { ch <- time.Unix(0, 1) })
		defer stop()
		fired = ch
	} else {
		timer = time.NewTimer(d)
		defer timer.Stop()
		fired = timer.C
	}
	// wait.Either, not a select statement: Yaegi v0.16.1 shares a select's cases between
	// every goroutine running it, and a request could take another's timer and wait until
	// its client left (docs/yaegi.md).
	return wait.Either(fired, ctx.Done()) == 0
}

// keepPacing gives e old's pacing, which lives as long as the middleware and keeps the
// operator's paces, and puts the paces of s in force in it. Last of what can fail in
// engineFor: the handlers of old share the pacing and see the change at once.
func keepPacing(e, old *engine, s Settings) error {
	wait := queueWait(s.Limiter.MaxQueueWait)
	e.paceConf = fmt.Sprintf(" pacing=%+v wait=%s", s.Pacing, wait)
	if e.pacing == old.pacing && old.paceConf == e.paceConf {
		return nil
	}
	return e.pacing.configure(s.Pacing, wait, s.Limiter.AfterFunc)
}
