package redisstore

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"reflect"
	"time"

	"github.com/gomodule/redigo/redis"
)

// keepAlive is the TCP keep-alive period of a pool's connections to the server.
const keepAlive = time.Minute

// newPool returns an empty connection pool. redis.Pool runs interpreted only with the
// vendored patch that splits its `a, b = nil, nil` assignments (patches/redigo-yaegi.patch):
// unpatched, it panics in Yaegi whenever its idle list empties.
func (s *Store) newPool() *redis.Pool {
	return &redis.Pool{
		DialContext: func(ctx context.Context) (redis.Conn, error) {
			return s.dial(ctx, false)
		},
		MaxIdle:     s.maxIdle,
		MaxActive:   s.maxActive,
		IdleTimeout: s.idleTimeout,
		Wait:        true,
	}
}

// resetPool replaces the pool p, unless it was already replaced, and closes its idle
// connections: after one connection broke, the others most likely did too (the server
// restarted or the network dropped). Connections still in use close when put back.
func (s *Store) resetPool(p *redis.Pool) {
	s.mu.Lock()
	if s.closed || s.pool.Load().(*redis.Pool) != p {
		s.mu.Unlock()
		return
	}
	s.pool.Store(s.newPool())
	s.mu.Unlock()
	p.Close()
}

// dial connects to the server, within ctx and Timeout, and authenticates and selects the
// database. A connection that listens (for tracking invalidations or a sentinel's
// announcements, near.go) is probed by the kernel every pushKeepAlive, a pool's every
// keepAlive.
//
// It dials and runs the TLS handshake itself, then wraps the connection with redis.NewConn,
// rather than leaving this to redis.DialContext: the handshake then ends with ctx (redigo's
// own runs on a goroutine bounded only by its handshake timeout), and AUTH and SELECT go
// through statusReply, without which their "OK" is an error under Yaegi.
func (s *Store) dial(ctx context.Context, listens bool) (redis.Conn, error) {
	if s.srv.sentinel {
		return s.dialPrimary(ctx, listens)
	}
	return s.dialAddr(ctx, s.srv.addr, listens)
}

// dialAddr is dial to addr, one node of a cluster or the primary the sentinels name; its
// certificate is checked for its own host unless the URL named a serverName.
func (s *Store) dialAddr(ctx context.Context, addr string, listens bool) (redis.Conn, error) {
	return s.dialAs(ctx, addr, s.srv.user, s.srv.password, s.srv.db, listens)
}

// dialAs is dialAddr authenticating as user with password (none when password is empty),
// and selecting db.
func (s *Store) dialAs(ctx context.Context, addr, user, password string, db int, listens bool) (redis.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	d := net.Dialer{KeepAlive: keepAlive}
	if listens {
		listenerProbes(&d)
	}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if s.srv.tls != nil {
		conf := s.srv.tls
		if (s.srv.cluster || s.srv.sentinel) && !s.srv.serverName {
			host, _, _ := net.SplitHostPort(addr)
			conf = conf.Clone()
			conf.ServerName = host
		}
		tc := tls.Client(nc, conf)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("tls handshake: %w", err)
		}
		nc = tc
	}
	c := redis.NewConn(nc, 0, s.timeout)
	if password != "" {
		args := []interface{}{password}
		if user != "" {
			args = []interface{}{user, password}
		}
		if err := expect(ctx, c, "OK", "AUTH", args...); err != nil {
			c.Close()
			return nil, err
		}
	}
	if db != 0 {
		if err := expect(ctx, c, "OK", "SELECT", db); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// expect sends a command within ctx and checks its status reply.
func expect(ctx context.Context, c redis.Conn, want, cmd string, args ...interface{}) error {
	timeout := time.Second
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	if timeout <= 0 {
		return fmt.Errorf("%s: %w", cmd, context.DeadlineExceeded)
	}
	reply, err := do(c, timeout, cmd, args...)
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	if reply != want {
		return fmt.Errorf("%s: reply %v, want %s", cmd, reply, want)
	}
	return nil
}

// listenerProbes has the kernel probe what d dials every pushKeepAlive, pushKeepAliveProbes
// times before it gives up. Set through reflect: net.KeepAliveConfig came with Go 1.23, after
// this module's go directive and Yaegi v0.16.1's symbols, neither of which can name it, while
// the Dialer of the Traefik running Weir has the field. (KeepAlive alone sets the idle time
// and leaves the probes 15s apart.) A Go without it leaves d as it was.
func listenerProbes(d *net.Dialer) {
	c := reflect.ValueOf(d).Elem().FieldByName("KeepAliveConfig")
	if !c.IsValid() {
		return
	}
	c.FieldByName("Enable").SetBool(true)
	c.FieldByName("Idle").SetInt(int64(pushKeepAlive))
	c.FieldByName("Interval").SetInt(int64(pushKeepAlive))
	c.FieldByName("Count").SetInt(pushKeepAliveProbes)
}
