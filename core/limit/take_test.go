package limit

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Take grants only what Wait would grant at once, and refuses (nil) whatever would queue.
func TestTake(t *testing.T) {
	tests := []struct {
		desc     string
		settings Settings
		held     []Request // slots held before Take
		req      Request
		want     bool
	}{
		{"free slot", Settings{}, nil, search, true},
		{"pool full", Settings{MaxConcurrent: 2}, []Request{home, about}, search, false},
		{"partition at its cap", Settings{MaxPerPartition: 1}, []Request{search}, search, false},
		{"another partition under its cap", Settings{MaxPerPartition: 1}, []Request{search}, home, true},
		{"host at its cap", Settings{MaxPerHost: 2}, []Request{home, about}, search, false},
		{"another host under its cap", Settings{MaxPerHost: 2}, []Request{home, about}, blog, true},
		{"upload pool full, fetch pool free", Settings{MaxUpload: 1}, []Request{upload}, search, true},
		{"upload pool full", Settings{MaxUpload: 1}, []Request{upload}, upload, false},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			l := mustNew(t, newFakeTimers().settings(tc.settings))
			for _, r := range tc.held {
				hold(t, l, r)
			}
			s := Take(l, tc.req.Partition, tc.req.Host, tc.req.Upload)
			if got := s != nil; got != tc.want {
				t.Fatalf("Take(%+v) granted = %v, want %v", tc.req, got, tc.want)
			}
			if s == nil {
				return
			}
			before := l.Usage(tc.req)
			Return(s)
			Return(s) // a second Return does nothing
			after := l.Usage(tc.req)
			if after.InFlight != before.InFlight-1 {
				t.Errorf("partition in flight after Return twice: got %d, want %d", after.InFlight, before.InFlight-1)
			}
			if tc.settings.MaxPerHost > 0 && after.HostInFlight != before.HostInFlight-1 {
				t.Errorf("host in flight after Return twice: got %d, want %d", after.HostInFlight, before.HostInFlight-1)
			}
		})
	}
}

// A request that finds others queued joins them rather than take a slot freed for them, and
// a slot given back by Return goes to the oldest waiter.
func TestTakeYieldsToWaiters(t *testing.T) {
	l, ft := newTestLimiter(t, Settings{MaxConcurrent: 1})
	s := Take(l, search.Partition, search.Host, false)
	if s == nil {
		t.Fatal("Take on an empty pool: got nil, want a slot")
	}
	waiter, _ := queue(t, l, ft, home)
	if again := Take(l, about.Partition, about.Host, false); again != nil {
		t.Fatal("Take with a waiter queued and the pool full: got a slot, want nil")
	}
	Return(s)
	granted(t, waiter)()
	wantFetch(t, l, 0, 0)
}

// Wait grants a free slot at once, queues otherwise, and sheds when the queue is full.
func TestWait(t *testing.T) {
	l, ft := newTestLimiter(t, Settings{MaxConcurrent: 1, MaxQueue: 1})
	ctx := context.Background()
	first, err := Wait(ctx, l, search.Partition, search.Host, false)
	if err != nil || first == nil {
		t.Fatalf("Wait on an empty pool: got %v, %v; want a slot", first, err)
	}

	type waited struct {
		s   *Slot
		err error
	}
	ch := make(chan waited, 1)
	go func() {
		s, err := Wait(ctx, l, home.Partition, home.Host, false)
		ch <- waited{s, err}
	}()
	timer := ft.next(t)
	if _, err := Wait(ctx, l, about.Partition, about.Host, false); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("Wait with the queue full: got %v, want %v", err, ErrQueueFull)
	}
	Return(first)
	var w waited
	// Not `case w = <-ch:`: Yaegi panics on a receive assigned to an existing variable.
	select {
	case got := <-ch:
		w = got
	case <-time.After(5 * time.Second):
		t.Fatal("hangs: a queued Wait was not granted the slot given back")
	}
	if w.err != nil || w.s == nil {
		t.Fatalf("queued Wait: got %v, %v; want a slot", w.s, w.err)
	}
	if !timer.isStopped() {
		t.Errorf("the granted waiter's timer was left running")
	}
	wantFetch(t, l, 1, 0)
	Return(w.s)
	wantFetch(t, l, 0, 0)
}

// A Wait whose context ends while queued leaves the queue at once.
func TestWaitContextEnds(t *testing.T) {
	l, ft := newTestLimiter(t, Settings{MaxConcurrent: 1})
	holder := hold(t, l, home)
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan error, 1)
	go func() {
		_, err := Wait(ctx, l, search.Partition, search.Host, false)
		ch <- err
	}()
	ft.next(t)
	cancel()
	select {
	case err := <-ch:
		if !errors.Is(err, ErrContextDone) {
			t.Fatalf("Wait after its context ended: got %v, want %v", err, ErrContextDone)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("hangs: a queued Wait whose context ended never returned")
	}
	wantFetch(t, l, 1, 0)
	holder()
	wantFetch(t, l, 0, 0)
}
