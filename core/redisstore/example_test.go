package redisstore

import (
	"fmt"
	"time"

	"github.com/weirproxy/weir/core/store"
)

func ExampleNew() {
	// New does not connect, so it succeeds while the server is away.
	st, err := New(Settings{URL: "redis://:secret@127.0.0.1:1/2", KeyPrefix: "shop:"})
	fmt.Println(err)
	defer st.Close()

	// Remote stores are used through the store breaker (FR-STF-1).
	var s store.Store = store.NewGuard(st, store.GuardSettings{Timeout: 50 * time.Millisecond})
	_ = s

	_, err = New(Settings{URL: "ftp://x"})
	fmt.Println(err)
	// Output:
	// <nil>
	// store.url: "ftp://x": scheme must be redis, rediss, redis-cluster, rediss-cluster, redis-sentinel or rediss-sentinel
}
