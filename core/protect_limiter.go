package core

import (
	"time"

	"github.com/weirproxy/weir/core/limit"
)

// queueWait is limiter.maxQueueWait as shed answers say it in Retry-After: its default when
// unset.
func queueWait(d time.Duration) time.Duration {
	if d <= 0 {
		return limit.DefaultMaxQueueWait
	}
	return d
}
