package redisstore

import (
	"context"
	"net"
	"sync"

	"github.com/gomodule/redigo/redis"
	"github.com/mna/redisc"
)

// Yaegi v0.16.1 builds the reflect types of an interpreted type's methods the first time a
// value of that type is asserted to an interface (typeAssert, itype.methods, refType), and
// keeps them without a lock. Two goroutines making that first assertion at once can read a
// type half built: reflect.FuncOf dereferences nil and the call panics. Every command this
// store sends makes such assertions (redis.DoWithTimeout asserts the pooled connection to
// redis.ConnWithTimeout, which asserts the dialled one in turn; redisc does the same), and a
// Weir that has just started sends its first commands from several goroutines together: a
// request's lookup beside a budgets share or a breaker sync (docs/yaegi.md, "First
// assertions race"). warmAssertions makes each of those assertions once, on one goroutine
// and on connections that never reach a server, before any Store exists; afterwards they
// only read what it built.
// New makes them, once, before it returns the process's first Store.
var warmOnce sync.Once

// warmAssertions makes each assertion of a connection to redis.ConnWithTimeout and
// redis.ConnWithContext that sending a command makes: on a dialled connection, a pooled one
// and a cluster connection. An empty command name with nothing pending returns at once
// without reading or writing (redigo's conn.DoWithTimeout).
//
// Never a pool's error connection (Pool.Get's answer when it cannot dial): under Yaegi its
// DoWithTimeout, whose parameters have no names, receives its arguments out of place and
// panics in reflect.Set ("value of type time.Duration is not assignable to type error").
// Weir never sends on one: it takes connections with GetContext, and redisc returns Get's
// error before using its connection (Cluster.getFromPool).
func warmAssertions() {
	client, server := net.Pipe()
	server.Close()
	dialled := redis.NewConn(client, 0, 0)
	pool := &redis.Pool{Dial: func() (redis.Conn, error) { return dialled, nil }}
	pooled := pool.Get()
	var cluster redis.Conn = &redisc.Conn{}
	for _, c := range []redis.Conn{dialled, pooled, cluster} {
		_, _ = c.(redis.ConnWithTimeout)
		_, _ = c.(redis.ConnWithContext)
	}
	// The commands as do sends them (reply.go); their results are not wanted.
	_, _ = do(pooled, 0, "")
	_, _ = redis.DoContext(pooled, context.Background(), "")
	pooled.Close()
	pool.Close()
	client.Close()
}
