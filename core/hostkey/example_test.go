package hostkey_test

import (
	"fmt"

	"github.com/weirproxy/weir/core/hostkey"
)

// The spellings Traefik routes to one router share one key; the cache key keeps them apart.
func ExampleCanonical() {
	for _, h := range []string{"EXAMPLE.com", "example.com.", "example.com:1", "Example.COM:8080", "[::1]:80", "::1"} {
		fmt.Printf("%-17s %s\n", h, hostkey.Canonical(h))
	}
	// Output:
	// EXAMPLE.com       example.com
	// example.com.      example.com
	// example.com:1     example.com
	// Example.COM:8080  example.com
	// [::1]:80          [::1]
	// ::1               [::1]
}
