package store

import "testing"

func TestEntrySize(t *testing.T) {
	e := &Entry{Body: make([]byte, 10)}
	if got := e.Size(); got < 10 {
		t.Errorf("Size() = %d, want at least 10", got)
	}
}
