package limit

import (
	"fmt"
	"time"

	"github.com/weirproxy/weir/core/setting"
)

// Defaults applied to zero Settings fields.
const (
	// DefaultMaxConcurrent is the fetch pool's size (FR-LIM-2).
	DefaultMaxConcurrent = 64
	// DefaultMaxQueue bounds the waiters of each pool (FR-LIM-2).
	DefaultMaxQueue = 1024
	// DefaultMaxQueueWait bounds one waiter's wait (FR-LIM-2).
	DefaultMaxQueueWait = 2 * time.Second
	// DefaultMaxPerPartition caps the slots one partition holds in a pool (FR-LIM-3).
	DefaultMaxPerPartition = 16
	// DefaultMaxUpload is the upload pool's size (FR-LIM-7).
	DefaultMaxUpload = 16

	// queueShareDivisor sets the default share of the queue one partition may occupy:
	// MaxQueue/8, so at least eight flooded partitions are needed to fill the queue, and never
	// less than MaxPerPartition, so a partition can always queue as many waiters as it may
	// hold slots (FR-LIM-3).
	queueShareDivisor = 8
	// reserveDivisor keeps the last quarter of a pool's slots for foreground fetches: background
	// work never takes a slot that would leave fewer than size/4 free (FR-LIM-4).
	reserveDivisor = 4
)

// Settings configures a Limiter. The zero value of every field selects its default.
type Settings struct {
	// MaxConcurrent is how many origin fetches without a request body may be in flight at
	// once (FR-LIM-2). Zero: DefaultMaxConcurrent (64).
	MaxConcurrent int
	// MaxQueue is how many requests may wait for a slot in each pool; one more is shed with
	// ErrQueueFull (FR-LIM-2). Zero: DefaultMaxQueue (1024).
	MaxQueue int
	// MaxQueueWait is how long a request may wait for a slot before it is shed with
	// ErrQueueWait (FR-LIM-2). Zero: DefaultMaxQueueWait (2s).
	MaxQueueWait time.Duration
	// MaxPerPartition is how many slots of a pool one partition may hold at once (FR-LIM-3).
	// Zero: DefaultMaxPerPartition (16).
	MaxPerPartition int
	// MaxQueuePerPartition is how many of a pool's waiters may belong to one partition; one
	// more is shed with ErrPartitionQueueFull (FR-LIM-3). Zero: the larger of MaxPerPartition
	// and MaxQueue/8 (128 with the other defaults), never more than MaxQueue.
	MaxQueuePerPartition int
	// MaxPerHost is how many slots of a pool one host may hold at once. Zero: no host cap.
	MaxPerHost int
	// MaxUpload is how many origin fetches with a request body may be in flight at once, in
	// a pool of their own (FR-LIM-7). Zero: DefaultMaxUpload (16).
	MaxUpload int

	// AfterFunc arms the timer that bounds a waiter's wait: it calls f once after d unless
	// stop is called first. Only waiters arm one; a request that finds a free slot does not.
	// Nil: a real time.Timer, read through its channel. Tests inject timers they fire by
	// hand.
	AfterFunc func(d time.Duration, f func()) (stop func() bool)
}

// Validate reports the first field that holds a value no default can stand for. The error
// names the field as operators write it and the value, for the plugin to prefix.
func (s Settings) Validate() error {
	if s.MaxQueueWait < 0 {
		return fmt.Errorf("maxQueueWait: %s must be positive", s.MaxQueueWait)
	}
	counts := []struct {
		field string
		value int
		least string
	}{
		{"maxConcurrent", s.MaxConcurrent, "1"},
		{"maxQueue", s.MaxQueue, "1"},
		{"maxPerPartition", s.MaxPerPartition, "1"},
		{"maxQueuePerPartition", s.MaxQueuePerPartition, "1"},
		{"maxPerHost", s.MaxPerHost, "0 (0 turns the host cap off)"},
		{"maxUpload", s.MaxUpload, "1"},
	}
	for _, c := range counts {
		if c.value < 0 {
			return fmt.Errorf("%s: %d must be at least %s", c.field, c.value, c.least)
		}
	}
	d := s.withDefaults()
	if d.MaxQueuePerPartition > d.MaxQueue {
		return fmt.Errorf("maxQueuePerPartition: %d must be at most maxQueue (%d)", d.MaxQueuePerPartition, d.MaxQueue)
	}
	return nil
}

// withDefaults returns s with every zero field replaced by its default.
func (s Settings) withDefaults() Settings {
	s.MaxConcurrent = setting.Int(s.MaxConcurrent, DefaultMaxConcurrent)
	s.MaxQueue = setting.Int(s.MaxQueue, DefaultMaxQueue)
	s.MaxQueueWait = setting.Duration(s.MaxQueueWait, DefaultMaxQueueWait)
	s.MaxPerPartition = setting.Int(s.MaxPerPartition, DefaultMaxPerPartition)
	if s.MaxQueuePerPartition == 0 {
		share := s.MaxQueue / queueShareDivisor
		if share < s.MaxPerPartition {
			share = s.MaxPerPartition
		}
		if share > s.MaxQueue {
			share = s.MaxQueue
		}
		s.MaxQueuePerPartition = share
	}
	s.MaxUpload = setting.Int(s.MaxUpload, DefaultMaxUpload)
	return s
}
