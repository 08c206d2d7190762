package setting_test

import (
	"fmt"

	"github.com/weirproxy/weir/core/setting"
)

func ExampleUnderPrefix() {
	prefixes := []string{"/health", "/api/"}
	for _, path := range []string{"/health", "/health/live", "/healthz", "/api", "/api/v1", "/apis"} {
		fmt.Println(path, setting.UnderPrefix(path, prefixes))
	}
	// Output:
	// /health 0
	// /health/live 0
	// /healthz -1
	// /api 1
	// /api/v1 1
	// /apis -1
}
