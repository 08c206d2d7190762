package limit

import (
	"context"
	"testing"
)

// Take grants only what Acquire would grant at once, and refuses (nil) whatever would queue.
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
	ft := newFakeTimers()
	l := mustNew(t, ft.settings(Settings{MaxConcurrent: 1}))
	s := Take(l, search.Partition, search.Host, false)
	if s == nil {
		t.Fatal("Take on an empty pool: got nil, want a slot")
	}
	waiter, _ := queue(t, l, ft, context.Background(), home)
	if again := Take(l, about.Partition, about.Host, false); again != nil {
		t.Fatal("Take with a waiter queued and the pool full: got a slot, want nil")
	}
	Return(s)
	granted(t, waiter)()
	wantFetch(t, l, 0, 0)
}
