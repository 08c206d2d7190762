package limit

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"
)

// A fast slot (Take's, below every cap) counts in the pool's figures, and given back while a
// waiter is queued it grants the waiter.
func TestTakeFastReturnGrantsWaiter(t *testing.T) {
	// The pool's size is the smallest cap: fast slots up to 1 of 2.
	l, ft := newTestLimiter(t, Settings{MaxConcurrent: 2})
	fast := Take(l, search.Partition, search.Host, false)
	if fast == nil || !fast.fast {
		t.Fatalf("Take on an empty pool: got %+v, want a fast slot", fast)
	}
	locked := Take(l, home.Partition, home.Host, false)
	if locked == nil || locked.fast {
		t.Fatalf("Take at the fast path's bound: got %+v, want a slot taken under the lock", locked)
	}
	wantFetch(t, l, 2, 0)
	if got := l.Stats().Fetch.HighWater; got != 2 {
		t.Errorf("high water: got %d, want 2", got)
	}
	waiter, _ := queue(t, l, ft, about)
	if again := Take(l, blog.Partition, blog.Host, false); again != nil {
		t.Fatal("Take with a waiter queued: got a slot, want nil")
	}
	Return(fast)
	release := granted(t, waiter)
	Return(fast) // a second Return does nothing
	wantFetch(t, l, 2, 0)
	release()
	Return(locked)
	wantFetch(t, l, 0, 0)
}

// Fast slots count against every partition's and host's cap under the lock, so that no cap
// is ever exceeded however they are spread.
func TestTakeFastCountsAgainstCaps(t *testing.T) {
	tests := []struct {
		desc     string
		settings Settings
		takes    []Request
		want     []bool
	}{
		// fastCap 2: two fast slots, then the partition's own count plus 2 against 3.
		{"partition cap", Settings{MaxPerPartition: 3}, []Request{search, search, search, search}, []bool{true, true, true, false}},
		// Home may hold the two fast slots: one of its own at most.
		{"another partition", Settings{MaxPerPartition: 3}, []Request{search, search, home, home}, []bool{true, true, true, false}},
		// fastCap 2: the host's own count plus 2 against 3.
		{"host cap", Settings{MaxPerHost: 3}, []Request{search, home, about, search, blog, blog}, []bool{true, true, true, false, true, false}},
		{"pool size", Settings{MaxConcurrent: 3}, []Request{search, home, about, blog}, []bool{true, true, true, false}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			l := mustNew(t, newFakeTimers().settings(tc.settings))
			var held []*Slot
			for i, r := range tc.takes {
				s := Take(l, r.Partition, r.Host, false)
				if got := s != nil; got != tc.want[i] {
					t.Fatalf("Take #%d (%s): granted = %v, want %v", i, r.Partition, got, tc.want[i])
				}
				if s != nil {
					held = append(held, s)
				}
			}
			for _, s := range held {
				Return(s)
			}
			wantFetch(t, l, 0, 0)
		})
	}
}

// A Wait counts the fast slots as its partition's, and queues once they and its own reach
// the partition's cap; a fast slot given back grants it.
func TestWaitCountsFastSlots(t *testing.T) {
	l, ft := newTestLimiter(t, Settings{MaxPerPartition: 3})
	a := Take(l, search.Partition, search.Host, false)
	b := Take(l, search.Partition, search.Host, false)
	third := hold(t, l, search)
	waiter, _ := queue(t, l, ft, search)
	Return(a)
	fourth := granted(t, waiter)
	wantFetch(t, l, 3, 0)
	Return(b)
	third()
	fourth()
	wantFetch(t, l, 0, 0)
}

// An Update that lowers the caps below the fast slots held grants nothing more until they
// are back under them, and closes the fast path until the caps are back.
func TestTakeFastUpdate(t *testing.T) {
	l := mustNew(t, Settings{})
	var held []*Slot
	for i := 0; i < 4; i++ {
		held = append(held, Take(l, search.Partition, search.Host, false))
	}
	if got := l.Stats().Fetch.HighWater; got != 4 {
		t.Errorf("high water of fast slots: got %d, want 4", got)
	}
	if err := l.Update(Settings{MaxConcurrent: 2}); err != nil {
		t.Fatal(err)
	}
	if s := Take(l, home.Partition, home.Host, false); s != nil {
		t.Fatal("Take over the new pool size: got a slot, want nil")
	}
	for _, s := range held[:3] {
		Return(s)
	}
	s := Take(l, home.Partition, home.Host, false)
	if s == nil {
		t.Fatal("Take under the new pool size: got nil, want a slot")
	}
	Return(s)
	Return(held[3])
	wantFetch(t, l, 0, 0)
	if err := l.Update(Settings{}); err != nil {
		t.Fatal(err)
	}
	if s := Take(l, home.Partition, home.Host, false); s == nil || !s.fast {
		t.Fatalf("Take once the caps are back: got %+v, want a fast slot", s)
	} else {
		Return(s)
	}
	wantFetch(t, l, 0, 0)
}

// Many requests taking, queueing for and giving back slots at once: no partition, host or
// pool ever holds more than its cap, and every waiter is granted (a lost grant would leave
// one queued until its hour-long bound). Run with -race.
func TestTakeFastConcurrent(t *testing.T) {
	s := Settings{MaxConcurrent: 6, MaxPerPartition: 4, MaxPerHost: 5, MaxQueueWait: time.Hour}
	l := mustNew(t, s)
	reqs := []Request{search, home, about, blog}
	var mu sync.Mutex
	total := 0
	byPartition := map[string]int{}
	byHost := map[string]int{}
	var failures []string
	count := func(r Request, d int) {
		mu.Lock()
		total += d
		byPartition[r.Partition] += d
		byHost[r.Host] += d
		if total > s.MaxConcurrent || byPartition[r.Partition] > s.MaxPerPartition || byHost[r.Host] > s.MaxPerHost {
			failures = append(failures, r.Partition)
		}
		mu.Unlock()
	}
	const workers, rounds = 8, 200
	done := make(chan error, workers)
	for w := 0; w < workers; w++ {
		go func(w int) {
			for i := 0; i < rounds; i++ {
				r := reqs[(w+i)%len(reqs)]
				sl := Take(l, r.Partition, r.Host, false)
				if sl == nil {
					var err error
					sl, err = Wait(context.Background(), l, r.Partition, r.Host, false)
					if err != nil {
						done <- err
						return
					}
				}
				count(r, 1)
				runtime.Gosched()
				count(r, -1)
				Return(sl)
			}
			done <- nil
		}(w)
	}
	for w := 0; w < workers; w++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Wait: %v", err)
			}
		case <-time.After(time.Minute):
			t.Fatal("hangs: a waiter was never granted")
		}
	}
	if len(failures) > 0 {
		t.Fatalf("caps exceeded %d times (first by %s)", len(failures), failures[0])
	}
	wantFetch(t, l, 0, 0)
	if got := l.Stats().Fetch.HighWater; got > s.MaxConcurrent {
		t.Errorf("high water: got %d, want at most %d", got, s.MaxConcurrent)
	}
}
