package breaker

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Override is an operator's choice of parameters for one scope key, in place of its group's
// settings. The zero value of every field means the group's own; a zero Override declares
// the key without changing anything.
type Override struct {
	// Window is how far back results count (Settings.Window). At least 10ms.
	Window time.Duration
	// MinRequests is how many results the window must hold before the breaker may open.
	MinRequests int
	// FailureRatio is the share of failures that opens the breaker. At most 1.
	FailureRatio float64
	// MaxFailures is how many failures in the window open the breaker, whatever the ratio
	// (Settings.MaxFailures).
	MaxFailures int
	// OpenFor is how long the breaker stays open when it first trips.
	OpenFor time.Duration
	// MaxOpenFor caps the open period as failed probes double it.
	MaxOpenFor time.Duration
	// SlowCall makes a result that took longer a slow call (Settings.SlowCall).
	SlowCall time.Duration
	// SlowCallRatio is the share of slow calls that opens the breaker. At most 1.
	SlowCallRatio float64
	// Probes is how many probes in a row must succeed before a half-open breaker closes.
	Probes int
	// ProbeInterval spaces the probes of a half-open breaker that needs more than one.
	ProbeInterval time.Duration
}

// KeyOverride is a scope key with the Override an operator set for it.
type KeyOverride struct {
	Key      string
	Override Override
}

// Validate reports the first field of o out of range, naming the field and its value, as
// Settings.Validate does; MaxOpenFor is checked against OpenFor when o sets both. Against
// a group's settings the check is Group.SetOverride's.
func (o Override) Validate() error {
	if err := o.over(Settings{}).validateFields(); err != nil {
		return err
	}
	if o.OpenFor > 0 && o.MaxOpenFor > 0 {
		return checkMaxOpenFor(o.OpenFor, o.MaxOpenFor)
	}
	return nil
}

// over returns s with o's non-zero fields in place of its own.
func (o Override) over(s Settings) Settings {
	for _, d := range []struct {
		from time.Duration
		to   *time.Duration
	}{{o.Window, &s.Window}, {o.OpenFor, &s.OpenFor}, {o.MaxOpenFor, &s.MaxOpenFor},
		{o.SlowCall, &s.SlowCall}, {o.ProbeInterval, &s.ProbeInterval}} {
		if d.from != 0 {
			*d.to = d.from
		}
	}
	for _, n := range []struct{ from, to *int }{{&o.MinRequests, &s.MinRequests}, {&o.MaxFailures, &s.MaxFailures},
		{&o.Probes, &s.Probes}} {
		if *n.from != 0 {
			*n.to = *n.from
		}
	}
	for _, r := range []struct{ from, to *float64 }{{&o.FailureRatio, &s.FailureRatio}, {&o.SlowCallRatio, &s.SlowCallRatio}} {
		if *r.from != 0 {
			*r.to = *r.from
		}
	}
	return s
}

// Params returns the parameters of s that an Override may set, as an Override.
func (s Settings) Params() Override {
	return Override{Window: s.Window, MinRequests: s.MinRequests, FailureRatio: s.FailureRatio,
		MaxFailures: s.MaxFailures, OpenFor: s.OpenFor, MaxOpenFor: s.MaxOpenFor, SlowCall: s.SlowCall, SlowCallRatio: s.SlowCallRatio,
		Probes: s.Probes, ProbeInterval: s.ProbeInterval}
}

// Param is one parameter of an Override: its name as ParseOverride reads it (and as the
// configuration names it), its value as text, and whether the Override sets it (non-zero).
type Param struct {
	Name, Value string
	Set         bool
}

// Params lists o's parameters in ParseOverride's order, set or not.
func (o Override) Params() []Param {
	ratio := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	return []Param{
		{"window", o.Window.String(), o.Window != 0},
		{"minRequests", strconv.Itoa(o.MinRequests), o.MinRequests != 0},
		{"failureRatio", ratio(o.FailureRatio), o.FailureRatio != 0},
		{"maxFailures", strconv.Itoa(o.MaxFailures), o.MaxFailures != 0},
		{"openFor", o.OpenFor.String(), o.OpenFor != 0},
		{"maxOpenFor", o.MaxOpenFor.String(), o.MaxOpenFor != 0},
		{"slowCall", o.SlowCall.String(), o.SlowCall != 0},
		{"slowCallRatio", ratio(o.SlowCallRatio), o.SlowCallRatio != 0},
		{"probes", strconv.Itoa(o.Probes), o.Probes != 0},
		{"probeInterval", o.ProbeInterval.String(), o.ProbeInterval != 0},
	}
}

// String returns o's non-zero fields as ParseOverride reads them, in a fixed order:
// "window=30s failureRatio=0.3". A zero Override is "".
func (o Override) String() string {
	var parts []string
	for _, p := range o.Params() {
		if p.Set {
			parts = append(parts, p.Name+"="+p.Value)
		}
	}
	return strings.Join(parts, " ")
}

// SetOverride gives key's breaker the parameters o sets, and the group's for the others:
// at once to its breaker (whose window starts again empty if its length changes, and which
// keeps an open deadline it has), and to the breaker a key not seen yet will have. The key
// is then declared (see Declare). It returns an error naming the field and the value when
// o is out of range or, with the group's settings, sets MaxOpenFor below OpenFor, and
// ErrTooManyKeys for a key not yet declared when MaxBreakers keys are.
//
// key may be a host as an operator writes it: the group reduces it to its scope's key
// (ScopeKey), the one requests find their breaker by. Under scope domain an override for
// api.example.com is one for example.com; under scope engine any key names the engine's
// one breaker.
func (g *Group) SetOverride(key string, o Override) error {
	key = ScopePathKey(g.s.Scope, key)
	if err := o.Validate(); err != nil {
		return fmt.Errorf("override of %q: %w", key, err)
	}
	s := o.over(g.s)
	if err := checkMaxOpenFor(s.OpenFor, s.MaxOpenFor); err != nil {
		return fmt.Errorf("override of %q: %w", key, err)
	}
	g.mu.Lock()
	n, err := g.pin(key)
	if err == nil {
		n.b.setOverride(o, s)
	}
	g.mu.Unlock()
	return err
}

// Declare makes key's breaker, closed, if there is none, and keeps it whatever its use: it
// appears in Snapshot before any fetch, and the least recently used are evicted around it.
// An override the key has stays. It returns ErrTooManyKeys for a key not yet declared when
// MaxBreakers keys are. key is reduced as SetOverride says.
func (g *Group) Declare(key string) error {
	key = ScopePathKey(g.s.Scope, key)
	g.mu.Lock()
	_, err := g.pin(key)
	g.mu.Unlock()
	return err
}

// RemoveOverride gives key's breaker the group's parameters again and ends its declaration:
// the breaker stays, with its state, among the others the group may evict. It reports
// whether key was declared or overridden. key is reduced as SetOverride says.
func (g *Group) RemoveOverride(key string) bool {
	key = ScopePathKey(g.s.Scope, key)
	g.mu.Lock()
	n := g.nodes[key]
	if n == nil || !n.pinned {
		g.mu.Unlock()
		return false
	}
	n.pinned = false
	g.pinned--
	g.pushFront(n)
	n.b.setOverride(Override{}, g.s)
	g.mu.Unlock()
	return true
}

// Overrides returns every declared or overridden key with its Override (zero for a key only
// declared), ordered by key.
func (g *Group) Overrides() []KeyOverride {
	g.mu.Lock()
	var bs []*Breaker
	for _, n := range g.nodes {
		if n.pinned {
			bs = append(bs, n.b)
		}
	}
	g.mu.Unlock()
	out := make([]KeyOverride, len(bs))
	for i, b := range bs {
		b.mu.Lock()
		out[i] = KeyOverride{Key: b.key, Override: b.ov}
		b.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// pin returns key's node, made if needed, taken out of the recency list and kept from
// eviction; ErrTooManyKeys when a new pin would pass MaxBreakers. g.mu must be held.
func (g *Group) pin(key string) (*node, error) {
	n := g.nodes[key]
	if n != nil && n.pinned {
		return n, nil
	}
	if g.pinned >= g.s.MaxBreakers {
		return nil, fmt.Errorf("declaring %q: %d keys are declared or overridden, breaker.maxBreakers: %w", key, g.pinned, ErrTooManyKeys)
	}
	if n == nil {
		n = g.add(key)
	} else {
		g.unlink(n)
	}
	n.pinned = true
	g.pinned++
	return n, nil
}

// setOverride puts o, and s (the group's settings with o applied), in force. b.mu is taken
// here; the group's may be held. Only the fields an override sets are written, one by one:
// Record reads Rand and OnTrip without the lock.
func (b *Breaker) setOverride(o Override, s Settings) {
	b.mu.Lock()
	b.ov = o
	if s.Window != b.s.Window {
		// Buckets cut for another width would count results in the wrong slices.
		b.s.Window = s.Window
		b.win = newWindow(s.Window)
	}
	b.s.MinRequests = s.MinRequests
	b.s.FailureRatio = s.FailureRatio
	b.s.MaxFailures = s.MaxFailures
	b.s.OpenFor = s.OpenFor
	b.s.MaxOpenFor = s.MaxOpenFor
	b.s.SlowCall = s.SlowCall
	atomic.StoreInt64(&b.slowCall, int64(s.SlowCall))
	b.s.SlowCallRatio = s.SlowCallRatio
	b.s.Probes = s.Probes
	b.s.ProbeInterval = s.ProbeInterval
	b.mu.Unlock()
}
