package limit

import (
	"context"
	"sync"
	"time"

	"github.com/weirproxy/weir/core/wait"
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

// pool is one budget of origin slots with its queue of waiters.
type pool struct {
	// mu guards every field below and the state and links of the pool's slots.
	mu          sync.Mutex
	caps        caps
	inFlight    int
	highWater   int
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
	if p.head != nil {
		grantLocked(p)
	}
	p.mu.Unlock()
}

// The pool's internals below are functions of p rather than methods: in Yaegi a method call
// goes through a reflective wrapper that a function call does not (docs/yaegi.md), and a
// queued request makes half a dozen of these calls.

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
	bound := p.caps.wait - spent
	if bound <= 0 {
		p.mu.Unlock()
		return ErrQueueWait
	}
	s.ready = make(chan struct{})
	s.state = stateQueued
	pushLocked(p, s)
	after := p.caps.afterFunc
	p.mu.Unlock()

	// The waits below go through core/wait, not select statements: Yaegi v0.16.1 shares a
	// select's cases between every goroutine running it, so a waiter could take another's
	// grant or timer, and wait past limiter.maxQueueWait for as long as the queue ahead took
	// (docs/yaegi.md).
	if ctx.Err() != nil {
		// Gone already: leave without arming a timer.
		return leave(ctx, p, s)
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
		timer = time.NewTimer(bound)
		fired = timer.C
	} else {
		stop = after(bound, func() {
			// The timer runs this on a goroutine of its own, where a panic would end the
			// whole Traefik process.
			defer func() { _ = recover() }()
			expire(p, s)
		})
	}
	i := wait.Any(s.ready, fired, ctx.Done())
	if i == 2 {
		stopTimer(timer, stop)
		return leave(ctx, p, s)
	}
	if i == 1 {
		// Sheds s unless a grant came first; either way s.ready is closed.
		expire(p, s)
	} else {
		stopTimer(timer, stop)
	}
	// s.state was set, under p's lock, before ready was closed, and only giveBack changes it
	// from here on.
	if s.state == stateHeld {
		return nil
	}
	return ErrQueueWait
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
	if p.inFlight >= p.caps.size {
		return
	}
	perHost := p.caps.perHost
	for s := p.head; s != nil; s = s.next {
		if p.byPartition[s.partition] < p.caps.perPartition && (perHost == 0 || p.byHost[s.host] < perHost) {
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

// eligibleLocked says whether a fetch for partition and host may take a free slot.
func eligibleLocked(p *pool, partition, host string) bool {
	if p.inFlight >= p.caps.size || p.byPartition[partition] >= p.caps.perPartition {
		return false
	}
	return p.caps.perHost == 0 || p.byHost[host] < p.caps.perHost
}

// takeLocked counts s as holding a slot.
func takeLocked(p *pool, s *slot) {
	s.state = stateHeld
	p.byPartition[s.partition]++
	if p.caps.perHost > 0 {
		p.byHost[s.host]++
		s.hostCounted = true
	}
	p.inFlight++
	if p.inFlight > p.highWater {
		p.highWater = p.inFlight
	}
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
	for s := p.head; s != nil && p.inFlight < p.caps.size; {
		next := s.next
		if eligibleLocked(p, s.partition, s.host) {
			unlinkLocked(p, s)
			takeLocked(p, s)
			close(s.ready)
		}
		s = next
	}
}

// pushLocked and unlinkLocked are a copy of the list code that core/store writes out too
// (ARCHITECTURE.md, "Linked lists"), kept on purpose: Yaegi has no generics, so shared list
// code would hold interface{} values, container/list's shape: an allocation beside each
// element and a type assertion on every read.
//
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
	uncount(p.queuedBy, s.partition)
}

// stats returns a snapshot of the pool.
func (p *pool) stats() PoolStats {
	p.mu.Lock()
	st := PoolStats{
		Size:       p.caps.size,
		InFlight:   p.inFlight,
		Queued:     p.queued,
		HighWater:  p.highWater,
		Partitions: len(p.byPartition),
	}
	for partition := range p.queuedBy {
		if _, holds := p.byPartition[partition]; !holds {
			st.Partitions++
		}
	}
	p.mu.Unlock()
	return st
}
