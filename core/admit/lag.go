package admit

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirproxy/weir/core/wait"
)

// LagEvery is the period of the ticker whose lateness is the scheduler lag.
const LagEvery = 10 * time.Millisecond

// LagSettings configure a LagSampler.
type LagSettings struct {
	// Every is the ticker's period. Zero: LagEvery.
	Every time.Duration
	// Now reads the clock a tick's lateness is measured on. Nil: time.Now.
	Now func() time.Time
	// Ticker starts a ticker of period every, returning its channel and the function that
	// stops it. Nil: time.NewTicker.
	Ticker func(every time.Duration) (<-chan time.Time, func())
}

// realTicker is time.NewTicker as a LagSettings.Ticker. A func literal in a variable:
// Yaegi calls it as it calls the tests' own.
var realTicker = func(every time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(every)
	return t.C, t.Stop
}

func (s LagSettings) withDefaults() LagSettings {
	if s.Every <= 0 {
		s.Every = LagEvery
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.Ticker == nil {
		s.Ticker = realTicker
	}
	return s
}

// LagSampler measures scheduler lag: how late a ticker's ticks are received. Scheduler lag
// is the process's, whatever the middleware, so the process has one (ProcessLag), shared by
// every Controller: Acquire and Release count them, the first starts its goroutine and the
// last stops it.
//
// It samples only while a request is in flight through a Controller using it: a lag no
// request can feel is no reason to refuse one, and an idle process should spend nothing.
// The Controllers count their requests in inFlight; the request that finds nothing in
// flight and the sampler asleep wakes it, and the sampler goes back to sleep at the first
// tick that finds nothing in flight. The request path pays two atomic adds; only a request
// that makes the count go from 0 to 1 loads the sleeping flag, and only one that finds it
// set pays a compare-and-swap and a channel send.
type LagSampler struct {
	// inFlight counts the requests in flight through every Controller using the sampler.
	// First in the struct: 64-bit atomics must be 8-byte aligned on 32-bit platforms.
	inFlight int64
	// lag is the latest lateness in nanoseconds, decayed: a late tick is remembered for a
	// few ticks, so that one request's decision does not fall between two late ticks. Zero
	// while asleep: the time asleep is not lag.
	lag int64
	// sleeping is 1 while the sampler does not tick (or is about to stop): the request that
	// swaps it to 0 sends the one wake.
	sleeping int32

	s LagSettings
	// wake carries a request's wake to the sampler: buffered, sent without waiting, so a
	// wake sent while one is pending is dropped (one is enough).
	wake chan struct{}

	// mu guards refs, stop and done.
	mu   sync.Mutex
	refs int
	// stop is closed to end the goroutine, which closes done as it ends; both nil while no
	// goroutine runs.
	stop chan struct{}
	done chan struct{}
}

// NewLagSampler returns a sampler with settings s, not yet started: Acquire starts it.
func NewLagSampler(s LagSettings) *LagSampler {
	return &LagSampler{s: s.withDefaults(), wake: make(chan struct{}, 1), sleeping: 1}
}

// processLag is the process's one sampler: Traefik keeps one interpreter per plugin for the
// life of the process, so a package variable is shared by every middleware and every reload.
// Created on first use under its mutex, not by an initialiser (docs/yaegi.md).
var processLag struct {
	mu sync.Mutex
	s  *LagSampler
}

// ProcessLag returns the process's sampler, shared by every Controller that has no other.
func ProcessLag() *LagSampler {
	processLag.mu.Lock()
	defer processLag.mu.Unlock()
	if processLag.s == nil {
		processLag.s = NewLagSampler(LagSettings{})
	}
	return processLag.s
}

// Acquire counts one more user of l; the first starts its goroutine, asleep until a
// request is in flight.
func (l *LagSampler) Acquire() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refs++
	if l.refs == 1 {
		l.stop = make(chan struct{})
		l.done = make(chan struct{})
		go l.run(l.stop, l.done)
	}
}

// Release counts one user fewer; the last stops the goroutine and waits for it to end, its
// ticker stopped.
func (l *LagSampler) Release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.refs == 0 {
		return
	}
	l.refs--
	if l.refs > 0 {
		return
	}
	close(l.stop)
	<-l.done
	l.stop = nil
	l.done = nil
}

// Users is the count of Acquire not yet Released.
func (l *LagSampler) Users() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refs
}

// Lag is the scheduler lag now: zero while asleep.
func (l *LagSampler) Lag() time.Duration {
	return time.Duration(atomic.LoadInt64(&l.lag))
}

// Sleeping reports whether the sampler is asleep (or not started).
func (l *LagSampler) Sleeping() bool {
	return atomic.LoadInt32(&l.sleeping) == 1
}

// InFlight is the requests in flight through the Controllers using l.
func (l *LagSampler) InFlight() int64 {
	return atomic.LoadInt64(&l.inFlight)
}

// wakeUp wakes l if it sleeps: called by the request that made the count go from 0 to 1.
func wakeUp(l *LagSampler) {
	if atomic.LoadInt32(&l.sleeping) == 1 && atomic.CompareAndSwapInt32(&l.sleeping, 1, 0) {
		wait.Poke(l.wake)
	}
}

// run sleeps until a request is in flight, samples until none is, and so on until stop is
// closed.
func (l *LagSampler) run(stop, done chan struct{}) {
	defer close(done)
	defer func() {
		_ = recover()
		// Stopped is asleep: the next Acquire starts from there.
		atomic.StoreInt64(&l.lag, 0)
		atomic.StoreInt32(&l.sleeping, 1)
	}()
	// Started asleep (the flag set), unless a request cleared the flag: then its wake is
	// sent, and waited for. Not asleep(): its store would leave that wake over.
	sleep := atomic.LoadInt64(&l.inFlight) == 0 || !atomic.CompareAndSwapInt32(&l.sleeping, 1, 0)
	for {
		// Stop wins when both are ready.
		if sleep && (wait.Either(stop, l.wake) == 0 || wait.Ready(stop)) {
			return
		}
		if !l.sample(stop) {
			return
		}
		sleep = true
	}
}

// asleep puts l to sleep, reporting true, unless a request is in flight (false: sample on).
//
// It sets the flag, then looks at the count. A request whose increment it does not see
// loads the flag after the store, finds it set and sends a wake. One it sees keeps it awake,
// unless that request swapped the flag first: then true, and that request's wake is sent.
// Called only awake, the flag cleared. A wake left over (sent as the goroutine stopped) costs
// one tick.
func (l *LagSampler) asleep() bool {
	atomic.StoreInt64(&l.lag, 0)
	atomic.StoreInt32(&l.sleeping, 1)
	return atomic.LoadInt64(&l.inFlight) == 0 || !atomic.CompareAndSwapInt32(&l.sleeping, 1, 0)
}

// sample starts a ticker and ticks until a tick finds nothing in flight and l asleep
// (true), or stop is closed (false). The ticker is stopped after l is asleep.
func (l *LagSampler) sample(stop chan struct{}) bool {
	// The wake's time before the ticker starts: every tick of it comes after (a test's
	// clock may move as soon as the ticker is handed over).
	woke := l.s.Now()
	ticks, halt := l.s.Ticker(l.s.Every)
	defer halt()
	for {
		i, v := wait.EitherValue(stop, ticks)
		// Stop wins when both are ready.
		if i == 0 || wait.Ready(stop) {
			return false
		}
		at, _ := v.Interface().(time.Time)
		l.record(woke, at)
		if atomic.LoadInt64(&l.inFlight) == 0 && l.asleep() {
			return true
		}
	}
}

// record takes the lateness of the tick at into the lag: its receipt's time less its own.
// A tick from before the wake measures the time asleep, not lag.
func (l *LagSampler) record(woke, at time.Time) {
	if at.Before(woke) {
		return
	}
	late := int64(l.s.Now().Sub(at))
	if late < 0 {
		late = 0
	}
	atomic.StoreInt64(&l.lag, decay(atomic.LoadInt64(&l.lag), late))
}

// decay is the new lag from the old and a tick's lateness: the lateness when it is more,
// else the old less a quarter, so that a late tick counts for about 100ms.
func decay(old, late int64) int64 {
	if late >= old {
		return late
	}
	next := old - old/4
	if next < late {
		return late
	}
	return next
}
