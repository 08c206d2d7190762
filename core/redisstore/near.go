package redisstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/weirproxy/weir/core/store"
	"github.com/weirproxy/weir/core/wait"
)

// The near tier: copies of entries read from the server, kept in this process and served
// without a round trip for as long as the server promises to say when they change.
//
// Reading an entry from Redis costs a round trip plus redigo's and Decode's interpreted steps:
// in Yaegi more of Traefik's CPU per hit than proxying the request does. The near tier makes a
// repeated hit cost what a hit on the memory store costs. It is correct only with
// invalidation, so it is kept only while the server tracks Weir's keys for this process
// (Redis 6 and Valkey: CLIENT TRACKING in broadcasting mode on the key prefix, invalidations
// pushed to a connection subscribed to __redis__:invalidate). Every write of a key under the
// prefix, by any Weir, an expiry or an eviction, drops the near copy. While that connection is
// down the near tier is empty and unused: without tracking no copy can be trusted. (Its owner
// may keep entries there that the server did not take while the store is lost, store.Fallback;
// tracking back empties them with the rest.)
//
// A copy read just before its key changes could be stored after the invalidation that
// should have removed it. A generation counter, moved by every invalidation and by every
// loss of tracking, closes that window: a copy is kept only if the counter did not move
// between the read and the copy's storing (fill).

const (
	// invalidateChannel is where Redis pushes invalidations to a RESP2 client.
	invalidateChannel = "__redis__:invalidate"
	// pushKeepAlive and pushKeepAliveProbes are the TCP keep-alive of a connection that only
	// listens (tracking invalidations, a sentinel's announcements): the kernel probes it
	// after a second of silence and every second after that, and breaks it when 9 probes in
	// a row went unanswered. A server gone without closing the
	// connection (its host lost, the network cut) is so noticed within about 10s, and copies
	// are not served for minutes, at no cost to an idle Traefik: the probes are the kernel's,
	// not Weir's, where a PING every second cost each store's interpreted goroutines a wake.
	pushKeepAlive       = time.Second
	pushKeepAliveProbes = 9
	// trackPing is how often a listening connection is pinged anyway, and trackSilence
	// without any message on it (pongs included) counts as a lost connection: for a server
	// whose host answers the kernel's probes while the server itself answers nothing, and so
	// takes no write that could make a copy stale. Seldom, since an idle Traefik pays for
	// each store's pings (docs/benchmarks.md, "An idle Traefik").
	trackPing    = 30 * time.Second
	trackSilence = 3 * trackPing
	// layoutCheck is how often a cluster's tracking looks whether a refresh of the slot map
	// changed its primaries (trackCluster).
	layoutCheck = time.Second
	// trackRetry and trackMaxRetry space the attempts to track again after a failure.
	trackRetry    = 100 * time.Millisecond
	trackMaxRetry = 5 * time.Second
)

var errTrackClosed = errors.New("store closed")

// Near returns the near tier, or nil when it is off. Its entries are copies that may be
// served as they are; it is empty while the server does not track keys for this process.
func (s *Store) Near() *store.Memory {
	return s.near
}

// NearLive reports whether the server tracks keys for the near tier now.
func (s *Store) NearLive() bool {
	return atomic.LoadInt32(&s.nearLive) == 1
}

// ChangeMark returns a mark that moves whenever a key under the prefix may have changed, as
// far as this process can know: on every invalidation the server pushes, every write and
// deletion of this process, and every loss and return of tracking; and whether the server
// tracks the prefix for this process now (never with the near tier off). While tracked, a
// key read after ChangeMark returned m, and found absent or present, is as it was read for as
// long as ChangeMark returns m and tracked again: a record polled from the server need not be
// read again until then. A tracking connection that died without a word is noticed within
// trackSilence, which moves the mark.
func (s *Store) ChangeMark() (mark int64, tracked bool) {
	if s.near == nil {
		return 0, false
	}
	// The mark before tracked, as GetWithin reads them: a loss between the two reads as
	// untracked, one before both moved the mark.
	mark = atomic.LoadInt64(&s.nearGen)
	tracked = atomic.LoadInt32(&s.nearLive) == 1
	return mark, tracked
}

// ChangeSignal returns a channel closed when the mark ChangeMark returns next moves (nil
// with the near tier off): a poller with nothing to do until something changes waits on it
// instead of polling. Taken before ChangeMark is read, it misses no move.
func (s *Store) ChangeSignal() <-chan struct{} {
	if s.near == nil {
		return nil
	}
	s.signalMu.Lock()
	defer s.signalMu.Unlock()
	if s.signal == nil {
		s.signal = make(chan struct{})
	}
	atomic.StoreInt32(&s.signalled, 1)
	return s.signal
}

// markMoved closes the channel ChangeSignal gave, if any: the mark just moved. One atomic
// load when nobody waits.
func (s *Store) markMoved() {
	if atomic.LoadInt32(&s.signalled) == 0 {
		return
	}
	s.signalMu.Lock()
	atomic.StoreInt32(&s.signalled, 0)
	if s.signal != nil {
		close(s.signal)
		s.signal = nil
	}
	s.signalMu.Unlock()
}

// nearFill keeps e as the near copy of key, unless an invalidation or a loss of tracking
// happened since gen was read, before the read of e.
func (s *Store) nearFill(key string, e *store.Entry, gen int64) {
	if s.near.Set(context.Background(), key, e) != nil {
		return
	}
	if atomic.LoadInt64(&s.nearGen) != gen {
		s.near.Delete(context.Background(), key)
	}
}

// nearDrop removes the near copy of key and fails fills under way: this process wrote key.
func (s *Store) nearDrop(key string) {
	if s.near == nil {
		return
	}
	atomic.AddInt64(&s.nearGen, 1)
	s.markMoved()
	s.near.Delete(context.Background(), key)
}

// nearLost empties the near tier and stops its use until tracking is back. It is called
// once per loss, not after every failed attempt to track again: while tracking is down the
// near tier holds only what its owner keeps there while the store is lost
// (store.Fallback), which an emptying on every retry would throw away.
func (s *Store) nearLost() {
	atomic.StoreInt32(&s.nearLive, 0)
	atomic.AddInt64(&s.nearGen, 1)
	s.markMoved()
	s.near.Clear()
}

// track keeps a tracking connection up for the life of the Store. It runs on a goroutine
// of its own.
func (s *Store) track() {
	defer func() {
		// A panic must not reach Traefik from a goroutine of Weir's; the near tier stays off.
		if r := recover(); r != nil {
			s.nearLost()
			s.nearLog(false, fmt.Errorf("tracking stopped: %v", r))
		}
	}()
	retry := trackRetry
	loggedDown := false
	for {
		wasLive, err := s.trackOnce()
		if wasLive {
			s.nearLost()
		}
		if errors.Is(err, errTrackClosed) {
			return
		}
		// Logged once per change of state: the first failure, and each loss after tracking.
		if wasLive || !loggedDown {
			s.nearLog(false, err)
			loggedDown = true
		}
		if wasLive {
			retry = trackRetry
		}
		// wait.Any, not a select statement: Yaegi v0.16.1 shares a select's cases between
		// every goroutine running it (docs/yaegi.md), and each Store tracks on its own.
		i := wait.Any(s.done, s.moved, time.After(retry))
		if i == 0 {
			return
		}
		// 1: the primary moved (sentinel.go): tracking is tried there at once.
		if i == 1 {
			retry = trackRetry
		} else if retry *= 2; retry > trackMaxRetry {
			retry = trackMaxRetry
		}
	}
}

// trackOnce opens a connection, asks the server to push invalidations of the key prefix to
// it, and applies them until the connection fails or the Store closes. It reports whether
// tracking was up before it ended. In a cluster it tracks every primary (trackCluster).
func (s *Store) trackOnce() (live bool, err error) {
	if s.cluster != nil {
		return s.trackCluster()
	}
	moves := s.movesSeen()
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	c, err := s.dial(ctx, true)
	cancel()
	if err != nil {
		return live, err
	}
	if !s.setTrackConns([]redis.Conn{c}) {
		c.Close()
		return live, errTrackClosed
	}
	defer s.setTrackConns(nil)
	defer c.Close()
	if s.movesSeen() != moves {
		// Dialled the primary a move left behind, which did not see this connection to
		// break it (follow).
		return live, errPrimaryMoved
	}
	if err := s.subscribeTracking(c); err != nil {
		return live, err
	}
	s.nearStart()
	live = true

	return live, s.listen(c, s.invalidate)
}

// listen pings c, a connection that receives pushes (tracking invalidations, a sentinel's
// messages), and hands each push to handle until c fails (errTrackClosed once the store is
// closed).
func (s *Store) listen(c redis.Conn, handle func(reply interface{})) error {
	stop := make(chan struct{})
	defer close(stop)
	go s.ping(c, stop)
	for {
		reply, err := redis.ReceiveWithTimeout(c, trackSilence)
		if err != nil {
			if s.isClosed() {
				return errTrackClosed
			}
			return err
		}
		handle(reply)
	}
}

// subscribeTracking asks the server of c to push the invalidations of the key prefix to c.
func (s *Store) subscribeTracking(c redis.Conn) error {
	id, err := redis.Int64(do(c, s.timeout, "CLIENT", "ID"))
	if err != nil {
		return fmt.Errorf("client id: %w", err)
	}
	// Redirected to itself: in RESP2 a connection that subscribed cannot send CLIENT
	// TRACKING, but it may receive what another connection's tracking redirects, its own
	// included.
	if _, err := do(c, s.timeout, "CLIENT", "TRACKING", "ON", "REDIRECT", id, "BCAST", "PREFIX", s.prefix); err != nil {
		return fmt.Errorf("client tracking: %w", err)
	}
	if err := c.Send("SUBSCRIBE", invalidateChannel); err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	reply, err := redis.ReceiveWithTimeout(c, s.timeout)
	if err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	if kind, _ := pushKind(reply); kind != "subscribe" {
		return fmt.Errorf("subscribe: unexpected reply %v", reply)
	}
	return nil
}

// nearStart puts the near tier in use: from here every change of a key under the prefix is
// pushed to this process, so copies read from now on can be trusted. Anything kept before
// is dropped (and by nearLost on the way out).
func (s *Store) nearStart() {
	atomic.AddInt64(&s.nearGen, 1)
	s.near.Clear()
	atomic.StoreInt32(&s.nearLive, 1)
	s.markMoved()
	s.nearLog(true, nil)
}

// ping sends PING on c every trackPing until stop closes or a send fails. redigo allows one
// sender beside one receiver on a connection.
func (s *Store) ping(c redis.Conn, stop chan struct{}) {
	defer func() {
		if r := recover(); r != nil {
			c.Close()
		}
	}()
	t := time.NewTicker(trackPing)
	defer t.Stop()
	for {
		// core/wait, not select statements: Yaegi v0.16.1 shares a select's cases between
		// every goroutine running it (docs/yaegi.md), and one pings each connection tracked.
		if wait.Either(stop, t.C) == 0 || wait.Ready(stop) {
			return
		}
		if c.Send("PING") != nil || c.Flush() != nil {
			return
		}
	}
}

// invalidate applies one pushed message: a list of keys whose copies are stale, or nil when
// the whole database was flushed. Pongs and anything else are ignored.
func (s *Store) invalidate(reply interface{}) {
	kind, msg := pushKind(reply)
	if kind != "message" || len(msg) != 3 {
		return
	}
	atomic.AddInt64(&s.nearGen, 1)
	s.markMoved()
	keys, ok := msg[2].([]interface{})
	if !ok {
		// A nil list: FLUSHDB or FLUSHALL. Anything else unexpected is treated alike.
		s.near.Clear()
		return
	}
	prefix := []byte(s.prefix)
	for _, k := range keys {
		b, ok := k.([]byte)
		if !ok || !bytes.HasPrefix(b, prefix) {
			continue
		}
		s.near.Delete(context.Background(), string(b[len(prefix):]))
	}
}

// pushKind reads the kind of a pushed message ("subscribe", "message", "pong") and its
// parts.
func pushKind(reply interface{}) (string, []interface{}) {
	msg, ok := reply.([]interface{})
	if !ok || len(msg) == 0 {
		return "", nil
	}
	kind, ok := msg[0].([]byte)
	if !ok {
		return "", nil
	}
	return string(kind), msg
}

// setTrackConns records the tracking connections, so that Close can break their waits. It
// reports false once the Store is closed.
func (s *Store) setTrackConns(conns []redis.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed && conns != nil {
		return false
	}
	s.trackConns = conns
	return true
}

func (s *Store) nearLog(live bool, err error) {
	if s.onNear != nil {
		s.onNear(live, err)
	}
}
