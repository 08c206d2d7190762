package flight

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/weirproxy/weir/internal/clocktest"
)

// newManualClock is a clock the test moves by hand.
func newManualClock() *clocktest.Clock {
	return clocktest.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
}

// waitDone fails the test when c does not finish in time.
func waitDone(t *testing.T, c *Call) {
	t.Helper()
	select {
	case <-Done(c):
	case <-time.After(5 * time.Second):
		t.Fatal("flight hangs")
	}
}

// wantReleased checks that no flight is left after what, and that the next Join of key
// leads a new one.
func wantReleased(t *testing.T, g *Group, key, what string) {
	t.Helper()
	if got := g.InFlight(); got != 0 {
		t.Errorf("InFlight after %s = %d, want 0", what, got)
	}
	if _, leader := Join(g, key); !leader {
		t.Errorf("Join after %s: leader = false, want a new flight", what)
	}
}

func TestJoinLeaderThenFollowers(t *testing.T) {
	g := New(Settings{Now: newManualClock().Now})
	c, leader := Join(g, "k")
	if !leader {
		t.Fatal("first Join: leader = false, want true")
	}
	for i := 1; i <= 3; i++ {
		f, leader := Join(g, "k")
		if leader {
			t.Fatalf("Join %d: leader = true, want false", i)
		}
		if f != c {
			t.Fatalf("Join %d: got another call than the leader's", i)
		}
		if got := g.Followers(c); got != i {
			t.Errorf("Followers after %d joins = %d, want %d", i, got, i)
		}
	}
	if _, leader := Join(g, "other"); !leader {
		t.Error("Join of another key: leader = false, want true")
	}
	if got, want := g.InFlight(), 2; got != want {
		t.Errorf("InFlight = %d, want %d", got, want)
	}
}

func TestRunDeliversToEveryWaiter(t *testing.T) {
	g := New(Settings{})
	c, _ := Join(g, "k")
	f, _ := Join(g, "k")
	release := make(chan struct{})
	Run(g, "k", c, func() (interface{}, error) {
		<-release
		return "answer", nil
	})
	select {
	case <-Done(c):
		t.Fatal("Done closed before the fetch ended")
	default:
	}
	close(release)
	waitDone(t, f)
	for _, call := range []*Call{c, f} {
		v, err := Result(call)
		if err != nil || v != "answer" {
			t.Errorf("Result() = %v, %v; want answer, nil", v, err)
		}
	}
	wantReleased(t, g, "k", "the fetch")
}

func TestRunDeliversError(t *testing.T) {
	g := New(Settings{})
	c, _ := Join(g, "k")
	want := errors.New("origin down")
	RunHere(g, "k", c, func() (interface{}, error) { return nil, want })
	waitDone(t, c)
	if _, err := Result(c); err != want {
		t.Errorf("Result() error = %v, want %v", err, want)
	}
}

// FR-COA-6: a panic becomes an error for every waiter, OnPanic hears of it, and the flight is
// released so the next caller leads a new one.
func TestRunRecoversPanic(t *testing.T) {
	var mu sync.Mutex
	var gotKey string
	var gotValue interface{}
	g := New(Settings{OnPanic: func(key string, r interface{}) {
		// Two assignments: Yaegi v0.16.1 panics on a parallel assignment of an interface{}
		// argument to a captured interface{} variable.
		mu.Lock()
		gotKey = key
		gotValue = r
		mu.Unlock()
	}})
	c, _ := Join(g, "k")
	f, _ := Join(g, "k")
	Run(g, "k", c, func() (interface{}, error) { panic("boom") })
	waitDone(t, c)
	waitDone(t, f)
	for _, call := range []*Call{c, f} {
		v, err := Result(call)
		if v != nil || !errors.Is(err, ErrPanic) {
			t.Errorf("Result() = %v, %v; want nil and an error wrapping ErrPanic", v, err)
		}
	}
	mu.Lock()
	// fmt.Sprint: under Yaegi v0.16.1 the recovered value does not compare equal to "boom".
	if gotKey != "k" || fmt.Sprint(gotValue) != "boom" {
		t.Errorf("OnPanic got (%q, %v), want (k, boom)", gotKey, gotValue)
	}
	mu.Unlock()
	wantReleased(t, g, "k", "a panic")
}

func TestPanicWithoutOnPanic(t *testing.T) {
	g := New(Settings{})
	c, _ := Join(g, "k")
	RunHere(g, "k", c, func() (interface{}, error) { panic(errors.New("boom")) })
	if _, err := Result(c); !errors.Is(err, ErrPanic) {
		t.Errorf("Result() error = %v, want ErrPanic", err)
	}
}

// FR-COA-3: a flight older than LeaderMaxAge takes no new followers; the old one still
// finishes for its own waiters and does not release the newer flight.
func TestLeaderMaxAge(t *testing.T) {
	clock := newManualClock()
	g := New(Settings{LeaderMaxAge: 10 * time.Second, Now: clock.Now})
	old, _ := Join(g, "k")

	tests := []struct {
		desc       string
		advance    time.Duration
		wantLeader bool
	}{
		{desc: "young flight takes followers", advance: 9 * time.Second, wantLeader: false},
		{desc: "flight at LeaderMaxAge takes none", advance: time.Second, wantLeader: true},
	}
	var fresh *Call
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			clock.Add(tc.advance)
			c, leader := Join(g, "k")
			if leader != tc.wantLeader {
				t.Fatalf("leader = %v, want %v", leader, tc.wantLeader)
			}
			if leader {
				fresh = c
			}
		})
	}
	if fresh == nil || fresh == old {
		t.Fatal("no new flight after LeaderMaxAge")
	}
	RunHere(g, "k", old, func() (interface{}, error) { return "old", nil })
	if v, _ := Result(old); v != "old" {
		t.Errorf("old flight result = %v, want old", v)
	}
	if c, leader := Join(g, "k"); leader || c != fresh {
		t.Error("the old flight's end released the new flight")
	}
	RunHere(g, "k", fresh, func() (interface{}, error) { return "new", nil })
	if got := g.InFlight(); got != 0 {
		t.Errorf("InFlight = %d, want 0", got)
	}
}

func TestDefaultLeaderMaxAge(t *testing.T) {
	clock := newManualClock()
	g := New(Settings{Now: clock.Now})
	Join(g, "k")
	clock.Add(DefaultLeaderMaxAge - time.Nanosecond)
	if _, leader := Join(g, "k"); leader {
		t.Error("Join just before DefaultLeaderMaxAge: leader = true, want false")
	}
	clock.Add(time.Nanosecond)
	if _, leader := Join(g, "k"); !leader {
		t.Error("Join at DefaultLeaderMaxAge: leader = false, want true")
	}
}

func TestTryLead(t *testing.T) {
	clock := newManualClock()
	g := New(Settings{LeaderMaxAge: time.Second, Now: clock.Now})
	c, ok := TryLead(g, "k")
	if !ok || c == nil {
		t.Fatal("TryLead on an empty key: ok = false, want true")
	}
	if _, ok := TryLead(g, "k"); ok {
		t.Error("TryLead beside a running flight: ok = true, want false")
	}
	// Even an old flight blocks background work: only one fetch for a refresh at a time.
	clock.Add(time.Hour)
	if _, ok := TryLead(g, "k"); ok {
		t.Error("TryLead beside an old running flight: ok = true, want false")
	}
	// Callers that wait still join a flight a refresh started, while it is young.
	clock = newManualClock()
	g = New(Settings{LeaderMaxAge: time.Second, Now: clock.Now})
	c, _ = TryLead(g, "k")
	if f, leader := Join(g, "k"); leader || f != c {
		t.Error("Join did not follow the flight TryLead started")
	}
	RunHere(g, "k", c, func() (interface{}, error) { return 1, nil })
	if _, ok := TryLead(g, "k"); !ok {
		t.Error("TryLead after the flight ended: ok = false, want true")
	}
}

func TestRunIsDetached(t *testing.T) {
	g := New(Settings{})
	c, _ := Join(g, "k")
	started := make(chan struct{})
	release := make(chan struct{})
	Run(g, "k", c, func() (interface{}, error) {
		close(started)
		<-release
		return 42, nil
	})
	// Run returned while the fetch is still blocked: it runs on its own goroutine.
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("fetch never started: hangs")
	}
	if got := g.InFlight(); got != 1 {
		t.Errorf("InFlight while running = %d, want 1", got)
	}
	close(release)
	waitDone(t, c)
	if v, err := Result(c); v != 42 || err != nil {
		t.Errorf("Result() = %v, %v; want 42, nil", v, err)
	}
}

func TestConcurrentJoinOneLeader(t *testing.T) {
	g := New(Settings{})
	const n = 20
	var wg sync.WaitGroup
	leaders := make(chan *Call, n)
	calls := make(chan *Call, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, leader := Join(g, "k")
			if leader {
				leaders <- c
			}
			calls <- c
		}()
	}
	wg.Wait()
	close(leaders)
	close(calls)
	var lead *Call
	count := 0
	for c := range leaders {
		lead = c
		count++
	}
	if count != 1 {
		t.Fatalf("leaders = %d, want 1", count)
	}
	for c := range calls {
		if c != lead {
			t.Fatal("a caller joined another flight")
		}
	}
	if got := g.Followers(lead); got != n-1 {
		t.Errorf("Followers = %d, want %d", got, n-1)
	}
	RunHere(g, "k", lead, func() (interface{}, error) { return nil, nil })
}
