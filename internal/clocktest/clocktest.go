// Package clocktest holds the clock Weir's tests move by hand, shared across packages: the
// engine and the mechanisms take their clock injected, and their tests never sleep to let
// time pass. Standard library only: the tests run interpreted too.
package clocktest

import (
	"sync"
	"time"
)

// Clock is a clock a test moves by hand. It is safe for concurrent use.
type Clock struct {
	// mu guards t.
	mu sync.Mutex
	t  time.Time
}

// New returns a clock that reads start until it is moved.
func New(start time.Time) *Clock {
	return &Clock{t: start}
}

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Add moves the clock d forward (backward when d is negative).
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
