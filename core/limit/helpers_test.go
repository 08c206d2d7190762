package limit

import (
	"context"
	"sync"
	"testing"
	"time"
)

// fakeTimers stands in for time.AfterFunc: tests learn from armed that a waiter has queued
// and fire its timer by hand, so no test sleeps.
type fakeTimers struct {
	armed chan *fakeTimer
}

func newFakeTimers() *fakeTimers {
	return &fakeTimers{armed: make(chan *fakeTimer, 64)}
}

// settings returns s with its timers injected.
func (ft *fakeTimers) settings(s Settings) Settings {
	s.AfterFunc = func(d time.Duration, f func()) func() bool { return ft.afterFunc(d, f) }
	return s
}

func (ft *fakeTimers) afterFunc(d time.Duration, f func()) func() bool {
	tm := &fakeTimer{d: d, f: f}
	ft.armed <- tm
	return func() bool { return tm.stop() }
}

// next returns the timer armed by the next waiter to queue.
func (ft *fakeTimers) next(t *testing.T) *fakeTimer {
	t.Helper()
	select {
	case tm := <-ft.armed:
		return tm
	case <-time.After(5 * time.Second):
		t.Fatal("hangs: no waiter armed a timer")
	}
	return nil
}

// none fails the test if a timer was armed.
func (ft *fakeTimers) none(t *testing.T) {
	t.Helper()
	select {
	case tm := <-ft.armed:
		t.Fatalf("a timer of %s was armed, want none", tm.d)
	default:
	}
}

type fakeTimer struct {
	d time.Duration
	f func()

	// mu guards stopped and fired.
	mu      sync.Mutex
	stopped bool
	fired   bool
}

// fire runs the timer's function unless it was stopped or fired before.
func (tm *fakeTimer) fire() {
	tm.mu.Lock()
	run := !tm.stopped && !tm.fired
	tm.fired = true
	tm.mu.Unlock()
	if run {
		tm.f()
	}
}

func (tm *fakeTimer) stop() bool {
	tm.mu.Lock()
	was := !tm.stopped && !tm.fired
	tm.stopped = true
	tm.mu.Unlock()
	return was
}

func (tm *fakeTimer) isStopped() bool {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.stopped
}

// result is what acquire returned on another goroutine.
type result struct {
	release func()
	err     error
}

// queue starts an acquire that must wait, and returns once it has queued.
func queue(t *testing.T, l *Limiter, ft *fakeTimers, req Request) (<-chan result, *fakeTimer) {
	t.Helper()
	return queueCtx(t, l, ft, context.Background(), req)
}

// queueCtx is queue for a request whose context the test may end.
func queueCtx(t *testing.T, l *Limiter, ft *fakeTimers, ctx context.Context, req Request) (<-chan result, *fakeTimer) {
	t.Helper()
	ch := make(chan result, 1)
	go func() {
		release, err := acquire(l, ctx, req)
		ch <- result{release: release, err: err}
	}()
	return ch, ft.next(t)
}

// await returns the result of a queued acquire.
func await(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("hangs: queued acquire never returned")
	}
	return result{}
}

// granted awaits a queued acquire and fails unless it got a slot.
func granted(t *testing.T, ch <-chan result) func() {
	t.Helper()
	r := await(t, ch)
	if r.err != nil {
		t.Fatalf("queued acquire: got error %v, want a slot", r.err)
	}
	return r.release
}

// waiting fails the test if a queued acquire has returned.
func waiting(t *testing.T, name string, ch <-chan result) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("%s returned (err %v), want it still queued", name, r.err)
	default:
	}
}

// acquire is Wait for req with the slot given back by the returned function, which does
// nothing on error and may be called twice, as the tests hold slots.
func acquire(l *Limiter, ctx context.Context, req Request) (func(), error) {
	sl, err := Wait(ctx, l, req.Partition, req.Host, req.Upload)
	if err != nil {
		return func() {}, err
	}
	return func() { Return(sl) }, nil
}

// tryAcquire is TryTake for req, as acquire is Wait.
func tryAcquire(l *Limiter, req Request) (func(), error) {
	sl, err := TryTake(l, req.Partition, req.Host, req.Upload)
	if err != nil {
		return func() {}, err
	}
	return func() { Return(sl) }, nil
}

// newTestLimiter builds a Limiter whose timers the test fires, or fails the test.
func newTestLimiter(t *testing.T, s Settings) (*Limiter, *fakeTimers) {
	t.Helper()
	ft := newFakeTimers()
	return mustNew(t, ft.settings(s)), ft
}

// mustNew builds a Limiter or fails the test.
func mustNew(t *testing.T, s Settings) *Limiter {
	t.Helper()
	l, err := New(s)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return l
}

// hold acquires a slot that must be free at once.
func hold(t *testing.T, l *Limiter, req Request) func() {
	t.Helper()
	release, err := acquire(l, context.Background(), req)
	if err != nil {
		t.Fatalf("acquire %+v: got error %v, want a free slot", req, err)
	}
	return release
}

// wantFetch checks the fetch pool's in-flight and queued counts.
func wantFetch(t *testing.T, l *Limiter, inFlight, queued int) {
	t.Helper()
	st := l.Stats().Fetch
	if st.InFlight != inFlight || st.Queued != queued {
		t.Fatalf("fetch pool: got %d in flight, %d queued; want %d, %d", st.InFlight, st.Queued, inFlight, queued)
	}
}
