package redisstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/mna/redisc"
	"github.com/weirproxy/weir/core/wait"
)

// Redis Cluster (redis-cluster://host1:port,host2:port/).
//
// A cluster spreads keys over its primaries by hash slot: CRC16 of the key (of the part
// between the first { and the next }, when there is one) modulo 16384. github.com/mna/redisc
// (built on redigo, loaded unpatched by Yaegi v0.16.1) keeps the map of slots to nodes,
// read with CLUSTER SLOTS from the URL's nodes and refreshed in the background whenever a
// node answers MOVED, and a redigo pool per node, each dialling with dialAddr (TLS, AUTH).
// Every command goes to the node of its key's slot (clusterDo): a MOVED reply (the slot
// moved for good) is followed once the map points to the new node, an ASK reply (the slot is
// being migrated and this key is already on the importing node) once to the node named, on
// a connection of its own, after ASKING. Commands keep the store's per-call timeouts.
//
// A command may name keys of one slot only, and a Lua script may touch only the keys it is
// given, in one slot. Weir's keys are not hash-tagged (a URL may contain braces; tagging
// would put every variant of a URL and every tag set on one node), so the tag and variant
// index (purge.go) is kept with per-key commands in a cluster: the entry's SET, then, per
// index set, a script of that set alone (clusterIndexScript) and the pruning of the members
// it drew with EXISTS and SREM; a purge takes members with SPOP and deletes their entries
// with one UNLINK per slot; a purge by prefix SCANs every primary. None of it is atomic
// across keys, which the index does not need (store.Purger).
//
// The near cache's tracking asks every primary for CLIENT TRACKING BCAST on the key
// prefix, on a connection per primary (trackCluster): a key's invalidations come from the
// node that holds it. Tracking is live only while every primary's connection is; a change
// of the primaries (a failover, a node added) restarts it.

const (
	// maxRedirects is how many MOVED or ASK replies a command follows.
	maxRedirects = 3
	// idleCheck is how long a cluster connection may sit idle before it is checked with
	// PING when taken from its pool: a node that restarted broke its idle connections, and
	// the single server's way (a new pool, resetPool) would take every node's.
	idleCheck = time.Second
	// refreshEvery spaces the refreshes of the slot map that failures ask for.
	refreshEvery = time.Second
)

var (
	errRedirects     = errors.New("too many cluster redirections")
	errLayoutChanged = errors.New("cluster primaries changed")
)

// newCluster returns the cluster client of s's nodes. It does not connect.
func (s *Store) newCluster() *redisc.Cluster {
	return &redisc.Cluster{
		StartupNodes: s.srv.nodes,
		CreatePool: func(addr string, _ ...redis.DialOption) (*redis.Pool, error) {
			return s.newNodePool(addr), nil
		},
		PoolWaitTime: s.timeout,
		// Called after every refresh of the slot map, on redisc's goroutine or a caller's:
		// the tracking loop compares the primaries when it sees the count move.
		LayoutRefresh: func(_, _ [redisc.HashSlots][]string) {
			atomic.AddInt64(&s.layoutGen, 1)
		},
	}
}

// newNodePool is the connection pool of one cluster node.
func (s *Store) newNodePool(addr string) *redis.Pool {
	return &redis.Pool{
		DialContext: func(ctx context.Context) (redis.Conn, error) {
			return s.dialAddr(ctx, addr, false)
		},
		TestOnBorrow: func(c redis.Conn, idle time.Time) error {
			if time.Since(idle) < idleCheck {
				return nil
			}
			_, err := do(c, s.timeout, "PING")
			return err
		},
		MaxIdle:     s.maxIdle,
		MaxActive:   s.maxActive,
		IdleTimeout: s.idleTimeout,
		Wait:        true,
	}
}

// slotKey is the key whose slot a command goes to: its first argument, or a script's first
// key.
func slotKey(cmd string, args []interface{}) string {
	i := 0
	switch cmd {
	case "EVALSHA", "EVAL":
		i = 2
	}
	if len(args) <= i {
		return ""
	}
	switch k := args[i].(type) {
	case string:
		return k
	case []byte:
		return string(k)
	}
	return ""
}

// clusterDo is doOnce in a cluster: cmd with args, and then next when it is not nil, on the
// node of the slot of cmd's key, following redirections.
func (s *Store) clusterDo(ctx context.Context, timeout time.Duration, cmd string, args, next []interface{}) (reply interface{}, retry bool, err error) {
	key := slotKey(cmd, args)
	for i := 0; i < maxRedirects; i++ {
		// c is used as a redis.Conn, never as the *redisc.Conn it is: Yaegi v0.16.1 panics
		// passing the *redisc.Conn from an assertion where a redis.Conn is expected
		// ("reflect.Set: value of type *struct {...} is not assignable to type
		// interp.valueInterface").
		c := s.cluster.Get()
		if err := bindConn(c, key); err != nil {
			c.Close()
			if s.isClosed() {
				return nil, false, ErrClosed
			}
			s.refreshSoon()
			return nil, false, err
		}
		var broken bool
		reply, broken, err = sendOn(c, timeout, cmd, args, next)
		if broken {
			s.refreshSoon()
		}
		re := redisc.ParseRedir(err)
		if re == nil {
			// A broken connection is sent again once, as on a single server; the pool
			// drops it, and checks the node's other idle ones as it hands them out.
			return reply, broken && !errors.Is(err, os.ErrDeadlineExceeded), err
		}
		if re.Type == "ASK" {
			reply, err = s.asking(ctx, re.Addr, timeout, cmd, args, next)
			return reply, false, err
		}
		// MOVED: redisc has pointed the slot at re.Addr and refreshes the whole map in the
		// background.
	}
	return nil, false, fmt.Errorf("%s: %w (%d)", cmd, errRedirects, maxRedirects)
}

// refreshSoon reads the slot map again, on a goroutine of its own, unless it was read in the
// last refreshEvery: a node that cannot be reached answers no MOVED, and only a new map
// shows the replica that took its slots over.
func (s *Store) refreshSoon() {
	if !claimTurn(&s.refreshedAt, refreshEvery) {
		return
	}
	go func() {
		// A panic must not reach Traefik from a goroutine of Weir's.
		defer func() { recover() }()
		s.cluster.Refresh()
	}()
}

// bindConn binds c, a connection of the cluster, to the node of key's slot.
func bindConn(c redis.Conn, key string) error {
	cc, ok := c.(*redisc.Conn)
	if !ok {
		return fmt.Errorf("cluster connection of type %T", c)
	}
	return cc.Bind(key)
}

// asking sends cmd once to addr, the node importing the slot of its key, after ASKING, on
// a connection of its own: a slot is migrated rarely, and ASK holds for one command.
func (s *Store) asking(ctx context.Context, addr string, timeout time.Duration, cmd string, args, next []interface{}) (interface{}, error) {
	if next != nil {
		// Not reached: a cluster store sends no pairs (purge.go).
		return nil, fmt.Errorf("%s: a pair of commands redirected by ASK", cmd)
	}
	c, err := s.dialAddr(ctx, addr, false)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return doThen(c, timeout, "ASKING", nil, append([]interface{}{cmd}, args...))
}

// primaries reads the slot map again and returns the addresses of the cluster's primaries,
// sorted.
func (s *Store) primaries() ([]string, error) {
	if err := s.cluster.Refresh(); err != nil {
		return nil, fmt.Errorf("cluster slots: %w", err)
	}
	var addrs []string
	err := s.cluster.EachNode(false, func(addr string, _ redis.Conn) error {
		addrs = append(addrs, addr)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cluster nodes: %w", err)
	}
	sort.Strings(addrs)
	return addrs, nil
}

// eachPrimary calls fn with a connection to each primary, for the commands that concern
// one node's keys (SCAN).
func (s *Store) eachPrimary(fn func(c redis.Conn) error) error {
	if err := s.cluster.Refresh(); err != nil {
		return fmt.Errorf("cluster slots: %w", err)
	}
	return s.cluster.EachNode(false, func(_ string, c redis.Conn) error {
		return fn(c)
	})
}

// unlinkBySlot deletes keys (each []byte or string) with one UNLINK per slot, and returns
// how many existed.
func (s *Store) unlinkBySlot(ctx context.Context, keys []interface{}) (int64, error) {
	names := make([]string, 0, len(keys))
	for _, k := range keys {
		switch v := k.(type) {
		case []byte:
			names = append(names, string(v))
		case string:
			names = append(names, v)
		}
	}
	total := int64(0)
	for _, group := range redisc.SplitBySlot(names...) {
		args := make([]interface{}, len(group))
		for i, k := range group {
			args[i] = k
		}
		reply, err := s.do(ctx, "UNLINK", args...)
		if err != nil {
			return total, err
		}
		n, ok := reply.(int64)
		if !ok {
			return total, fmt.Errorf("%w %v", errReply, reply)
		}
		total += n
	}
	return total, nil
}

// trackCluster is trackOnce in a cluster: a tracking connection to every primary, each
// pushing the invalidations of the keys its node holds, until one fails, the Store closes,
// or the primaries change.
func (s *Store) trackCluster() (live bool, err error) {
	gen := atomic.LoadInt64(&s.layoutGen)
	addrs, err := s.primaries()
	if err != nil {
		return live, err
	}
	conns := make([]redis.Conn, 0, len(addrs))
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for _, addr := range addrs {
		ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		c, err := s.dialAddr(ctx, addr, true)
		cancel()
		if err != nil {
			return live, fmt.Errorf("%s: %w", addr, err)
		}
		conns = append(conns, c)
		if err := s.subscribeTracking(c); err != nil {
			return live, fmt.Errorf("%s: %w", addr, err)
		}
	}
	if !s.setTrackConns(conns) {
		return live, errTrackClosed
	}
	defer s.setTrackConns(nil)
	s.nearStart()
	live = true

	stop := make(chan struct{})
	defer close(stop)
	// Each receiver sends one error at most: the buffer keeps them from blocking.
	errs := make(chan error, len(conns))
	for _, c := range conns {
		go s.ping(c, stop)
		go s.receive(c, errs)
	}
	tick := time.NewTicker(layoutCheck)
	defer tick.Stop()
	for {
		// core/wait, not a select statement: Yaegi v0.16.1 shares a select's cases between
		// every goroutine running it (docs/yaegi.md), and each Store tracks on its own.
		if i, v := wait.EitherValue(errs, tick.C); i == 0 {
			// A receiver sends only errors.
			err, _ := v.Interface().(error)
			if err == nil {
				continue
			}
			if s.isClosed() {
				return live, errTrackClosed
			}
			return live, err
		}
		now := atomic.LoadInt64(&s.layoutGen)
		if now == gen {
			continue
		}
		gen = now
		again, err := s.primaries()
		if err == nil && strings.Join(again, ",") != strings.Join(addrs, ",") {
			return live, fmt.Errorf("%w: %v, then %v", errLayoutChanged, addrs, again)
		}
	}
}

// receive applies what c pushes until it fails, and sends that failure on errs.
func (s *Store) receive(c redis.Conn, errs chan error) {
	defer func() {
		if r := recover(); r != nil {
			errs <- fmt.Errorf("tracking stopped: %v", r)
		}
	}()
	for {
		reply, err := redis.ReceiveWithTimeout(c, trackSilence)
		if err != nil {
			errs <- err
			return
		}
		s.invalidate(reply)
	}
}
