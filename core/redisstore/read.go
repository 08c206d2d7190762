package redisstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/gomodule/redigo/redis"
)

// readBytes returns the bytes stored under k (the prefixed key), nil when there are none,
// reading for at most timeout or the store's own (Settings.Timeout), the smaller, and within
// ctx.
//
// A hit read from the server is what a lookup missing the near cache costs Traefik, all of
// it interpreted, so on a single server it takes the shortest way there is through redigo
// (redis.DoBulk, patches/redigo-yaegi.patch): an idle connection taken without waiting, the
// GET written out in RESP, one deadline, the bulk string read as one slice. When DoBulk
// declines (no idle connection free at once, a connection past its idle time) or a
// connection broke, the GET goes through the pool as every other command does (do), which
// waits, dials, and sends once more on a new connection; so does every GET of a cluster.
func readBytes(s *Store, ctx context.Context, k string, timeout time.Duration) ([]byte, error) {
	if s.cluster != nil || ctx.Err() != nil {
		return readSlow(s, ctx, k, timeout)
	}
	if timeout > s.timeout {
		timeout = s.timeout
	}
	now := time.Now()
	deadline := now.Add(timeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		if !dl.After(now) {
			return readSlow(s, ctx, k, timeout)
		}
		deadline = dl
	}
	p := s.pool.Load().(*redis.Pool)
	b, state, err := redis.DoBulk(p, "*2\r\n$3\r\nGET\r\n$"+strconv.Itoa(len(k))+"\r\n"+k+"\r\n", now, deadline)
	switch state {
	case redis.BulkDone:
		if err != nil {
			return nil, fmt.Errorf("redis get: %w", err)
		}
		return b, nil
	case redis.BulkBroken:
		// As doOnce: the other idle connections most likely broke too, and a command that
		// ran out of time has no time left to repeat.
		s.resetPool(p)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, fmt.Errorf("redis get: %w", err)
		}
	}
	return readSlow(s, ctx, k, timeout)
}

// readSlow is readBytes through the pool (do), under a context with the timeout when it is
// shorter than the store's own, which bounds every call.
func readSlow(s *Store, ctx context.Context, k string, timeout time.Duration) ([]byte, error) {
	if timeout < s.timeout {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		ctx = cctx
	}
	reply, err := s.do(ctx, "GET", k)
	if err != nil {
		return nil, fmt.Errorf("redis get: %w", err)
	}
	if reply == nil {
		return nil, nil
	}
	b, ok := reply.([]byte)
	if !ok {
		return nil, fmt.Errorf("redis get: unexpected reply %T", reply)
	}
	return b, nil
}
