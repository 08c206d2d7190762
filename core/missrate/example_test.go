package missrate_test

import (
	"fmt"
	"strconv"
	"time"

	"github.com/weirproxy/weir/core/missrate"
)

// A cache-busting flood on one path: the detector reports it once, names the parameter that
// varies, and then holds the path to one origin fetch per window.
func Example() {
	d, err := missrate.New(missrate.Settings{Throttle: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	const search = "https://shop.example/search"
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := 0; i < 1000; i++ {
		query := "cb=" + strconv.Itoa(i) + "&lang=en"
		if a := missrate.Miss(d, search, query, now); a != nil {
			fmt.Printf("anomaly on %s: %d misses in %d lookups within %v; varying %v\n",
				a.Partition, a.Misses, a.Requests, a.At.Sub(a.Since), a.Varying)
		}
		now = now.Add(time.Millisecond)
	}

	ok, _ := missrate.AllowFetch(d, search, now)
	fmt.Println("first fetch allowed:", ok)
	ok, retryAfter := missrate.AllowFetch(d, search, now)
	// Retry-After takes whole seconds: round up.
	fmt.Println("second fetch allowed:", ok, "Retry-After:", int((retryAfter+time.Second-1)/time.Second))
	ok, _ = missrate.AllowFetch(d, "https://shop.example/cart", now)
	fmt.Println("another path allowed:", ok)

	if _, err := missrate.New(missrate.Settings{Ratio: 1.5}); err != nil {
		fmt.Println(err)
	}
	// Output:
	// anomaly on https://shop.example/search: 500 misses in 500 lookups within 499ms; varying [cb]
	// first fetch allowed: true
	// second fetch allowed: false Retry-After: 10
	// another path allowed: true
	// missRate.ratio: 1.5 must be between 0 and 1
}
