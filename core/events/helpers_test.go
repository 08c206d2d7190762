package events

import (
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/weirproxy/weir/internal/clocktest"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 250000000, time.UTC)

// rig is a Log with a hand-moved clock, a hand-fired timer and a sink that keeps the lines.
type rig struct {
	log   *Log
	clock *clocktest.Clock

	// mu guards the fields below.
	mu      sync.Mutex
	lines   []string
	pending []func()
	delays  []time.Duration
	// most is the most timers ever pending at once.
	most int
}

func newRig(t *testing.T, format, middleware string) *rig {
	t.Helper()
	r := &rig{clock: clocktest.New(t0)}
	l, err := New(Settings{
		Format:     format,
		Middleware: middleware,
		Sink:       func(line string) { r.keep(line) },
		Now:        func() time.Time { return r.clock.Now() },
		AfterFunc:  func(d time.Duration, f func()) { r.arm(d, f) },
	})
	if err != nil {
		t.Fatalf("New(%q) error = %v", format, err)
	}
	r.log = l
	return r
}

func (r *rig) keep(line string) {
	r.mu.Lock()
	r.lines = append(r.lines, line)
	r.mu.Unlock()
}

func (r *rig) arm(d time.Duration, f func()) {
	r.mu.Lock()
	r.pending = append(r.pending, f)
	r.delays = append(r.delays, d)
	if len(r.pending) > r.most {
		r.most = len(r.pending)
	}
	r.mu.Unlock()
}

// fire runs the pending timers, outside the rig's lock, and returns how many ran.
func (r *rig) fire() int {
	r.mu.Lock()
	fs := r.pending
	r.pending = nil
	r.mu.Unlock()
	for _, f := range fs {
		f()
	}
	return len(fs)
}

// take returns the lines written since the last take.
func (r *rig) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	lines := r.lines
	r.lines = nil
	return lines
}

// equalLines compares lines as reflect.DeepEqual does, with no line and nil alike.
func equalLines(a, b []string) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}
