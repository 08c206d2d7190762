package admit

import (
	"sync"
	"sync/atomic"
	"time"
)

// LagEvery is the period of the ticker whose lateness is the scheduler lag.
const LagEvery = 10 * time.Millisecond

// lagWatch is the process's one lag watcher: scheduler lag is the process's, whatever the
// middleware.
var lagWatch struct {
	once sync.Once
	// lag is the latest lateness in nanoseconds, decayed: a late tick is remembered for a
	// few ticks, so that one request's decision does not fall between two late ticks.
	lag int64
}

// SchedulerLag returns how late the process's 10ms ticker fires now, starting the ticker's
// goroutine on its first call. The goroutine lives as long as the process: Traefik keeps one
// interpreter per plugin for its life.
func SchedulerLag() time.Duration {
	lagWatch.once.Do(func() { go watchLag() })
	return time.Duration(atomic.LoadInt64(&lagWatch.lag))
}

// watchLag measures each tick's lateness: the time between the tick and its receipt.
func watchLag() {
	defer func() { _ = recover() }()
	t := time.NewTicker(LagEvery)
	defer t.Stop()
	for at := range t.C {
		late := int64(time.Since(at))
		if late < 0 {
			late = 0
		}
		atomic.StoreInt64(&lagWatch.lag, decay(atomic.LoadInt64(&lagWatch.lag), late))
	}
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
