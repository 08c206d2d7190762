// Package redisstore is Weir's shared store: entries kept in Redis (or any server speaking
// its protocol) through redigo, so that every Weir in front of an origin serves from one
// cache and a restarted Weir starts warm.
//
// It is the only package that knows redigo and the Yaegi defects around it: the vendored
// redigo carries patches (patches/redigo-yaegi.patch) so that it loads and pools
// connections interpreted, and replies are read so that they mean the same compiled and
// interpreted (statusReply). Entries are stored in store.Encode's binary form under
// KeyPrefix+key, with a time to live that ends at the entry's KeepUntil, and indexed by tag
// and primary key for purges (purge.go).
//
// A Store reports a slow or absent server as errors, promptly; wrap it in a store.Guard to
// stop calling it while it keeps failing.
package redisstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/mna/redisc"
	"github.com/weirproxy/weir/core/store"
)

// ErrClosed is returned by calls on a closed Store.
var ErrClosed = errors.New("redis store closed")

// Store is a store.Store kept in Redis. It is safe for concurrent use.
type Store struct {
	srv         server
	prefix      string
	maxEntry    int
	maxIdle     int
	maxActive   int
	idleTimeout time.Duration
	timeout     time.Duration
	now         func() time.Time

	// pool holds the current *redis.Pool; a broken connection replaces it (resetPool).
	pool atomic.Value
	// cluster is the Redis Cluster client (cluster.go); nil for a single server.
	cluster *redisc.Cluster
	// layoutGen counts the cluster's slot map refreshes; refreshedAt is when a failure last
	// asked for one, in Unix nanoseconds.
	layoutGen   int64
	refreshedAt int64
	// resolvedAt is when a failure last asked the sentinels where the primary is, in Unix
	// nanoseconds (sentinel.go).
	resolvedAt int64
	// unreadable counts stored entries that could not be decoded.
	unreadable int64

	// near is the near tier (near.go); nil when it is off.
	near *store.Memory
	// nearGen moves on every invalidation and loss of tracking; nearLive is 1 while the
	// server tracks keys for near.
	nearGen  int64
	nearLive int32
	onNear   func(live bool, err error)
	// signal is the channel ChangeSignal gave, closed when nearGen next moves; signalled is
	// 1 while there is one. signalMu guards them.
	signalMu  sync.Mutex
	signal    chan struct{}
	signalled int32
	// onInvalid is told of each invalid or malformed entry Get deleted.
	onInvalid func(key string, err error)
	// done closes with the Store, to stop the tracking goroutine.
	done chan struct{}
	// moved wakes the tracking goroutine when the primary moved (sentinel.go).
	moved chan struct{}

	// mu guards replacing the pool, closed, trackConns, and with Redis Sentinel the
	// primary's address, the count of its moves and the sentinel connection listened on.
	mu         sync.Mutex
	closed     bool
	trackConns []redis.Conn
	primary    string
	moves      int64
	watchConn  redis.Conn
}

var (
	_ store.Store       = (*Store)(nil)
	_ store.TimedGetter = (*Store)(nil)
)

// New returns a Store for the server that s names. It does not connect: connections are made
// on first use, so New succeeds while the server is unreachable.
func New(s Settings) (*Store, error) {
	warmOnce.Do(warmAssertions)
	s, err := s.withDefaults()
	if err != nil {
		return nil, err
	}
	srv, err := parseURL(s.URL)
	if err != nil {
		return nil, err
	}
	st := &Store{
		srv:         srv,
		prefix:      s.KeyPrefix,
		maxEntry:    s.MaxEntrySize,
		maxIdle:     s.MaxIdle,
		maxActive:   s.MaxActive,
		idleTimeout: s.IdleTimeout,
		timeout:     s.Timeout,
		now:         s.Now,
		onNear:      s.OnNearChange,
		onInvalid:   s.OnInvalid,
		done:        make(chan struct{}),
		moved:       make(chan struct{}, 1),
	}
	st.pool.Store(st.newPool())
	if srv.cluster {
		st.cluster = st.newCluster()
	}
	if srv.sentinel {
		go st.watchSentinels()
	}
	if s.NearMaxSize > 0 {
		st.near = store.NewMemory(store.MemorySettings{MaxSize: s.NearMaxSize, MaxEntrySize: int64(s.MaxEntrySize)})
		go st.track()
	}
	return st, nil
}

// Get implements store.Store. An entry that cannot be decoded (written by another version
// of Weir, or not by Weir at all), that store.Decode finds invalid, or that is over
// MaxEntrySize is a miss, counted by Unreadable, and deleted unless a newer Weir wrote it
// (unreadableEntry). With the near tier on, a copy kept there is returned without asking the
// server, and an entry read while the server tracks keys is kept there.
func (s *Store) Get(ctx context.Context, key string) (*store.Entry, error) {
	return s.GetWithin(ctx, key, s.timeout)
}

// GetWithin is Get with its read from the server bounded by timeout as well (and by ctx),
// for a Guard (store.TimedGetter), whose timeout it takes without a context made for it.
func (s *Store) GetWithin(ctx context.Context, key string, timeout time.Duration) (*store.Entry, error) {
	near := s.near
	var gen int64
	if near != nil {
		if e := store.Lookup(near, key); e != nil {
			return e, nil
		}
		// Read before the server is asked, and before nearLive: see nearFill.
		gen = atomic.LoadInt64(&s.nearGen)
		if atomic.LoadInt32(&s.nearLive) == 0 {
			near = nil
		}
	}
	b, err := readBytes(s, ctx, s.prefix+key, timeout)
	if b == nil {
		return nil, err
	}
	var e *store.Entry
	if len(b) > s.maxEntry {
		// Set writes none so large: not an entry of this configuration (or of one with a
		// larger store.maxEntrySize), and not worth decoding.
		err = fmt.Errorf("%d bytes, over the entry size limit %d: %w", len(b), s.maxEntry, store.ErrInvalid)
	} else {
		e, err = store.Decode(b)
	}
	if err != nil {
		s.unreadableEntry(ctx, key, err, timeout)
		return nil, nil
	}
	if near != nil {
		s.nearFill(key, e, gen)
	}
	return e, nil
}

// unreadableEntry counts an entry that Get could not read, which it reports as a miss, and
// deletes it unless a newer version of Weir wrote it (a rolling upgrade shares one server
// between versions): left in place, an invalid or malformed entry would be read, refused and
// fetched again on every request until it expired, and a key no answer replaces (a breaker's
// deadline, an answer no longer storable) would keep it for good. Each deletion is told to
// OnInvalid.
func (s *Store) unreadableEntry(ctx context.Context, key string, err error, timeout time.Duration) {
	atomic.AddInt64(&s.unreadable, 1)
	if errors.Is(err, store.ErrUnknownVersion) {
		return
	}
	// Within the read's own bound: the deletion runs on the request's path.
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	derr := s.Delete(cctx, key)
	if s.onInvalid == nil {
		return
	}
	if derr != nil {
		err = fmt.Errorf("%w (not deleted: %v)", err, derr)
	}
	s.onInvalid(key, err)
}

// Set implements store.Store: the entry expires in Redis at its KeepUntil, rounded up to the
// millisecond. An entry already past KeepUntil is not stored. An entry whose encoded form is
// over MaxEntrySize is refused with store.ErrTooLarge. An entry with tags, or a variant, is
// stored and indexed for purges in the same round trip (setIndexed, purge.go); any other
// with a plain SET.
func (s *Store) Set(ctx context.Context, key string, e *store.Entry) error {
	ttl := e.KeepUntil.Sub(s.now())
	if ttl <= 0 {
		return nil
	}
	if len(e.Body) > s.maxEntry {
		return store.ErrTooLarge
	}
	b := store.Encode(e)
	if len(b) > s.maxEntry {
		return store.ErrTooLarge
	}
	ms := int64((ttl + time.Millisecond - 1) / time.Millisecond)
	if len(e.Tags) > 0 || strings.IndexByte(key, 0) > 0 {
		err := s.setIndexed(ctx, key, e.Tags, b, ms)
		// As below.
		s.nearDrop(key)
		return err
	}
	reply, err := s.do(ctx, "SET", s.prefix+key, b, "PX", ms)
	// Dropped at once rather than when the server's invalidation comes back: a request
	// that follows this one must not be served the copy this entry replaces.
	s.nearDrop(key)
	if err != nil {
		return fmt.Errorf("redis set: %w", err)
	}
	if reply != "OK" {
		return fmt.Errorf("redis set: unexpected reply %v", reply)
	}
	return nil
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	_, err := s.do(ctx, "DEL", s.prefix+key)
	s.nearDrop(key)
	if err != nil {
		return fmt.Errorf("redis delete: %w", err)
	}
	return nil
}

// Ping checks that the server answers, for health checks.
func (s *Store) Ping(ctx context.Context) error {
	reply, err := s.do(ctx, "PING")
	if err != nil {
		return fmt.Errorf("redis ping: %w", err)
	}
	if reply != "PONG" {
		return fmt.Errorf("redis ping: unexpected reply %v", reply)
	}
	return nil
}

// Unreadable counts the stored entries that Get could not decode and reported as misses.
func (s *Store) Unreadable() int64 {
	return atomic.LoadInt64(&s.unreadable)
}

// Close closes the Store's connections; calls after it fail with ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	for _, c := range s.trackConns {
		// Breaks the tracking goroutine's wait for a message.
		c.Close()
	}
	if s.watchConn != nil {
		s.watchConn.Close()
	}
	p := s.pool.Load().(*redis.Pool)
	s.mu.Unlock()
	if s.cluster != nil {
		s.cluster.Close()
	}
	return p.Close()
}

// do sends one command on a pooled connection. A connection that breaks (a server that
// restarted breaks every idle one) empties the pool, and the command is sent once more on a
// new connection: every command this store sends may safely be repeated (a purge batch sent
// twice deletes the next batch too, see purge.go).
func (s *Store) do(ctx context.Context, cmd string, args ...interface{}) (interface{}, error) {
	reply, retry, err := s.doOnce(ctx, cmd, args, nil)
	if retry {
		reply, _, err = s.doOnce(ctx, cmd, args, nil)
	}
	return reply, err
}

// doThen is do for two commands sent in one round trip: cmd, then next (its name, then its
// arguments). It returns next's reply, or the error of either (see doThen in reply.go).
func (s *Store) doThen(ctx context.Context, cmd string, args []interface{}, next []interface{}) (interface{}, error) {
	reply, retry, err := s.doOnce(ctx, cmd, args, next)
	if retry {
		reply, _, err = s.doOnce(ctx, cmd, args, next)
	}
	return reply, err
}

// doOnce sends cmd with args, and then next when it is not nil (doThen).
func (s *Store) doOnce(ctx context.Context, cmd string, args []interface{}, next []interface{}) (reply interface{}, retry bool, err error) {
	timeout, err := s.callTimeout(ctx)
	if err != nil {
		return nil, false, err
	}
	if s.cluster != nil {
		return s.clusterDo(ctx, timeout, cmd, args, next)
	}
	p := s.pool.Load().(*redis.Pool)
	c, err := p.GetContext(ctx)
	if err != nil {
		if s.isClosed() {
			return nil, false, ErrClosed
		}
		if s.srv.sentinel {
			s.primaryFailed(err, true)
		}
		// A pool replaced (and closed) since it was loaded refuses; the new one may not.
		return nil, s.pool.Load().(*redis.Pool) != p, err
	}
	reply, broken, err := sendOn(c, timeout, cmd, args, next)
	if err != nil && s.srv.sentinel {
		s.primaryFailed(err, broken)
	}
	if !broken {
		return reply, false, err
	}
	s.resetPool(p)
	// A command that ran out of time has no time left to repeat.
	return reply, !errors.Is(err, os.ErrDeadlineExceeded), err
}

// callTimeout is how long a call may wait: Timeout, or less if ctx ends sooner.
func (s *Store) callTimeout(ctx context.Context) (time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	timeout := s.timeout
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		if left <= 0 {
			return 0, context.DeadlineExceeded
		}
		if left < timeout {
			timeout = left
		}
	}
	return timeout, nil
}

func (s *Store) isClosed() bool {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	return closed
}

// claimTurn reports whether the time stored at *at (Unix nanoseconds) is every or more ago,
// and if so stores now there: of the callers that race for it, one takes each turn. It
// spaces out the background work a failure asks for (a cluster's slot map read again, the
// sentinels asked where the primary is).
func claimTurn(at *int64, every time.Duration) bool {
	now := time.Now().UnixNano()
	last := atomic.LoadInt64(at)
	return now-last >= int64(every) && atomic.CompareAndSwapInt64(at, last, now)
}
