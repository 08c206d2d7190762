package limit

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"
)

func TestQueueGrantsInArrivalOrder(t *testing.T) {
	l, ft := newTestLimiter(t, Settings{MaxConcurrent: 1})
	releaseFirst := hold(t, l, home)
	second, _ := queue(t, l, ft, search)
	third, _ := queue(t, l, ft, about)
	fourth, _ := queue(t, l, ft, blog)
	wantFetch(t, l, 1, 3)

	releaseFirst()
	releaseSecond := granted(t, second)
	waiting(t, "third", third)
	waiting(t, "fourth", fourth)
	wantFetch(t, l, 1, 2)

	releaseSecond()
	releaseThird := granted(t, third)
	waiting(t, "fourth", fourth)
	releaseThird()
	granted(t, fourth)()
	wantFetch(t, l, 0, 0)
}

func TestPartitionCapLetsOtherPartitionsPass(t *testing.T) {
	l, ft := newTestLimiter(t, Settings{MaxConcurrent: 3, MaxPerPartition: 2})
	releaseSearch1 := hold(t, l, search)
	hold(t, l, search)
	// /search is at its cap with a slot free: its next request waits, others pass.
	search3, _ := queue(t, l, ft, search)
	releaseHome := hold(t, l, home)
	wantFetch(t, l, 3, 1)

	home2, _ := queue(t, l, ft, home)
	about1, _ := queue(t, l, ft, about)
	// The oldest waiter (/search) is at its partition cap: the freed slot goes past it.
	releaseHome()
	releaseHome2 := granted(t, home2)
	waiting(t, "search3", search3)
	waiting(t, "about1", about1)

	releaseHome2()
	granted(t, about1)
	waiting(t, "search3", search3)

	// Once /search frees a slot, its waiter is served first.
	releaseSearch1()
	granted(t, search3)
	if got := l.Usage(search).InFlight; got != 2 {
		t.Fatalf("/search in flight: got %d, want its cap 2", got)
	}
	wantFetch(t, l, 3, 0)
}

func TestFloodOnOnePathIsShedWhileOthersFlow(t *testing.T) {
	l, ft := newTestLimiter(t, Settings{MaxQueue: 64})
	share := l.fetch.caps.queueShare
	for i := 0; i < DefaultMaxPerPartition; i++ {
		hold(t, l, search)
	}
	for i := 0; i < share; i++ {
		queue(t, l, ft, search)
	}
	if _, err := acquire(l, context.Background(), search); !errors.Is(err, ErrPartitionQueueFull) {
		t.Fatalf("flooded /search: got %v, want %v", err, ErrPartitionQueueFull)
	}
	// Other paths take every remaining slot.
	for i := 0; i < DefaultMaxConcurrent-DefaultMaxPerPartition; i++ {
		hold(t, l, Request{Partition: "https://shop.example/item/" + strconv.Itoa(i), Host: "shop.example"})
	}
	wantFetch(t, l, DefaultMaxConcurrent, share)
}

func TestHostCap(t *testing.T) {
	l, ft := newTestLimiter(t, Settings{MaxConcurrent: 10, MaxPerHost: 2})
	releaseHome := hold(t, l, home)
	hold(t, l, search)
	third, _ := queue(t, l, ft, about)
	// Another host flows past the waiter whose host is at its cap.
	hold(t, l, blog)
	if got := l.Usage(home).HostInFlight; got != 2 {
		t.Fatalf("host in flight: got %d, want 2", got)
	}
	waiting(t, "third", third)
	releaseHome()
	granted(t, third)
	wantFetch(t, l, 3, 0)
}

func TestShedAtOnce(t *testing.T) {
	tests := []struct {
		desc     string
		settings Settings
		queued   []Request // waiters queued before the request
		req      Request
		want     error
	}{
		{
			desc:     "queue full",
			settings: Settings{MaxConcurrent: 1, MaxQueue: 2},
			queued:   []Request{search, about},
			req:      blog,
			want:     ErrQueueFull,
		},
		{
			desc:     "partition share of the queue full",
			settings: Settings{MaxConcurrent: 1, MaxQueue: 10, MaxQueuePerPartition: 2},
			queued:   []Request{search, search},
			req:      search,
			want:     ErrPartitionQueueFull,
		},
		{
			desc:     "partition share is the larger of maxPerPartition and maxQueue/8",
			settings: Settings{MaxConcurrent: 1, MaxQueue: 16, MaxPerPartition: 1},
			queued:   []Request{search, search},
			req:      search,
			want:     ErrPartitionQueueFull,
		},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			l, ft := newTestLimiter(t, tt.settings)
			hold(t, l, home)
			for _, req := range tt.queued {
				queue(t, l, ft, req)
			}
			release, err := acquire(l, context.Background(), tt.req)
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			release() // a no-op, and safe to call
			ft.none(t)
			wantFetch(t, l, 1, len(tt.queued))
		})
	}
}

func TestPartitionShareLeavesRoomForOthers(t *testing.T) {
	l, ft := newTestLimiter(t, Settings{MaxConcurrent: 1, MaxQueue: 10, MaxQueuePerPartition: 1})
	hold(t, l, home)
	queue(t, l, ft, search)
	if _, err := acquire(l, context.Background(), search); !errors.Is(err, ErrPartitionQueueFull) {
		t.Fatalf("second /search waiter: got %v, want %v", err, ErrPartitionQueueFull)
	}
	queue(t, l, ft, about)
	wantFetch(t, l, 1, 2)
}

func TestQueueWaitBound(t *testing.T) {
	l, ft := newTestLimiter(t, Settings{MaxConcurrent: 1})
	release := hold(t, l, home)
	ch, tm := queue(t, l, ft, search)
	if tm.d != DefaultMaxQueueWait {
		t.Fatalf("timer: got %s, want %s", tm.d, DefaultMaxQueueWait)
	}
	tm.fire()
	r := await(t, ch)
	if !errors.Is(r.err, ErrQueueWait) {
		t.Fatalf("got %v, want %v", r.err, ErrQueueWait)
	}
	r.release()
	wantFetch(t, l, 1, 0)
	// The slot freed later goes to nobody: the shed waiter is gone.
	release()
	wantFetch(t, l, 0, 0)
}

// WaitAfter queues for what is left of the bound after the time spent before it, and a
// request that spent all of it is refused at once, unqueued.
func TestWaitAfterSpent(t *testing.T) {
	tests := []struct {
		desc      string
		spent     time.Duration
		wantTimer time.Duration // 0: refused at once
	}{
		{desc: "nothing spent", spent: 0, wantTimer: DefaultMaxQueueWait},
		{desc: "some spent", spent: 2 * time.Second, wantTimer: DefaultMaxQueueWait - 2*time.Second},
		{desc: "all spent", spent: DefaultMaxQueueWait},
		{desc: "more than all", spent: time.Hour},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			l, ft := newTestLimiter(t, Settings{MaxConcurrent: 1})
			release := hold(t, l, home)
			ch := make(chan result, 1)
			go func() {
				sl, err := WaitAfter(context.Background(), l, search.Partition, search.Host, false, tc.spent)
				r := result{err: err, release: func() {}}
				if sl != nil {
					r.release = func() { Return(sl) }
				}
				ch <- r
			}()
			if tc.wantTimer == 0 {
				if r := await(t, ch); !errors.Is(r.err, ErrQueueWait) {
					t.Fatalf("got %v, want %v at once", r.err, ErrQueueWait)
				}
				ft.none(t)
				wantFetch(t, l, 1, 0)
				release()
				return
			}
			tm := ft.next(t)
			if tm.d != tc.wantTimer {
				t.Fatalf("timer: got %s, want %s", tm.d, tc.wantTimer)
			}
			release()
			granted(t, ch)()
			wantFetch(t, l, 0, 0)
		})
	}
}

func TestGrantStopsTimer(t *testing.T) {
	l, ft := newTestLimiter(t, Settings{MaxConcurrent: 1})
	release := hold(t, l, home)
	ch, tm := queue(t, l, ft, search)
	release()
	got := granted(t, ch)
	if !tm.isStopped() {
		t.Fatal("timer of a granted waiter: not stopped")
	}
	tm.fire() // a late timer changes nothing
	wantFetch(t, l, 1, 0)
	got()
	wantFetch(t, l, 0, 0)
}

func TestContextEndsWhileQueued(t *testing.T) {
	l, ft := newTestLimiter(t, Settings{MaxConcurrent: 1})
	release := hold(t, l, home)
	ctx, cancel := context.WithCancel(context.Background())
	gone, tm := queueCtx(t, l, ft, ctx, search)
	next, _ := queue(t, l, ft, about)
	cancel()
	r := await(t, gone)
	if !errors.Is(r.err, ErrContextDone) || !errors.Is(r.err, context.Canceled) {
		t.Fatalf("got %v, want %v wrapping %v", r.err, ErrContextDone, context.Canceled)
	}
	if !tm.isStopped() {
		t.Fatal("timer of a waiter that left: not stopped")
	}
	wantFetch(t, l, 1, 1)
	if got := l.Usage(search).Queued; got != 0 {
		t.Fatalf("/search queued: got %d, want 0", got)
	}
	// The freed slot goes to the waiter behind the one that left.
	release()
	granted(t, next)()
	wantFetch(t, l, 0, 0)
}

func TestContextDoneBeforeQueueing(t *testing.T) {
	l, ft := newTestLimiter(t, Settings{MaxConcurrent: 1})
	hold(t, l, home)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := acquire(l, ctx, search)
	if !errors.Is(err, ErrContextDone) {
		t.Fatalf("got %v, want %v", err, ErrContextDone)
	}
	ft.none(t)
	wantFetch(t, l, 1, 0)
}

// The real timer (no AfterFunc injected): a grant ends the wait, and the bound sheds a waiter
// that is never granted.
func TestRealTimer(t *testing.T) {
	tests := []struct {
		desc    string
		release bool // the holder gives its slot back while the other request waits
		wait    time.Duration
		want    error
	}{
		{"granted", true, time.Hour, nil},
		{"wait bound", false, 20 * time.Millisecond, ErrQueueWait},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			l := mustNew(t, Settings{MaxConcurrent: 1, MaxQueueWait: tt.wait})
			release := hold(t, l, home)
			ch := make(chan result, 1)
			go func() {
				r, err := acquire(l, context.Background(), search)
				ch <- result{release: r, err: err}
			}()
			if tt.release {
				// Given back once the other request waits: its wait is an hour, so it
				// stays queued until then.
				deadline := time.Now().Add(5 * time.Second)
				for l.Stats().Fetch.Queued == 0 {
					if time.Now().After(deadline) {
						t.Fatal("hangs: the waiter never queued")
					}
					time.Sleep(time.Millisecond)
				}
				release()
			}
			r := await(t, ch)
			if !errors.Is(r.err, tt.want) {
				t.Fatalf("queued acquire: got %v, want %v", r.err, tt.want)
			}
			r.release()
			if !tt.release {
				release()
			}
			wantFetch(t, l, 0, 0)
		})
	}
}

// queuedBehindHolder is a limiter of one fetch slot, held by home, with a waiter of search's
// queued in its pool by hand, and the function that gives the held slot back.
func queuedBehindHolder(t *testing.T) (*Limiter, *pool, *slot, func()) {
	t.Helper()
	l := mustNew(t, Settings{MaxConcurrent: 1})
	releaseHolder := hold(t, l, home)
	p := l.fetch
	s := &slot{partition: search.Partition, host: search.Host, ready: make(chan struct{})}
	p.mu.Lock()
	pushLocked(p, s)
	p.mu.Unlock()
	return l, p, s, releaseHolder
}

// TestLeaveAfterGrantOrExpiry covers a context that ends just as the waiter is granted or
// shed: the waiter's goroutine may see either event first.
func TestLeaveAfterGrantOrExpiry(t *testing.T) {
	tests := []struct {
		desc string
		// settle moves the queued slot on before leave runs.
		settle func(p *pool, s *slot, releaseHolder func())
		want   error
	}{
		{
			desc:   "granted: the slot is handed back",
			settle: func(p *pool, s *slot, releaseHolder func()) { releaseHolder() },
			want:   ErrContextDone,
		},
		{
			desc:   "expired: the wait bound came first",
			settle: func(p *pool, s *slot, releaseHolder func()) { expire(p, s); releaseHolder() },
			want:   ErrQueueWait,
		},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			l, p, s, releaseHolder := queuedBehindHolder(t)
			tt.settle(p, s, releaseHolder)

			if err := leave(canceled(), p, s); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			wantFetch(t, l, 0, 0)
		})
	}
}
