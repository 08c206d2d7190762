package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/weirproxy/weir/core/wait"
)

// Redis Sentinel (redis-sentinel://sentinel1:26379,sentinel2:26379/mymaster).
//
// The sentinels monitor a primary and its replicas under a name, and promote a replica when
// the primary fails. The store asks them where the primary is (SENTINEL
// get-master-addr-by-name, each sentinel in turn until one answers) and connects its pool to
// that address. It follows a failover three ways, whichever comes first:
//   - the sentinels announce it: a goroutine per Store (watchSentinels) stays subscribed to a
//     sentinel's +switch-master channel, and moves the store as soon as the message comes;
//   - a connection to the primary breaks, a dial fails or a write is refused with READONLY
//     (the primary was demoted to a replica): the sentinels are asked again, on a goroutine
//     of its own, at most every resolveEvery (followSoon);
//   - the watcher, each time it subscribes again, asks where the primary is.
//
// Moving (follow) replaces the pool with a new one dialling the new primary and closes the
// old one, whose connections in use close when put back: only the calls in flight at the
// switch see its errors. It also breaks the near cache's tracking connection, so the near
// cache is emptied and tracking starts again on the new primary at once (the tracking
// goroutine is woken through moved).

const (
	// switchChannel is where sentinels announce that a master moved: "<name> <old ip> <old
	// port> <new ip> <new port>".
	switchChannel = "+switch-master"
	// resolveEvery spaces the askings of the sentinels that failures trigger.
	resolveEvery = 500 * time.Millisecond
)

var (
	errUnknownMaster = errors.New("master unknown to the sentinel")
	errPrimaryMoved  = errors.New("primary moved")
)

// Primary returns the address of the primary the store sends its commands to: the URL's
// host, or with Redis Sentinel the one the sentinels named last (empty before they were
// first asked).
func (s *Store) Primary() string {
	if !s.srv.sentinel {
		return s.srv.addr
	}
	s.mu.Lock()
	addr := s.primary
	s.mu.Unlock()
	return addr
}

// dialPrimary is dial with Redis Sentinel: to the primary known, or, before any is, to the
// one the sentinels name.
func (s *Store) dialPrimary(ctx context.Context, listens bool) (redis.Conn, error) {
	addr := s.Primary()
	if addr == "" {
		found, err := s.resolve(ctx)
		if err != nil {
			return nil, err
		}
		s.follow(found)
		addr = found
	}
	return s.dialAddr(ctx, addr, listens)
}

// resolve asks the sentinels, each in turn until one answers, where the primary is.
func (s *Store) resolve(ctx context.Context) (string, error) {
	var failures []string
	for _, addr := range s.srv.nodes {
		primary, err := s.askSentinel(ctx, addr)
		if err == nil {
			return primary, nil
		}
		failures = append(failures, fmt.Sprintf("%s: %v", addr, err))
		if ctx.Err() != nil {
			break
		}
	}
	return "", fmt.Errorf("sentinels: %s", strings.Join(failures, "; "))
}

// resolveTimeout bounds a resolve off the request path: Timeout for each sentinel, so that
// one that does not answer leaves the others their time.
func (s *Store) resolveTimeout() time.Duration {
	return time.Duration(len(s.srv.nodes)) * s.timeout
}

// askSentinel asks the sentinel at addr where the primary is.
func (s *Store) askSentinel(ctx context.Context, addr string) (string, error) {
	c, err := s.dialSentinel(ctx, addr, false)
	if err != nil {
		return "", err
	}
	defer c.Close()
	reply, err := do(c, s.timeout, "SENTINEL", "get-master-addr-by-name", s.srv.master)
	if err != nil {
		return "", fmt.Errorf("get-master-addr-by-name: %w", err)
	}
	parts, ok := reply.([]interface{})
	if !ok || len(parts) != 2 {
		if reply == nil {
			return "", fmt.Errorf("%w: %q", errUnknownMaster, s.srv.master)
		}
		return "", fmt.Errorf("get-master-addr-by-name: %w %v", errReply, reply)
	}
	host, ok := parts[0].([]byte)
	port, ok2 := parts[1].([]byte)
	if !ok || !ok2 {
		return "", fmt.Errorf("get-master-addr-by-name: %w %v", errReply, reply)
	}
	return net.JoinHostPort(string(host), string(port)), nil
}

// dialSentinel connects to the sentinel at addr, authenticated as the URL's options say.
func (s *Store) dialSentinel(ctx context.Context, addr string, listens bool) (redis.Conn, error) {
	return s.dialAs(ctx, addr, s.srv.sentinelUser, s.srv.sentinelPassword, 0, listens)
}

// follow makes addr the primary. Moving from another one replaces the pool (the old one's
// idle connections closed, those in use closed when put back) and breaks the tracking
// connections, which the tracking goroutine, woken through moved, opens again to addr.
func (s *Store) follow(addr string) {
	s.mu.Lock()
	if s.closed || addr == s.primary {
		s.mu.Unlock()
		return
	}
	first := s.primary == ""
	s.primary = addr
	if first {
		// No connection was made to any other primary.
		s.mu.Unlock()
		return
	}
	s.moves++
	old := s.pool.Load().(*redis.Pool)
	s.pool.Store(s.newPool())
	conns := s.trackConns
	s.mu.Unlock()
	old.Close()
	for _, c := range conns {
		c.Close()
	}
	// Not a select statement: Yaegi v0.16.1 shares a select's cases, a send's value and
	// channel too, between every goroutine running it (docs/yaegi.md).
	wait.Poke(s.moved)
}

// movesSeen counts the moves from one primary to another.
func (s *Store) movesSeen() int64 {
	s.mu.Lock()
	n := s.moves
	s.mu.Unlock()
	return n
}

// primaryFailed is told of a call's failure with Redis Sentinel: a broken connection, a
// failed dial or a READONLY refusal asks the sentinels again (followSoon).
func (s *Store) primaryFailed(err error, broken bool) {
	if broken || strings.HasPrefix(err.Error(), "READONLY") {
		s.followSoon()
	}
}

// followSoon asks the sentinels where the primary is, on a goroutine of its own, and moves
// there; at most once every resolveEvery.
func (s *Store) followSoon() {
	if !claimTurn(&s.resolvedAt, resolveEvery) {
		return
	}
	go func() {
		// A panic must not reach Traefik from a goroutine of Weir's.
		defer func() { recover() }()
		ctx, cancel := context.WithTimeout(context.Background(), s.resolveTimeout())
		defer cancel()
		addr, err := s.resolve(ctx)
		if err == nil {
			s.follow(addr)
		}
	}()
}

// watchSentinels listens to the sentinels' announcements of failovers for the life of the
// Store, subscribed to one sentinel at a time, the next one when it fails. It runs on a
// goroutine of its own.
func (s *Store) watchSentinels() {
	defer func() {
		// A panic must not reach Traefik from a goroutine of Weir's; failures still make
		// the store ask the sentinels (followSoon).
		recover()
	}()
	retry := trackRetry
	for {
		for _, addr := range s.srv.nodes {
			heard, err := s.watchOnce(addr)
			if errors.Is(err, errTrackClosed) {
				return
			}
			if heard {
				retry = trackRetry
			}
		}
		// wait.Either, not a select statement: Yaegi v0.16.1 shares a select's cases
		// between every goroutine running it (docs/yaegi.md).
		if wait.Either(s.done, time.After(retry)) == 0 {
			return
		}
		if retry *= 2; retry > trackMaxRetry {
			retry = trackMaxRetry
		}
	}
}

// watchOnce subscribes to the sentinel at addr's +switch-master channel, asks where the
// primary is, and follows each move announced until the connection fails or the Store
// closes. It reports whether it was subscribed.
func (s *Store) watchOnce(addr string) (heard bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	c, err := s.dialSentinel(ctx, addr, true)
	cancel()
	if err != nil {
		return heard, err
	}
	defer c.Close()
	if !s.setWatchConn(c) {
		return heard, errTrackClosed
	}
	defer s.setWatchConn(nil)
	if err := c.Send("SUBSCRIBE", switchChannel); err != nil {
		return heard, fmt.Errorf("subscribe: %w", err)
	}
	if err := c.Flush(); err != nil {
		return heard, fmt.Errorf("subscribe: %w", err)
	}
	reply, err := redis.ReceiveWithTimeout(c, s.timeout)
	if err != nil {
		return heard, fmt.Errorf("subscribe: %w", err)
	}
	if kind, _ := pushKind(reply); kind != "subscribe" {
		return heard, fmt.Errorf("subscribe: unexpected reply %v", reply)
	}
	heard = true
	// Asked once subscribed, so that a move between the two is not missed.
	ctx, cancel = context.WithTimeout(context.Background(), s.resolveTimeout())
	primary, err := s.resolve(ctx)
	cancel()
	if err == nil {
		s.follow(primary)
	}

	return heard, s.listen(c, s.onSwitch)
}

// onSwitch follows the primary a +switch-master message names for the store's master.
func (s *Store) onSwitch(reply interface{}) {
	if primary := s.switched(reply); primary != "" {
		s.follow(primary)
	}
}

// switched reads a +switch-master message: the new primary's address when it concerns the
// store's master, else "".
func (s *Store) switched(reply interface{}) string {
	kind, msg := pushKind(reply)
	if kind != "message" || len(msg) != 3 {
		return ""
	}
	text, ok := msg[2].([]byte)
	if !ok {
		return ""
	}
	f := strings.Fields(string(text))
	if len(f) != 5 || f[0] != s.srv.master {
		return ""
	}
	return net.JoinHostPort(f[3], f[4])
}

// setWatchConn records the sentinel connection watchOnce listens on, so that Close can
// break its wait. It reports false once the Store is closed.
func (s *Store) setWatchConn(c redis.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed && c != nil {
		return false
	}
	s.watchConn = c
	return true
}
