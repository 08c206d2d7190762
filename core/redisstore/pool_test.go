package redisstore

import (
	"context"
	"errors"
	"testing"

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
