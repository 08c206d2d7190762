package redisstore

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// TestPoolClosedUnderWaiter: a pool closed while a caller waits for a slot with a context
// that has ended answers the caller with an error, never a panic. resetPool closes a pool
// whenever one of its connections breaks, while other calls wait on it with the store's
// timeout; redigo sent the slot back on the closed channel ("send on closed channel", on the
// request's goroutine) until patches/redigo-yaegi.patch. Both cases of its select
// are ready here (a closed channel, an ended context), so each of many tries may take either.
func TestPoolClosedUnderWaiter(t *testing.T) {
	errDial := errors.New("no server in this test")
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for i := 0; i < 200; i++ {
		p := &redis.Pool{
			DialContext: func(ctx context.Context) (redis.Conn, error) { return nil, errDial },
			MaxActive:   2,
			Wait:        true,
		}
		// A first call makes the pool's slots; its dial fails, which gives the slot back.
		c := p.Get()
		c.Close()
		p.Close()
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("try %d: GetContext on a pool closed under it panicked: %v", i, r)
				}
			}()
			c, err := p.GetContext(ended)
			if err == nil {
				t.Fatalf("try %d: GetContext on a closed pool with an ended context: no error", i)
			}
			c.Close()
		}()
	}
}

// TestPoolSurplusSlotNeverBlocks: a slot given back to a pool whose slots are all free is
// dropped, and the pool goes on. Yaegi's select may take a waiter's `case <-p.ch` with
// nothing received; that connection's Close later gives back a slot that was never taken.
// redigo sent it to the full channel while holding the pool's lock, and every call of the
// pool, its Close included, waited for ever (patches/redigo-yaegi.patch). Here the surplus
// is made without the interpreter: a connection taken while the pool did not wait for
// slots (Wait false) is put back once it does.
func TestPoolSurplusSlotNeverBlocks(t *testing.T) {
	dial := func() (redis.Conn, error) {
		client, server := net.Pipe()
		server.Close()
		return redis.NewConn(client, 0, 0), nil
	}
	p := &redis.Pool{Dial: dial, MaxActive: 1, MaxIdle: 1}
	first := p.Get()
	p.Wait = true
	second := p.Get()
	done := make(chan struct{})
	go func() {
		defer close(done)
		// first gives back a slot it never took: the pool's one slot is free again.
		first.Close()
		// A second slot for the one-slot pool: the surplus.
		second.Close()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("putting connections back hangs: a surplus slot blocked the pool")
	}
	// The pool still holds one slot: a third connection is taken at once, a fourth waits
	// for it and gives up with its context.
	third, err := p.GetContext(context.Background())
	if err != nil {
		t.Fatalf("GetContext after the surplus: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if c, err := p.GetContext(ctx); err == nil {
		c.Close()
		t.Error("a second connection from a one-slot pool whose slot is taken: got one, want the context's error")
	}
	third.Close()
	if err := p.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}
