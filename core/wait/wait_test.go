package wait_test

import (
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/wait"
)

func TestAnyAndEitherValue(t *testing.T) {
	closed := make(chan struct{})
	close(closed)
	var nilChan chan int
	tests := []struct {
		desc string
		wait func() int
		want int
	}{
		{desc: "Any: the only ready channel", wait: func() int { return wait.Any(make(chan int), nil, closed) }, want: 2},
		{desc: "Any: a nil channel is never ready", wait: func() int { return wait.Any(nilChan, closed, nil) }, want: 1},
		{desc: "Either: a timer", wait: func() int {
			timer := time.NewTimer(time.Millisecond)
			defer timer.Stop()
			return wait.Either(make(chan struct{}), timer.C)
		}, want: 1},
		{desc: "Either: a closed channel", wait: func() int { return wait.Either(closed, nil) }, want: 0},
	}
	for _, tc := range tests {
		if got := tc.wait(); got != tc.want {
			t.Errorf("%s: index %d, want %d", tc.desc, got, tc.want)
		}
	}

	ready := make(chan int, 1)
	ready <- 7
	if i, v := wait.EitherValue(nilChan, ready); i != 1 || v.Int() != 7 {
		t.Errorf("EitherValue: index %d, value %v; want 1, 7", i, v)
	}
	if i, v := wait.EitherValue(closed, nil); i != 0 || !reflect.DeepEqual(v.Interface(), struct{}{}) {
		t.Errorf("EitherValue on a closed channel: index %d, value %v; want 0, the zero value", i, v)
	}
}

func TestReadyAndPoke(t *testing.T) {
	wake := make(chan struct{}, 1)
	if wait.Ready(wake) {
		t.Fatal("Ready on an empty channel: true, want false")
	}
	if !wait.Poke(wake) {
		t.Fatal("Poke on an empty buffered channel: false, want true")
	}
	if wait.Poke(wake) {
		t.Error("Poke on a full channel: true, want false")
	}
	if !wait.Ready(wake) {
		t.Error("Ready after a Poke: false, want true")
	}
	if wait.Ready(wake) {
		t.Error("Ready once the poke was received: true, want false")
	}
	close(wake)
	if !wait.Ready(wake) {
		t.Error("Ready on a closed channel: false, want true")
	}
	var nilChan chan struct{}
	if wait.Ready(nilChan) || wait.Ready(nil) || wait.Poke(nilChan) || wait.Poke(nil) {
		t.Error("Ready or Poke on a nil channel: true, want false")
	}
}

// TestWaitsShareNothing runs many waits of the same call at once, each on channels of its
// own: every wait receives its own value. Yaegi v0.16.1's select statement, its cases shared
// by every goroutine running it, gave some waits another's value and left others waiting
// (docs/yaegi.md): with a select in place of EitherValue this test fails under yaegi test.
func TestWaitsShareNothing(t *testing.T) {
	const waiters, rounds = 32, 1000
	var mu sync.Mutex
	var wrong int
	var wg sync.WaitGroup
	for w := 0; w < waiters; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			mine := make(chan int)
			go func() {
				for k := 0; k < rounds; k++ {
					mine <- w
				}
			}()
			for k := 0; k < rounds; k++ {
				i, v := wait.EitherValue(mine, time.After(5*time.Second))
				if i != 0 || int(v.Int()) != w {
					mu.Lock()
					wrong++
					mu.Unlock()
				}
			}
		}(w)
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	if wait.Either(done, time.After(60*time.Second)) != 0 {
		t.Fatal("waits on their own channels: hangs after 60s")
	}
	if wrong != 0 {
		t.Errorf("%d of %d waits received another's value or none, want 0", wrong, waiters*rounds)
	}
}
