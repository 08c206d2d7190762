package limit

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// States of a slot. A slot starts queued (a waiter) or held (granted at once); it ends
// released, expired (its wait bound passed) or left (its context ended while queued).
const (
	stateQueued = iota
	stateHeld
	stateReleased
	stateExpired
	stateLeft
)

// caps are one pool's limits, taken from Settings with their defaults applied.
type caps struct {
	size         int
	queue        int
	queueShare   int
	perPartition int
	perHost      int
	wait         time.Duration
	afterFunc    func(d time.Duration, f func()) func() bool
}

// slot is one request's claim on a pool: a waiter while queued, then the held slot that its
// release function returns.
type slot struct {
	partition string
	host      string
	// hostCounted says the slot was counted in byHost when granted, so that turning the host
	// cap on or off by Update never drives a host's count below zero.
	hostCounted bool
	// ready is closed when a waiter leaves the queue granted or expired; nil for a slot
	// granted at once.
	ready chan struct{}

	// state, prev and next are guarded by the pool's mu.
	state int
	prev  *slot
	next  *slot
}

// The fast path's counter (pool.count) is the slots held plus offsets, so that one load and
// one compare-and-swap tell a fast Take whether it may take a slot: fastBase less the fast
// bound is added once, and a gate while waiters are queued or while the caps are below the
// fast bound the pool started with. Typed literals: Yaegi gives an untyped constant made
// by an operator the type int (docs/yaegi.md).
const (
	// fastBase is the count at which the fast path stops: slots held equal to the fast bound.
	fastBase int64 = 1099511627776 // 1 << 40
	// gate closes the fast path: every count with one on is above fastBase.
	gate int64 = 1125899906842624 // 1 << 50
)

// pool is one budget of origin slots with its queue of waiters.
//
// A slot is taken one of two ways. While the pool holds fewer slots than its fast bound (one
// less than the smallest of its size, the partition cap and the host cap) and nobody is
// queued, Take takes a fast slot: an atomic compare-and-swap of count, no lock, no partition
// or host counted, since however the slots held are spread none of them can reach its cap.
// Otherwise slots are taken under mu and counted per partition and host. count holds both;
// the decisions taken under mu count the slots they cannot attribute (the fast ones) as the
// partition's and the host's own, so that no cap is ever exceeded however they are spread. A
// fast Take may land between a decision's read of count and its grant: it needs fewer slots
// held than the fast bound, one less than every cap, so the two together hold no more than a
// cap. A fast slot given back while a waiter is queued grants the queue under mu: it sees
// the waiters' gate in the count its add returns, and a waiter reads the count after its
// gate is on, so that one of the two always sees the other (atomics are sequentially
// consistent).
type pool struct {
	// count is the slots held (fast or not) plus base; atomic.
	count int64
	// fastHigh is the highest count a fast Take reached, when base was offset; atomic.
	fastHigh int64

	// mu guards every field below and the state and links of the pool's slots.
	mu   sync.Mutex
	caps caps
	// offset is fastBase less the fast bound, set by the first caps and kept: a smaller bound
	// in later caps closes the fast path with a gate rather than change what count means.
	offset int64
	// base is what count holds beyond the slots held: offset and the gates on.
	base        int64
	waitGated   bool           // the gate for waiters queued is on
	capsGated   bool           // the gate for caps below the fast bound is on
	inFlight    int            // slots taken under mu (fast ones are not)
	highWater   int            // the most slots held at once seen under mu
	byPartition map[string]int // slots held per partition; no zero entries
	byHost      map[string]int // slots held per host, while the host cap is on; no zero entries
	queuedBy    map[string]int // waiters per partition; no zero entries
	queued      int
	// head and tail are the queue, oldest first: a doubly linked list, so a waiter that
	// gives up leaves it in constant time.
	head *slot
	tail *slot
}

func newPool() *pool {
	return &pool{
		byPartition: make(map[string]int),
		byHost:      make(map[string]int),
		queuedBy:    make(map[string]int),
	}
}

// setCaps applies new limits; waiters that a larger pool can now serve are granted at once.
func (p *pool) setCaps(c caps) {
	p.mu.Lock()
	p.caps = c
	bound := c.size
	if c.perPartition < bound {
		bound = c.perPartition
	}
	if c.perHost > 0 && c.perHost < bound {
		bound = c.perHost
	}
	bound--
	if p.offset == 0 {
		p.offset = fastBase - int64(bound)
		moveBase(p, p.offset)
	}
	if shut := int64(bound) < fastBase-p.offset; shut != p.capsGated {
		p.capsGated = shut
		if shut {
			moveBase(p, gate)
		} else {
			moveBase(p, -gate)
		}
	}
	if p.head != nil {
		grantLocked(p)
	}
	p.mu.Unlock()
}

// The pool's internals below are functions of p rather than methods: in Yaegi a method call
// goes through a reflective wrapper and costs four times a function call (docs/yaegi.md), and
// a queued request makes half a dozen of these calls.

// queueLocked queues s and waits until it holds a slot (nil) or is shed (an error), for
// the pool's wait bound less spent. It is called with p.mu held and unlocks it.
func queueLocked(ctx context.Context, p *pool, s *slot, spent time.Duration) error {
	// The partition's share is checked first, so a flooding partition is told it is the one
	// over its bound (FR-LIM-3) while the queue still has room for others.
	if p.queuedBy[s.partition] >= p.caps.queueShare {
		p.mu.Unlock()
		return ErrPartitionQueueFull
	}
	if p.queued >= p.caps.queue {
		p.mu.Unlock()
		return ErrQueueFull
	}
	wait := p.caps.wait - spent
	if wait <= 0 {
		p.mu.Unlock()
		return ErrQueueWait
	}
	s.ready = make(chan struct{})
	s.state = stateQueued
	pushLocked(p, s)
	// A fast slot given back before the waiters' gate was on saw no waiter: the count is
	// read again now that it is, and whatever is free goes to the oldest waiters that may
	// take it, s perhaps.
	grantLocked(p)
	if s.state == stateHeld {
		p.mu.Unlock()
		return nil
	}
	after := p.caps.afterFunc
	p.mu.Unlock()

	done := ctx.Done()
	select {
	case <-done:
		// Gone already: leave without arming a timer.
		return leave(ctx, p, s)
	default:
	}
	// The wait bound. The real one is a compiled Timer read through its channel: no closure
	// to arm it, none to stop it (in Yaegi each costs a reflective wrapper, on every queued
	// request). An injected AfterFunc (tests) is armed outside the lock, as injected code; a
	// grant that lands before it is armed leaves s.ready closed, and the timer is stopped
	// unfired.
	var timer *time.Timer
	var fired <-chan time.Time
	var stop func() bool
	if after == nil {
		timer = time.NewTimer(wait)
		fired = timer.C
	} else {
		stop = after(wait, func() {
			// The timer runs this on a goroutine of its own, where a panic would end the
			// whole Traefik process.
			defer func() { _ = recover() }()
			expire(p, s)
		})
	}
	// Yaegi v0.16.1's select was seen to take a case whose channel was not ready, about once
	// in 30,000: ready is received again (at once when closed), the context is believed only
	// with its error, and the timer only with a time.
	for {
		select {
		case <-s.ready:
			<-s.ready
			stopTimer(timer, stop)
			// s.state was set before ready was closed, and only giveBack changes it from
			// here on.
			if s.state == stateHeld {
				return nil
			}
			return ErrQueueWait
		case at := <-fired:
			if !at.IsZero() {
				// Sheds s unless a grant came first; either way s.ready is closed and the
				// next turn returns.
				expire(p, s)
			}
		case <-done:
			if ctx.Err() != nil {
				stopTimer(timer, stop)
				return leave(ctx, p, s)
			}
		}
	}
}

// stopTimer stops a waiter's wait bound: the real timer, or the injected one.
func stopTimer(t *time.Timer, stop func() bool) {
	if t != nil {
		t.Stop()
		return
	}
	stop()
}

// leave takes s out of the queue once its context has ended, so a client that gives up frees
// its place at once.
func leave(ctx context.Context, p *pool, s *slot) error {
	p.mu.Lock()
	switch s.state {
	case stateQueued:
		unlinkLocked(p, s)
		s.state = stateLeft
		p.mu.Unlock()
	case stateHeld:
		// Granted just as the context ended: hand the slot on rather than fetch for nobody.
		p.mu.Unlock()
		giveBack(p, s)
	default:
		p.mu.Unlock()
		return ErrQueueWait
	}
	return contextDone(ctx)
}

// expire sheds s when its wait bound passes (FR-LIM-2). It runs on the timer's goroutine and
// does nothing if s was granted or left first.
func expire(p *pool, s *slot) {
	p.mu.Lock()
	if s.state == stateQueued {
		unlinkLocked(p, s)
		s.state = stateExpired
		close(s.ready)
	}
	p.mu.Unlock()
}

// giveBack returns s's slot to p, once.
func giveBack(p *pool, s *slot) {
	p.mu.Lock()
	if s.state != stateHeld {
		p.mu.Unlock()
		return
	}
	s.state = stateReleased
	p.inFlight--
	atomic.AddInt64(&p.count, -1)
	uncount(p.byPartition, s.partition)
	if s.hostCounted {
		uncount(p.byHost, s.host)
	}
	if p.head != nil {
		grantOneLocked(p)
	}
	p.mu.Unlock()
}

// grantOneLocked hands the slot just given back to the oldest waiter that may take it. One
// slot given back frees one unit of the pool, of one partition and of one host, so at most
// one waiter can become eligible: the first found ends the scan. The eligibility test is
// written out rather than a call of eligibleLocked: with a flood queued behind its partition
// cap, every release scans past its waiters, and in Yaegi a method call per waiter made that
// scan the most expensive part of a queued request (docs/yaegi.md).
func grantOneLocked(p *pool) {
	held := int(atomic.LoadInt64(&p.count) - p.base)
	if held >= p.caps.size {
		return
	}
	fast := held - p.inFlight
	perHost := p.caps.perHost
	for s := p.head; s != nil; s = s.next {
		if p.byPartition[s.partition]+fast < p.caps.perPartition && (perHost == 0 || p.byHost[s.host]+fast < perHost) {
			unlinkLocked(p, s)
			takeLocked(p, s)
			close(s.ready)
			return
		}
	}
}

// uncount takes one from m[k], and forgets k at zero so that the maps stay as small as what
// is in flight or queued.
func uncount(m map[string]int, k string) {
	if n := m[k]; n > 1 {
		m[k] = n - 1
	} else {
		delete(m, k)
	}
}

// eligibleLocked says whether a fetch for partition and host may take a free slot. The fast
// slots held, whose partitions and hosts the pool does not know, count as theirs.
func eligibleLocked(p *pool, partition, host string) bool {
	held := heldLocked(p)
	fast := held - p.inFlight
	if held >= p.caps.size || p.byPartition[partition]+fast >= p.caps.perPartition {
		return false
	}
	return p.caps.perHost == 0 || p.byHost[host]+fast < p.caps.perHost
}

// heldLocked is how many slots p holds, fast ones included.
func heldLocked(p *pool) int {
	return int(atomic.LoadInt64(&p.count) - p.base)
}

// countLocked counts one slot more taken under the lock, in count and the high water.
func countLocked(p *pool) {
	p.inFlight++
	if held := int(atomic.AddInt64(&p.count, 1) - p.base); held > p.highWater {
		p.highWater = held
	}
}

// moveBase adds d to base, and to count with it.
func moveBase(p *pool, d int64) {
	p.base += d
	atomic.AddInt64(&p.count, d)
}

// grantWaiters is a fast slot's return that found a gate on: what it freed goes to the
// oldest waiters that may take it. A fast slot counts against every partition's and host's
// cap under mu, so one given back may make several of them eligible.
func grantWaiters(p *pool) {
	p.mu.Lock()
	if p.head != nil {
		grantLocked(p)
	}
	p.mu.Unlock()
}

// raiseFastHigh records count n reached by a fast Take, if it is the highest yet.
func raiseFastHigh(p *pool, n int64) {
	for {
		high := atomic.LoadInt64(&p.fastHigh)
		if n <= high || atomic.CompareAndSwapInt64(&p.fastHigh, high, n) {
			return
		}
	}
}

// takeLocked counts s as holding a slot.
func takeLocked(p *pool, s *slot) {
	s.state = stateHeld
	p.byPartition[s.partition]++
	if p.caps.perHost > 0 {
		p.byHost[s.host]++
		s.hostCounted = true
	}
	countLocked(p)
}

// grantLocked hands free slots to the oldest waiters whose partition and host are under their
// caps. Waiters it passes over keep their place, so each is served first once its partition
// frees a slot, and none of them blocks the waiters behind it (FR-LIM-3).
//
// A scan passes only waiters of partitions or hosts at their cap. At most size/perPartition
// partitions can be at their cap at once, each with at most queueShare waiters, so without a
// host cap a scan passes at most 4*128 waiters with the defaults, and usually stops at the
// first waiter it looks at.
func grantLocked(p *pool) {
	for s := p.head; s != nil && heldLocked(p) < p.caps.size; {
		next := s.next
		if eligibleLocked(p, s.partition, s.host) {
			unlinkLocked(p, s)
			takeLocked(p, s)
			close(s.ready)
		}
		s = next
	}
}

// pushLocked appends s to the queue.
func pushLocked(p *pool, s *slot) {
	s.prev = p.tail
	if p.tail != nil {
		p.tail.next = s
	} else {
		p.head = s
	}
	p.tail = s
	p.queued++
	if !p.waitGated {
		p.waitGated = true
		moveBase(p, gate)
	}
	p.queuedBy[s.partition]++
}

// unlinkLocked takes s out of the queue.
func unlinkLocked(p *pool, s *slot) {
	if s.prev != nil {
		s.prev.next = s.next
	} else {
		p.head = s.next
	}
	if s.next != nil {
		s.next.prev = s.prev
	} else {
		p.tail = s.prev
	}
	s.prev = nil
	s.next = nil
	p.queued--
	if p.queued == 0 {
		p.waitGated = false
		moveBase(p, -gate)
	}
	uncount(p.queuedBy, s.partition)
}

// stats returns a snapshot of the pool.
func (p *pool) stats() PoolStats {
	p.mu.Lock()
	st := PoolStats{
		Size:       p.caps.size,
		InFlight:   heldLocked(p),
		Queued:     p.queued,
		HighWater:  p.highWater,
		Partitions: len(p.byPartition),
	}
	// A fast Take's count had no gate on: only offset stood beyond its slots.
	if fast := int(atomic.LoadInt64(&p.fastHigh) - p.offset); fast > st.HighWater {
		st.HighWater = fast
	}
	for partition := range p.queuedBy {
		if _, holds := p.byPartition[partition]; !holds {
			st.Partitions++
		}
	}
	p.mu.Unlock()
	return st
}
