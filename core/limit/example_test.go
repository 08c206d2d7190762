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
	slot, err := limit.Wait(context.Background(), l, search.Partition, search.Host, search.Upload)
	fmt.Println("miss:", err)

	// A background refresh of the same path never waits: /search is at its cap.
	_, err = limit.TryTake(l, search.Partition, search.Host, search.Upload)
	fmt.Println("refresh:", limit.Detail(err))

	limit.Return(slot)
	limit.Return(slot) // once: a recover path may give it back again
	fmt.Println("in flight:", l.Stats().Fetch.InFlight)
	// Output:
	// miss: <nil>
	// refresh: background-busy
	// in flight: 0
}
