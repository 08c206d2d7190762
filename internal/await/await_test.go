package await

import (
	"sync"
	"testing"
	"time"
)

func TestGroupReturnsOnceTheGoroutinesEnd(t *testing.T) {
	release := make(chan struct{})
	var ended int32
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-release
			mu.Lock()
			ended++
			mu.Unlock()
		}()
	}
	close(release)
	Group(t, &wg, 5*time.Second, "three goroutines")
	mu.Lock()
	defer mu.Unlock()
	if ended != 3 {
		t.Errorf("Group returned with %d goroutines ended, want 3", ended)
	}
}

func TestGoroutinesRunsEachIndexOnce(t *testing.T) {
	var mu sync.Mutex
	seen := map[int]int{}
	Goroutines(t, 4, 5*time.Second, "four goroutines", func(g int) {
		mu.Lock()
		seen[g]++
		mu.Unlock()
	})
	mu.Lock()
	defer mu.Unlock()
	for g := 0; g < 4; g++ {
		if seen[g] != 1 {
			t.Errorf("f(%d) ran %d times, want once", g, seen[g])
		}
	}
	if len(seen) != 4 {
		t.Errorf("f ran for %d indexes, want 4: %v", len(seen), seen)
	}
}
