// Package await holds the waits Weir's tests share across packages. Each one fails the test
// with "hangs" when what it waits for has not come within the bound it is given: a test never
// blocks for ever on a bug. Standard library and core/wait only: the tests run interpreted too.
package await

import (
	"sync"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/wait"
)

// Goroutines runs f(0) to f(n-1), each on a goroutine of its own, and waits for them all
// as Group does.
func Goroutines(t testing.TB, n int, within time.Duration, what string, f func(g int)) {
	t.Helper()
	var wg sync.WaitGroup
	for g := 0; g < n; g++ {
		wg.Add(1)
		// g passed as an argument: Yaegi v0.16.1 keeps one loop variable for every
		// iteration (docs/yaegi.md).
		go func(g int) {
			defer wg.Done()
			f(g)
		}(g)
	}
	Group(t, &wg, within, what)
}

// Group waits for wg's goroutines to return, failing the test if they have not within the
// bound. what says what they do ("concurrent Record and Lookup").
func Group(t testing.TB, wg *sync.WaitGroup, within time.Duration, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	// wait.Either, not a select statement: Yaegi v0.16.1 shares a select's cases between
	// every goroutine running it (docs/yaegi.md), and tests wait in parallel.
	if wait.Either(done, time.After(within)) == 1 {
		t.Fatalf("%s: hangs after %v", what, within)
	}
}
