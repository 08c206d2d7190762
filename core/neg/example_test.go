package neg_test

import (
	"fmt"
	"time"

	"github.com/weirproxy/weir/core/neg"
)

func Example() {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	c, err := neg.New(neg.Settings{}) // remember failures for 2s
	if err != nil {
		fmt.Println(err)
		return
	}
	// The origin answered 503 with Retry-After: 10 for a key with nothing stored.
	fmt.Println("recorded:", c.Record("GET example.com/a", neg.Failure{Status: 503, RetryAfter: 10 * time.Second}, now))
	// A 500, or a request with credentials, is not remembered.
	fmt.Println("recorded:", c.Record("GET example.com/b", neg.Failure{Status: 500}, now))

	if e, ok := c.Lookup("GET example.com/a", now.Add(time.Second)); ok {
		fmt.Println("serve", e.Status, "retry after", e.RetryAfter, "for", e.Until.Sub(now.Add(time.Second)))
	}
	_, ok := c.Lookup("GET example.com/a", now.Add(2*time.Second))
	fmt.Println("still remembered after 2s:", ok)
	// Output:
	// recorded: true
	// recorded: false
	// serve 503 retry after 10s for 1s
	// still remembered after 2s: false
}
