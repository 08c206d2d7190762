package redisstore

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/store"
	"github.com/weirproxy/weir/internal/redistest"
)

// TestBook: requests booked by two stores sharing a server add up per key on the server's
// clock; each key expires once its bookings have passed; through a Guard, a server gone
// fails the call rather than blocking it.
func TestBook(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	a := newStore(t, Settings{URL: "redis://" + srv.Addr, KeyPrefix: "book:"})
	b := store.NewGuard(newStore(t, Settings{URL: "redis://" + srv.Addr, KeyPrefix: "book:"}), store.GuardSettings{Timeout: callWait})
	ctx := context.Background()
	ahead, err := a.Book(ctx, []string{"k1", "k2"}, []int64{3, 1}, time.Second)
	if err != nil {
		t.Fatalf("Book: %v", err)
	}
	if len(ahead) != 2 || ahead[0] < 2900*time.Millisecond || ahead[0] > 3*time.Second || ahead[1] > time.Second || ahead[1] < 900*time.Millisecond {
		t.Fatalf("Book = %v, want about [3s 1s]", ahead)
	}
	ahead, err = b.Book(ctx, []string{"k1"}, []int64{2}, time.Second)
	if err != nil {
		t.Fatalf("Book through a guard: %v", err)
	}
	if ahead[0] < 4900*time.Millisecond || ahead[0] > 5*time.Second {
		t.Fatalf("second instance's Book = %v, want about 5s: both instances' requests", ahead)
	}
	ttl, ok := srv.MustDo("PTTL", "book:k1").(int64)
	if !ok || ttl < 5000 || ttl > 6000 {
		t.Errorf("PTTL of k1 = %v, want about 6000 (its bookings and a second)", ttl)
	}
	if ahead, err := a.Book(ctx, nil, nil, time.Second); err != nil || ahead != nil {
		t.Errorf("Book of nothing = %v, %v; want nothing", ahead, err)
	}
	srv.Stop()
	if _, err := b.Book(ctx, []string{"k1"}, []int64{1}, time.Second); err == nil {
		t.Error("Book with the server gone: no error")
	}
	var mem store.Store = store.NewMemory(store.MemorySettings{})
	g := store.NewGuard(mem, store.GuardSettings{Timeout: callWait})
	if _, err := g.Book(ctx, []string{"k"}, []int64{1}, time.Second); !errors.Is(err, store.ErrBookUnsupported) {
		t.Errorf("Book through a guard of the memory store: %v, want ErrBookUnsupported", err)
	}
}

// TestBookHorizonInScript: the horizon bookScript believes is bookHorizon.
func TestBookHorizonInScript(t *testing.T) {
	if us := strconv.FormatInt(bookHorizon.Microseconds(), 10); !strings.Contains(bookScript.src, "<= "+us+" ") {
		t.Errorf("bookScript does not hold bookHorizon, %s µs", us)
	}
}
