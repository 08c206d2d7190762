package core

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/weirproxy/weir/core/budget"
	"github.com/weirproxy/weir/core/limit"
)

// Pacing an origin (pacing): the requests that reach a paced host or domain are spaced
// evenly, one every period/N, each waiting for its turn in the gate (at most
// limiter.maxQueueWait) after the breaker has let it through. A turn is a core/budget
// bucket without a burst, booked ahead by Reserve.

// detailPaced is the Cache-Status detail and the shed reason of a request whose turn lay
// past limiter.maxQueueWait.
const detailPaced = "paced"

// Pace is one entry of pacing: a host, or a domain and every host under it, and its rate.
type Pace struct {
	// Name is a host ("feeds.example.com") or a domain ("example.com"), lower case.
	Name string
	// Rate is how many requests reach it per period, evenly spaced.
	Rate budget.Rate
}

// pacing holds a table of one bucket for each entry, by name.
type pacing struct {
	byName map[string]*budget.Table
	// afterFunc is limiter's injected timer (tests); nil: a real timer.
	afterFunc func(d time.Duration, f func()) func() bool
}

// newPacing builds the tables of list, each booking at most maxWait ahead; nil for none.
func newPacing(list []Pace, maxWait time.Duration, afterFunc func(d time.Duration, f func()) func() bool) (*pacing, error) {
	if len(list) == 0 {
		return nil, nil
	}
	p := &pacing{byName: make(map[string]*budget.Table, len(list)), afterFunc: afterFunc}
	for _, e := range list {
		tb, err := budget.New(budget.Settings{Rate: e.Rate, MaxAhead: maxWait, MaxBuckets: 2})
		if err != nil {
			return nil, fmt.Errorf("%w: pacing: %q: %v", ErrSettings, e.Name, err)
		}
		p.byName[e.Name] = tb
	}
	return p, nil
}

// paceOf is host's entry: its own, else that of the nearest domain above it; nil for none.
// It runs for every pass-through request while pacing is on, so it makes few calls: a port
// is cut by hand rather than with net.SplitHostPort, whose error allocates.
func paceOf(p *pacing, host string) *budget.Table {
	if i := strings.LastIndexByte(host, ':'); i >= 0 && strings.IndexByte(host[i:], ']') < 0 {
		host = host[:i]
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for {
		if tb := p.byName[host]; tb != nil {
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
			f = &refusal{paced: wait}
		}
	} else if wait, ok := budget.Reserve(tb, "", now); !ok {
		f = &refusal{paced: wait}
	} else if wait > 0 && !waitTurn(ctx, h.pacing, wait) {
		f = &refusal{shed: limit.ErrContextDone}
	}
	if f != nil && t.permit.Probe {
		t.b.Release(t.permit, h.s.Now())
	}
	return f
}

// waitTurn waits d, or until ctx ends (false).
func waitTurn(ctx context.Context, p *pacing, d time.Duration) bool {
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
	// Yaegi v0.16.1's select was seen to take a case whose channel was not ready
	// (docs/yaegi.md): the context is believed only with its error, the timer only with a
	// time.
	for {
		select {
		case at := <-fired:
			if !at.IsZero() {
				return true
			}
		case <-ctx.Done():
			if ctx.Err() != nil {
				return false
			}
		}
	}
}
