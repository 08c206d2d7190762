package limit_test

import (
	"context"
	"fmt"

	"github.com/weirproxy/weir/core/limit"
)

func Example() {
	l, err := limit.New(limit.Settings{MaxConcurrent: 4, MaxPerPartition: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	search := limit.Request{Partition: "https://shop.example/search", Host: "shop.example"}

	// A foreground miss holds a slot until the answer's body is buffered.
	release, err := l.Acquire(context.Background(), search)
	fmt.Println("miss:", err)

	// A background refresh of the same path never waits: /search is at its cap.
	_, err = l.TryAcquire(search)
	fmt.Println("refresh:", limit.Detail(err))

	release()
	release() // idempotent: a recover path may release again
	fmt.Println("in flight:", l.Stats().Fetch.InFlight)
	// Output:
	// miss: <nil>
	// refresh: background-busy
	// in flight: 0
}
