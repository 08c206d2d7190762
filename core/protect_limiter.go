package core

import (
	"errors"
	"net/http"
	"time"

	"github.com/weirproxy/weir/core/limit"
)

// The origin concurrency budget (limiter.*, FR-LIM-1..7): every origin request holds a
// slot of core/limit's pools while it goes, taken in the gate (enter, takeSlot), the pass
// path (pass) and given back by leave. What is refused, and the answer, are decided here.

// The limiter's refusals (FR-LIM-5). A stale entry within its stale-if-error window answers
// instead: the origin is busy, not known to be failing.
var (
	// reasonQueueFull: no slot free and the queue full.
	reasonQueueFull = &reason{name: "queue-full", status: http.StatusServiceUnavailable, text: textUnavailable, stale: staleIfError}
	// reasonPartitionQueueFull: no slot free and the partition's share of the queue taken
	// (limiter.maxQueuePerPartition).
	reasonPartitionQueueFull = &reason{name: "partition-queue-full", status: http.StatusServiceUnavailable, text: textUnavailable, stale: staleIfError}
	// reasonQueueWait: queued limiter.maxQueueWait without a slot.
	reasonQueueWait = &reason{name: "queue-wait", status: http.StatusServiceUnavailable, text: textUnavailable, stale: staleIfError}
	// reasonBackgroundBusy: background work (a refresh, warming) found no slot outside the
	// foreground's reserve (FR-LIM-4); it never waits.
	reasonBackgroundBusy = &reason{name: "background-busy", status: http.StatusServiceUnavailable, text: textUnavailable, stale: staleIfError}
)

func init() {
	registerReasons(reasonQueueFull, reasonPartitionQueueFull, reasonQueueWait, reasonBackgroundBusy)
}

// limiterRefusal is the refusal of a request the limiter refused with err: when to come back
// is the queue wait (h.queueWait). The limiter returns its errors as they are, but for
// ErrContextDone, which wraps the context's (limit.contextDone): a tagged switch compares
// them without errors.Is's calls into compiled code, which a flood's every shed request
// would pay under Yaegi (docs/yaegi.md). Any other error counts as queue-full.
func limiterRefusal(h *Handler, err error) refusal {
	why := reasonQueueFull
	switch err {
	case limit.ErrQueueWait:
		why = reasonQueueWait
	case limit.ErrPartitionQueueFull:
		why = reasonPartitionQueueFull
	case limit.ErrNoBackgroundSlot:
		why = reasonBackgroundBusy
	case limit.ErrQueueFull:
	default:
		if errors.Is(err, limit.ErrContextDone) {
			return refusal{why: reasonClientLeft}
		}
	}
	return refusal{why: why, retryAfter: h.queueWait}
}

// queueWait is limiter.maxQueueWait as shed answers say it in Retry-After: its default when
// unset.
func queueWait(d time.Duration) time.Duration {
	if d <= 0 {
		return limit.DefaultMaxQueueWait
	}
	return d
}
