// Package limit is Weir's origin concurrency budget: every origin fetch holds a slot from
// before its request is sent until its answer's body is buffered (FR-LIM-1), so however many
// requests miss at once, the origin sees a bounded number of fetches.
//
// A Limiter holds two pools: one for fetches without a request body and one for uploads, so a
// slow uploader exhausts only its own pool (FR-LIM-7). In each pool a request with no free
// slot waits in a bounded queue for a bounded time and is otherwise shed with an error naming
// the reason (FR-LIM-2, FR-LIM-5). A partition (scheme, host and path without query) never
// holds more than its cap of a pool's slots nor more than its share of the pool's queue, and
// a freed slot goes to the oldest waiter whose partition and host are under their caps, so a
// flood on one path cannot stall the others (FR-LIM-3). Background work never waits and never
// takes the last quarter of a pool (FR-LIM-4).
//
// The package knows nothing of HTTP caching; the engine decides which fetches are foreground,
// background or uploads and what to answer when one is shed.
package limit

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Reasons a request is refused a slot (FR-LIM-5). Detail turns each into a Cache-Status
// detail token.
var (
	// ErrQueueFull: no slot was free and the pool's queue already holds MaxQueue waiters.
	ErrQueueFull = errors.New("origin queue full")
	// ErrPartitionQueueFull: no slot was free for the partition and its share of the queue
	// (MaxQueuePerPartition) is taken.
	ErrPartitionQueueFull = errors.New("partition's share of the origin queue full")
	// ErrQueueWait: the request waited MaxQueueWait without getting a slot.
	ErrQueueWait = errors.New("origin queue wait exceeded")
	// ErrContextDone: the request's context ended before it got a slot. The error returned
	// also wraps the context's own error.
	ErrContextDone = errors.New("request gone before an origin slot was free")
	// ErrNoBackgroundSlot: background work found no slot outside the foreground reserve, or
	// its partition or host at its cap; it never waits.
	ErrNoBackgroundSlot = errors.New("no origin slot free for background work")
)

// Detail returns a short token for err, fit for a Cache-Status detail parameter, or "" for an
// error that is not one of this package's.
func Detail(err error) string {
	switch {
	case errors.Is(err, ErrQueueFull):
		return "queue-full"
	case errors.Is(err, ErrPartitionQueueFull):
		return "partition-queue-full"
	case errors.Is(err, ErrQueueWait):
		return "queue-wait"
	case errors.Is(err, ErrContextDone):
		return "client-gone"
	case errors.Is(err, ErrNoBackgroundSlot):
		return "background-busy"
	}
	return ""
}

// Request describes the fetch that wants a slot.
type Request struct {
	// Partition groups fetches for fairness: the engine passes scheme, host and path without
	// the query, so distinct queries on one path share one partition (FR-LIM-3). A partition
	// is expected to belong to one host.
	Partition string
	// Host names the origin host, for MaxPerHost. Unused while MaxPerHost is zero.
	Host string
	// Upload marks a fetch that sends a request body: it draws from the upload pool
	// (FR-LIM-7).
	Upload bool
}

// Limiter is Weir's origin concurrency budget. It is safe for concurrent use.
type Limiter struct {
	fetch  *pool
	upload *pool
}

// New returns a Limiter with settings s, or the error of s.Validate.
func New(s Settings) (*Limiter, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	l := &Limiter{fetch: newPool(), upload: newPool()}
	l.apply(s.withDefaults())
	return l, nil
}

// Update applies new settings without dropping any slot held or any waiter queued. A pool
// that grows grants its waiters at once; one that shrinks lets fetches over the new caps
// finish and grants no more until they are back under them. A new MaxQueueWait or AfterFunc
// applies to waiters that queue from now on.
func (l *Limiter) Update(s Settings) error {
	if err := s.Validate(); err != nil {
		return err
	}
	l.apply(s.withDefaults())
	return nil
}

// apply sets both pools' caps from settings that carry their defaults.
func (l *Limiter) apply(s Settings) {
	l.fetch.setCaps(caps{
		size: s.MaxConcurrent, queue: s.MaxQueue, queueShare: s.MaxQueuePerPartition,
		perPartition: s.MaxPerPartition, perHost: s.MaxPerHost,
		wait: s.MaxQueueWait, afterFunc: s.AfterFunc,
	})
	l.upload.setCaps(caps{
		size: s.MaxUpload, queue: s.MaxQueue, queueShare: s.MaxQueuePerPartition,
		perPartition: s.MaxPerPartition, perHost: s.MaxPerHost,
		wait: s.MaxQueueWait, afterFunc: s.AfterFunc,
	})
}

// TryTake is Wait for background work (refreshes, warming): it never waits, and fails with
// ErrNoBackgroundSlot unless a slot is free for the partition and host and taking it leaves
// at least a quarter of the pool free for foreground fetches (FR-LIM-4): 48 of the default
// 64 slots, 3 of 4, 1 of 2, none of a single slot.
func TryTake(l *Limiter, partition, host string, upload bool) (*Slot, error) {
	p := l.fetch
	if upload {
		p = l.upload
	}
	p.mu.Lock()
	// free is what remains after this fetch takes its slot; it must stay at least size/4.
	free := p.caps.size - p.inFlight - 1
	if free*reserveDivisor < p.caps.size || !eligibleLocked(p, partition, host) {
		p.mu.Unlock()
		return nil, ErrNoBackgroundSlot
	}
	sl := &Slot{p: p, s: slot{partition: partition, host: host, state: stateHeld}}
	takeLocked(p, &sl.s)
	p.mu.Unlock()
	return sl, nil
}

// Stats is a snapshot of both pools.
type Stats struct {
	// Fetch is the pool of fetches without a request body.
	Fetch PoolStats
	// Upload is the pool of fetches with a request body.
	Upload PoolStats
}

// PoolStats is a snapshot of one pool.
type PoolStats struct {
	// Size is the pool's MaxConcurrent or MaxUpload.
	Size int
	// InFlight is how many slots are held.
	InFlight int
	// Queued is how many requests wait for a slot.
	Queued int
	// HighWater is the most slots held at once since the Limiter was built.
	HighWater int
	// Partitions is how many partitions hold or wait for a slot.
	Partitions int
}

// Stats returns a snapshot of both pools, for metrics and tests.
func (l *Limiter) Stats() Stats {
	return Stats{Fetch: l.fetch.stats(), Upload: l.upload.stats()}
}

// Usage is what one partition and its host hold in one pool.
type Usage struct {
	// InFlight is how many slots the partition holds.
	InFlight int
	// Queued is how many of the partition's requests wait.
	Queued int
	// HostInFlight is how many slots the host holds; counted only while MaxPerHost is set.
	HostInFlight int
}

// Usage reports what req's partition and host hold in req's pool.
func (l *Limiter) Usage(req Request) Usage {
	p := l.fetch
	if req.Upload {
		p = l.upload
	}
	p.mu.Lock()
	u := Usage{
		InFlight:     p.byPartition[req.Partition],
		Queued:       p.queuedBy[req.Partition],
		HostInFlight: p.byHost[req.Host],
	}
	p.mu.Unlock()
	return u
}

// contextDone is the error for a waiter whose context ended: ErrContextDone, also wrapping
// the context's reason so errors.Is(err, context.DeadlineExceeded) holds.
func contextDone(ctx context.Context) error {
	return fmt.Errorf("%w: %w", ErrContextDone, ctx.Err())
}

// Slot is an origin slot taken by Take, given back by Return. It holds its slot by value:
// one allocation per pass-through request rather than two.
type Slot struct {
	p *pool
	s slot
}

// The limiter hands out one style of slot: a *Slot, taken by Take (free at once), Wait (free
// at once, or after queueing) or TryTake (background work), and given back by Return. They
// are functions rather than methods, and the slot is no closure: in Yaegi a method call goes
// through a reflective wrapper and a closure is allocated, on every origin request.

// Take is Wait's path for a slot free at once, as functions rather than methods and without a
// closure, since pass-through requests take a slot each. It returns nil when the request would
// have to queue; the caller then calls Wait, which queues it.
//
// Its body is eligibleLocked and takeLocked written out, with the host cap, off by default,
// in functions of its own: in Yaegi a call allocates a slot for every value of the callee's
// whole body, taken branch or not (docs/yaegi.md).
func Take(l *Limiter, partition, host string, upload bool) *Slot {
	p := l.fetch
	if upload {
		p = l.upload
	}
	p.mu.Lock()
	if p.caps.perHost > 0 {
		return takeCappedLocked(p, partition, host)
	}
	n := p.byPartition[partition]
	if p.head != nil || p.inFlight >= p.caps.size || n >= p.caps.perPartition {
		// Waiters come first: a request that finds others queued joins them.
		p.mu.Unlock()
		return nil
	}
	p.byPartition[partition] = n + 1
	p.inFlight++
	if p.inFlight > p.highWater {
		p.highWater = p.inFlight
	}
	p.mu.Unlock()
	return &Slot{p: p, s: slot{partition: partition, host: host, state: stateHeld}}
}

// takeCappedLocked is Take with the host cap on: eligibleLocked and takeLocked, and it
// unlocks p.
func takeCappedLocked(p *pool, partition, host string) *Slot {
	defer p.mu.Unlock()
	if p.head != nil || !eligibleLocked(p, partition, host) {
		// Waiters come first: a request that finds others queued joins them.
		return nil
	}
	sl := &Slot{p: p, s: slot{partition: partition, host: host}}
	takeLocked(p, &sl.s)
	return sl
}

// Wait returns once the request holds a slot, to give back with Return when the answer's body
// is buffered or the fetch failed (FR-LIM-1).
//
// With no slot free, Wait queues in the pool's queue until a slot is granted, MaxQueueWait
// passes (ErrQueueWait) or ctx ends (ErrContextDone, and the waiter leaves the queue at once).
// A full queue or partition share sheds the request at once (ErrQueueFull,
// ErrPartitionQueueFull). A free slot is granted even if ctx has already ended; the fetch
// itself will see that.
func Wait(ctx context.Context, l *Limiter, partition, host string, upload bool) (*Slot, error) {
	return WaitAfter(ctx, l, partition, host, upload, 0)
}

// WaitAfter is Wait for a request that has already waited spent before it (for its host's
// pace): it queues for what is left of MaxQueueWait, and is refused at once with
// ErrQueueWait when nothing is, so that the two waits together never pass the bound an
// operator set.
func WaitAfter(ctx context.Context, l *Limiter, partition, host string, upload bool, spent time.Duration) (*Slot, error) {
	p := l.fetch
	if upload {
		p = l.upload
	}
	sl := &Slot{p: p, s: slot{partition: partition, host: host}}
	p.mu.Lock()
	if eligibleLocked(p, partition, host) {
		takeLocked(p, &sl.s)
		p.mu.Unlock()
		return sl, nil
	}
	if err := queueLocked(ctx, p, &sl.s, spent); err != nil {
		return nil, err
	}
	return sl, nil
}

// Return gives a slot from Take, Wait or TryTake back; a second Return of the same slot does
// nothing, so a caller may both defer it against a panic and call it once the body is
// buffered.
func Return(s *Slot) {
	giveBack(s.p, &s.s)
}
