package limit

import (
	"context"
	"errors"
	"testing"
)

var (
	search = Request{Partition: "https://shop.example/search", Host: "shop.example"}
	home   = Request{Partition: "https://shop.example/", Host: "shop.example"}
	about  = Request{Partition: "https://shop.example/about", Host: "shop.example"}
	blog   = Request{Partition: "https://blog.example/", Host: "blog.example"}
	upload = Request{Partition: "https://shop.example/upload", Host: "shop.example", Upload: true}
)

func TestWaitFreeSlot(t *testing.T) {
	l, ft := newTestLimiter(t, Settings{})
	release := hold(t, l, search)
	ft.none(t)
	wantFetch(t, l, 1, 0)
	if got := l.Usage(search).InFlight; got != 1 {
		t.Fatalf("partition in flight: got %d, want 1", got)
	}
	release()
	wantFetch(t, l, 0, 0)
	if got := l.Stats().Fetch.Partitions; got != 0 {
		t.Fatalf("partitions after release: got %d, want 0", got)
	}
}

func TestBackgroundReserve(t *testing.T) {
	tests := []struct {
		desc string
		size int
		want int // background slots available in an idle pool
	}{
		{desc: "default pool keeps 16 of 64", size: 0, want: 48},
		{desc: "8 slots keep 2", size: 8, want: 6},
		{desc: "4 slots keep 1", size: 4, want: 3},
		{desc: "2 slots keep 1", size: 2, want: 1},
		{desc: "a single slot is never background's", size: 1, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			l, ft := newTestLimiter(t, Settings{MaxConcurrent: tt.size, MaxPerPartition: 64})
			for i := 0; i < tt.want; i++ {
				if _, err := tryAcquire(l, search); err != nil {
					t.Fatalf("background slot %d: got %v, want a slot", i+1, err)
				}
			}
			if _, err := tryAcquire(l, search); !errors.Is(err, ErrNoBackgroundSlot) {
				t.Fatalf("background slot %d: got %v, want %v", tt.want+1, err, ErrNoBackgroundSlot)
			}
			// Background work never queues, and the reserve stays for the foreground.
			ft.none(t)
			size := l.Stats().Fetch.Size
			for i := tt.want; i < size; i++ {
				hold(t, l, home)
			}
			wantFetch(t, l, size, 0)
		})
	}
}

func TestBackgroundRespectsPartitionCap(t *testing.T) {
	l := mustNew(t, Settings{MaxPerPartition: 1})
	hold(t, l, search)
	if _, err := tryAcquire(l, search); !errors.Is(err, ErrNoBackgroundSlot) {
		t.Fatalf("/search at its cap: got %v, want %v", err, ErrNoBackgroundSlot)
	}
	release, err := tryAcquire(l, about)
	if err != nil {
		t.Fatalf("/about: got %v, want a slot", err)
	}
	release()
}

func TestUploadPoolIsSeparate(t *testing.T) {
	l, ft := newTestLimiter(t, Settings{MaxConcurrent: 2, MaxUpload: 2})
	releaseUpload := hold(t, l, upload)
	hold(t, l, upload)
	third, _ := queue(t, l, ft, upload)
	// Slow uploads exhaust their own pool and nothing else (FR-LIM-7).
	hold(t, l, search)
	hold(t, l, home)
	st := l.Stats()
	if st.Upload.InFlight != 2 || st.Upload.Queued != 1 || st.Fetch.InFlight != 2 || st.Fetch.Queued != 0 {
		t.Fatalf("got upload %+v fetch %+v; want uploads 2 in flight 1 queued, fetches 2 in flight", st.Upload, st.Fetch)
	}
	releaseUpload()
	granted(t, third)
}

func TestReleaseIsIdempotent(t *testing.T) {
	l, ft := newTestLimiter(t, Settings{MaxConcurrent: 1})
	release := hold(t, l, home)
	second, _ := queue(t, l, ft, search)
	third, _ := queue(t, l, ft, about)
	release()
	release()
	releaseSecond := granted(t, second)
	waiting(t, "third", third)
	wantFetch(t, l, 1, 1)
	releaseSecond()
	granted(t, third)()
	releaseSecond()
	wantFetch(t, l, 0, 0)
}

func TestReleaseOnPanicPath(t *testing.T) {
	l := mustNew(t, Settings{MaxConcurrent: 1})
	fetch := func(panics bool) (recovered interface{}) {
		release, err := acquire(l, context.Background(), search)
		if err != nil {
			t.Fatalf("acquire: %v", err)
		}
		defer func() {
			recovered = recover()
			release() // the recover path; a no-op if the normal path released
		}()
		if panics {
			panic("origin handler panicked")
		}
		release()
		return nil
	}
	if got := fetch(true); got == nil {
		t.Fatal("panic: not seen by the recover path")
	}
	wantFetch(t, l, 0, 0)
	if got := fetch(false); got != nil {
		t.Fatalf("normal path: recovered %v", got)
	}
	wantFetch(t, l, 0, 0)
	hold(t, l, search)
}

func TestUpdate(t *testing.T) {
	l, ft := newTestLimiter(t, Settings{MaxConcurrent: 1})
	releaseHome := hold(t, l, home)
	second, _ := queue(t, l, ft, search)
	third, _ := queue(t, l, ft, about)

	if err := l.Update(ft.settings(Settings{MaxConcurrent: 3})); err != nil {
		t.Fatalf("Update: %v", err)
	}
	releaseSecond := granted(t, second)
	releaseThird := granted(t, third)
	wantFetch(t, l, 3, 0)

	// Shrinking keeps the slots held and grants no more until under the new size.
	if err := l.Update(ft.settings(Settings{MaxConcurrent: 1})); err != nil {
		t.Fatalf("Update: %v", err)
	}
	fourth, _ := queue(t, l, ft, blog)
	releaseHome()
	releaseSecond()
	waiting(t, "fourth", fourth)
	releaseThird()
	granted(t, fourth)()

	if err := l.Update(Settings{MaxConcurrent: -1}); err == nil {
		t.Fatal("Update with maxConcurrent -1: got no error")
	}
	if got := l.Stats().Fetch.Size; got != 1 {
		t.Fatalf("size after a rejected Update: got %d, want 1", got)
	}
}

func TestHostCapTurnedOnByUpdate(t *testing.T) {
	l := mustNew(t, Settings{})
	uncounted := hold(t, l, home)
	if err := l.Update(Settings{MaxPerHost: 1}); err != nil {
		t.Fatalf("Update: %v", err)
	}
	counted := hold(t, l, search)
	uncounted()
	counted()
	if got := l.Usage(home).HostInFlight; got != 0 {
		t.Fatalf("host in flight: got %d, want 0", got)
	}
	hold(t, l, about)
}

func TestStats(t *testing.T) {
	l, ft := newTestLimiter(t, Settings{MaxConcurrent: 3, MaxPerPartition: 2})
	a := hold(t, l, search)
	b := hold(t, l, search)
	c := hold(t, l, home)
	queue(t, l, ft, about)
	a()
	b()
	c()
	st := l.Stats().Fetch
	want := PoolStats{Size: 3, InFlight: 1, Queued: 0, HighWater: 3, Partitions: 1}
	if st != want {
		t.Fatalf("got %+v, want %+v", st, want)
	}
}

func TestDetail(t *testing.T) {
	tests := []struct {
		desc string
		err  error
		want string
	}{
		{desc: "queue full", err: ErrQueueFull, want: "queue-full"},
		{desc: "partition share", err: ErrPartitionQueueFull, want: "partition-queue-full"},
		{desc: "wait", err: ErrQueueWait, want: "queue-wait"},
		{desc: "context", err: contextDone(canceled()), want: "client-gone"},
		{desc: "background", err: ErrNoBackgroundSlot, want: "background-busy"},
		{desc: "other", err: errors.New("boom"), want: ""},
		{desc: "nil", err: nil, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			if got := Detail(tt.err); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
