package store_test

import (
	"testing"

	"github.com/weirproxy/weir/core/store"
	"github.com/weirproxy/weir/internal/storetest"
)

// The memory store passes the suite every Purger passes, and a purge of everything leaves it
// counting no bytes: the indexes emptied with it.
func TestMemoryPurgeSuite(t *testing.T) {
	storetest.Purges(t, openMemory, memoryEmpty)
}

func openMemory(t *testing.T) storetest.PurgeStore {
	return store.NewMemory(store.MemorySettings{})
}

func memoryEmpty(t *testing.T, st storetest.PurgeStore) {
	t.Helper()
	if n, b := st.(*store.Memory).Len(); n != 0 || b != 0 {
		t.Errorf("Len after purging everything = %d, %d; want 0, 0", n, b)
	}
}
