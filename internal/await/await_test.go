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
