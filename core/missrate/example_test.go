package missrate_test

import (
	"fmt"
	"strconv"
	"sync/atomic"
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

// The same flood without the throttle: once the path is flagged, each URL's first miss goes
// past the cache, and its second takes the cache's path.
func ExampleBypass() {
	d, err := missrate.New(missrate.Settings{})
	if err != nil {
		fmt.Println(err)
		return
	}
	const search = "https://shop.example/search"
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	fmt.Println("before the flood:", missrate.Bypass(d, search, search+"?q=shoes", now))
	for i := 0; i < 500; i++ {
		missrate.Miss(d, search, "cb="+strconv.Itoa(i), now)
		now = now.Add(time.Millisecond)
	}
	fmt.Println("flagged:", atomic.LoadInt32(missrate.Flags(d)) != 0)
	fmt.Println("first miss of ?q=socks:", missrate.Bypass(d, search, search+"?q=socks", now))
	fmt.Println("second miss of ?q=socks:", missrate.Bypass(d, search, search+"?q=socks", now))
	fmt.Println("another path:", missrate.Bypass(d, "https://shop.example/cart", "https://shop.example/cart?id=1", now))
	// Output:
	// before the flood: false
	// flagged: true
	// first miss of ?q=socks: true
	// second miss of ?q=socks: false
	// another path: false
}
