// Package flight coalesces concurrent origin fetches for one key into a single fetch.
//
// It is golang.org/x/sync/singleflight reshaped for a cache that protects an origin:
//   - the fetch runs on a goroutine of its own, detached from every caller, so the caller that
//     started it can hang up without cancelling it for the others (FR-COA-2);
//   - each caller waits with its own context and its own bound, and gives up alone;
//   - a flight older than LeaderMaxAge takes no new followers: the next caller starts a fresh
//     flight while the old one finishes for those already waiting (FR-COA-3);
//   - a panic in the fetch is recovered and delivered to every waiter as an error, and the
//     flight is released (FR-COA-6).
//
// The package knows nothing of HTTP: a fetch returns an interface{} value and an error.
package flight

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// Errors a flight may deliver. The package has no wait of its own to time out: each caller
// waits on Done with its own context and bound, and gives up alone.
var (
	// ErrPanic wraps a panic recovered from a fetch.
	ErrPanic = errors.New("flight: fetch panicked")
)

// DefaultLeaderMaxAge is used when Settings.LeaderMaxAge is zero.
const DefaultLeaderMaxAge = 10 * time.Second

// Settings tune a Group.
type Settings struct {
	// LeaderMaxAge is how long a flight takes new followers. Zero means DefaultLeaderMaxAge.
	LeaderMaxAge time.Duration
	// Now reads the clock. Nil means time.Now.
	Now func() time.Time
	// OnPanic is told of every recovered panic, outside any lock. Nil means nobody is told.
	OnPanic func(key string, recovered interface{})
}

// Group is a table of flights keyed by string. The zero value is not usable; use New.
type Group struct {
	settings Settings

	// mu guards calls.
	mu    sync.Mutex
	calls map[string]*Call
}

// Call is one flight: a fetch under way or done.
type Call struct {
	done    chan struct{}
	started time.Time

	// Set once before done is closed; read only after.
	val interface{}
	err error

	// followers counts the callers that joined; guarded by the Group's mu.
	followers int
}

// New returns an empty Group.
func New(s Settings) *Group {
	if s.LeaderMaxAge <= 0 {
		s.LeaderMaxAge = DefaultLeaderMaxAge
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	return &Group{settings: s, calls: make(map[string]*Call)}
}

// Join returns the flight of g for key that a caller should wait on. When leader is true no
// young flight existed: the caller has registered a new one and must Run it.
//
// Join, TryLead, Run, RunHere, Done and Result are functions, not methods: every cache miss
// calls four of them, and under Yaegi a method call goes through a reflective wrapper that
// a function call does not (docs/yaegi.md).
func Join(g *Group, key string) (c *Call, leader bool) {
	now := g.settings.Now()
	g.mu.Lock()
	if c = g.calls[key]; c != nil && now.Sub(c.started) < g.settings.LeaderMaxAge {
		c.followers++
		g.mu.Unlock()
		return c, false
	}
	c = &Call{done: make(chan struct{}), started: now}
	g.calls[key] = c
	g.mu.Unlock()
	return c, true
}

// TryLead registers a new flight for key only when none is under way, for background work
// (a refresh) that must not start a second fetch beside a running one.
func TryLead(g *Group, key string) (c *Call, ok bool) {
	now := g.settings.Now()
	g.mu.Lock()
	if old := g.calls[key]; old != nil {
		g.mu.Unlock()
		return nil, false
	}
	c = &Call{done: make(chan struct{}), started: now}
	g.calls[key] = c
	g.mu.Unlock()
	return c, true
}

// Run runs fetch for the flight c of key on a new goroutine and returns at once. The result,
// or the panic fetch raised turned into an error, goes to every waiter.
func Run(g *Group, key string, c *Call, fetch func() (interface{}, error)) {
	go run(g, key, c, fetch)
}

// RunHere is Run on the calling goroutine, for callers that have a goroutine to spare.
func RunHere(g *Group, key string, c *Call, fetch func() (interface{}, error)) {
	run(g, key, c, fetch)
}

func run(g *Group, key string, c *Call, fetch func() (interface{}, error)) {
	// The deferred finish both recovers and releases: a panic that reached Traefik from a
	// goroutine of ours would kill the whole process (FR-COA-6).
	defer finish(g, key, c)
	c.val, c.err = fetch()
}

func finish(g *Group, key string, c *Call) {
	if r := recover(); r != nil {
		c.val = nil
		c.err = fmt.Errorf("%w: %v", ErrPanic, r)
		if g.settings.OnPanic != nil {
			g.settings.OnPanic(key, r)
		}
	}
	g.mu.Lock()
	if g.calls[key] == c {
		delete(g.calls, key)
	}
	g.mu.Unlock()
	close(c.done)
}

// Done is closed when the flight c's result is ready.
func Done(c *Call) <-chan struct{} { return c.done }

// Result returns the flight c's result; call it only after Done is closed.
func Result(c *Call) (interface{}, error) { return c.val, c.err }

// Followers reports how many callers joined the flight after its leader.
func (g *Group) Followers(c *Call) int {
	g.mu.Lock()
	n := c.followers
	g.mu.Unlock()
	return n
}

// InFlight reports how many flights take followers or run.
func (g *Group) InFlight() int {
	g.mu.Lock()
	n := len(g.calls)
	g.mu.Unlock()
	return n
}
