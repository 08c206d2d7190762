// Package admit is Weir's admission control: it decides, as a request's head arrives,
// whether the process is too busy to take it, from two signals: the requests in flight
// through the middleware, and scheduler lag (how late a ticker fires). The process has one
// lag sampler (ProcessLag), shared by every Controller and asleep while none has a request
// in flight (LagSampler).
//
// Under the knee (KneeInFlight in flight, LagKnee of lag) every request is taken. Past it,
// a host holding more than its share (HostKneeInFlight) is refused, and so is a name the
// Controller never saw while under the knee (a name no router expects: a flood of made-up
// Host names). Past the limit (LimitInFlight, LagLimit), every request is refused but those
// under a protected path prefix (the health check, the admin). Refusing early costs a
// refused request almost nothing, so the requests taken keep their latency.
//
// The package knows nothing of HTTP: the engine passes a host, whether the path is
// protected, and answers what is refused.
package admit

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirproxy/weir/core/setting"
)

// Verdicts of Enter.
const (
	// Admitted: the request is taken; the caller calls Leave when it ends.
	Admitted = 0
	// ShedHost: past the knee, the request's host holds more than its share.
	ShedHost = 1
	// ShedName: past the knee, the request's host is a name not seen under it.
	ShedName = 2
	// ShedAll: past the limit, only protected paths are taken.
	ShedAll = 3
)

// Defaults applied to zero Settings fields.
const (
	// DefaultLagKnee is the scheduler lag past which the knee is passed.
	DefaultLagKnee = 10 * time.Millisecond
	// DefaultLagLimit is the scheduler lag past which the limit is passed.
	DefaultLagLimit = 50 * time.Millisecond
	// DefaultMaxNames bounds the names a Controller remembers.
	DefaultMaxNames = 10000
	// hostShareDivisor sets HostKneeInFlight's default: a quarter of the knee.
	hostShareDivisor = 4
	// limitMultiple sets LimitInFlight's default: twice the knee.
	limitMultiple = 2
)

// ErrSettings wraps every invalid setting.
var ErrSettings = errors.New("invalid admission setting")

// Settings configures a Controller.
type Settings struct {
	// KneeInFlight is the requests in flight past which hosts over their share and unknown
	// names are refused. Required: at least 1.
	KneeInFlight int
	// HostKneeInFlight is one host's share past the knee. Zero: KneeInFlight/4, at least 1.
	HostKneeInFlight int
	// LimitInFlight is the requests in flight past which only protected paths are taken.
	// Zero: twice KneeInFlight.
	LimitInFlight int
	// LagKnee and LagLimit are the scheduler lags that pass the knee and the limit. Zero:
	// DefaultLagKnee (10ms), DefaultLagLimit (50ms).
	LagKnee  time.Duration
	LagLimit time.Duration
	// Lag reads the scheduler lag now (tests). Nil: Sampler's.
	Lag func() time.Duration
	// Sampler is the scheduler-lag sampler the Controller reads and counts its requests in
	// flight in (ProcessLag: the process's): New acquires it, Close releases it. Nil, with
	// Lag nil: no lag signal.
	Sampler *LagSampler
	// MaxNames bounds the names remembered as seen under the knee. Zero: DefaultMaxNames.
	MaxNames int
}

// Validate names the first setting that is wrong.
func (s Settings) Validate() error {
	if s.KneeInFlight < 1 {
		return fmt.Errorf("kneeInFlight: %d must be at least 1: %w", s.KneeInFlight, ErrSettings)
	}
	if s.HostKneeInFlight < 0 {
		return fmt.Errorf("hostKneeInFlight: %d must not be negative: %w", s.HostKneeInFlight, ErrSettings)
	}
	if s.LimitInFlight != 0 && s.LimitInFlight < s.KneeInFlight {
		return fmt.Errorf("limitInFlight: %d must be at least kneeInFlight (%d): %w", s.LimitInFlight, s.KneeInFlight, ErrSettings)
	}
	if s.LagKnee < 0 || s.LagLimit < 0 {
		return fmt.Errorf("lagKnee: %s and lagLimit %s must not be negative: %w", s.LagKnee, s.LagLimit, ErrSettings)
	}
	d := s.withDefaults()
	if d.LagLimit < d.LagKnee {
		return fmt.Errorf("lagLimit: %s must be at least lagKnee (%s): %w", d.LagLimit, d.LagKnee, ErrSettings)
	}
	return nil
}

func (s Settings) withDefaults() Settings {
	if s.HostKneeInFlight == 0 {
		s.HostKneeInFlight = s.KneeInFlight / hostShareDivisor
		if s.HostKneeInFlight < 1 {
			s.HostKneeInFlight = 1
		}
	}
	if s.LimitInFlight == 0 {
		s.LimitInFlight = limitMultiple * s.KneeInFlight
	}
	s.LagKnee = setting.Duration(s.LagKnee, DefaultLagKnee)
	s.LagLimit = setting.Duration(s.LagLimit, DefaultLagLimit)
	s.MaxNames = setting.Int(s.MaxNames, DefaultMaxNames)
	return s
}

// Controller counts the requests in flight and decides on each. It is safe for concurrent
// use.
type Controller struct {
	s Settings
	// lag is s.Sampler, read on every request.
	lag *LagSampler

	// mu guards inFlight, byHost, names and held.
	mu sync.Mutex
	// held is true while the Controller holds its acquisition of lag: until Close.
	held bool
	// inFlight is every request taken and not yet left: a request refused never counts,
	// so that a flood of refused requests cannot push the count past the limit.
	inFlight int
	// byHost counts the requests in flight per host; no zero entries.
	byHost map[string]int
	// names are the hosts seen under the knee, at most MaxNames.
	names map[string]bool
}

// New returns a Controller with settings s, or the error of s.Validate.
func New(s Settings) (*Controller, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	c := &Controller{s: s.withDefaults(), lag: s.Sampler, byHost: make(map[string]int), names: make(map[string]bool)}
	if c.lag != nil {
		c.lag.Acquire()
		c.held = true
	}
	return c, nil
}

// Close releases the lag sampler: the last Controller to close stops it. Requests in flight
// still Leave; Enter reads a lag of zero. Closing twice is closing once.
func (c *Controller) Close() {
	c.mu.Lock()
	held := c.held
	c.held = false
	c.mu.Unlock()
	if held {
		c.lag.Release()
	}
}

// Enter decides on a request for host, under a protected path prefix or not, and counts it
// in flight when it is Admitted; the caller then calls Leave with the same host. A function
// rather than a method: in Yaegi a method call goes through a reflective wrapper that a
// function call does not, and every request makes this one.
func Enter(c *Controller, host string, protected bool) int {
	var lag time.Duration
	if c.s.Lag != nil {
		lag = c.s.Lag()
	} else if c.lag != nil {
		// Written out: a method call costs Yaegi a reflective wrapper.
		lag = time.Duration(atomic.LoadInt64(&c.lag.lag))
	}
	c.mu.Lock()
	// n counts the request itself.
	n := c.inFlight + 1
	level := 0
	if n > c.s.LimitInFlight || lag >= c.s.LagLimit {
		level = 2
	} else if n > c.s.KneeInFlight || lag >= c.s.LagKnee {
		level = 1
	}
	verdict := Admitted
	switch {
	case level == 0:
		if !c.names[host] && len(c.names) < c.s.MaxNames {
			c.names[host] = true
		}
	case protected:
	case level == 2:
		verdict = ShedAll
	case !c.names[host]:
		verdict = ShedName
	case c.byHost[host] >= c.s.HostKneeInFlight:
		verdict = ShedHost
	}
	if verdict == Admitted {
		c.inFlight = n
		c.byHost[host]++
	}
	c.mu.Unlock()
	// The sampler sleeps while nothing is in flight: the request that ends the idle wakes it.
	if verdict == Admitted && c.lag != nil && atomic.AddInt64(&c.lag.inFlight, 1) == 1 {
		wakeUp(c.lag)
	}
	return verdict
}

// Leave ends an Admitted request for host.
func Leave(c *Controller, host string) {
	c.mu.Lock()
	c.inFlight--
	if n := c.byHost[host]; n > 1 {
		c.byHost[host] = n - 1
	} else {
		delete(c.byHost, host)
	}
	c.mu.Unlock()
	if c.lag != nil {
		atomic.AddInt64(&c.lag.inFlight, -1)
	}
}

// Sampler is the lag sampler the Controller reads (Settings.Sampler).
func (c *Controller) Sampler() *LagSampler { return c.lag }

// InFlight is the requests in flight now.
func (c *Controller) InFlight() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inFlight
}
