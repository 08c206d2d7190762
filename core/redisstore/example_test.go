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

func ExampleStore_Primary() {
	// A primary named by its sentinels: none is known before they are first asked, and
	// New asks them in the background, so it succeeds while they are away.
	st, err := New(Settings{URL: "redis-sentinel://127.0.0.1:1,127.0.0.1:2/mymaster/0"})
	fmt.Println(err)
	defer st.Close()
	fmt.Printf("%q\n", st.Primary())

	_, err = New(Settings{URL: "redis-sentinel://127.0.0.1:26379/"})
	fmt.Println(err)
	// Output:
	// <nil>
	// ""
	// store.url: "redis-sentinel://127.0.0.1:26379/": needs the name the sentinels monitor the primary by, as in redis-sentinel://host:26379/mymaster
}
