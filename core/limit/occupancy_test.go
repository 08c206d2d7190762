package limit

import (
	"context"
	"testing"
)

func TestBusiest(t *testing.T) {
	l, ft := newTestLimiter(t, Settings{MaxConcurrent: 3, MaxPerPartition: 2})
	var held []func()
	for _, req := range []Request{
		{Partition: "http://a/x", Host: "a"},
		{Partition: "http://a/x", Host: "a"},
		{Partition: "http://b/y", Host: "b"},
		{Partition: "http://c/upload", Host: "c", Upload: true},
	} {
		held = append(held, hold(t, l, req))
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch, _ := queueCtx(t, l, ft, ctx, Request{Partition: "http://b/y", Host: "b"})

	got := l.Busiest(10)
	want := []Occupancy{
		{Partition: "http://a/x", InFlight: 2},
		{Partition: "http://b/y", InFlight: 1, Queued: 1},
		{Partition: "http://c/upload", InFlight: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("Busiest = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Busiest[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
	if got := l.Busiest(1); len(got) != 1 || got[0].Partition != "http://a/x" {
		t.Errorf("Busiest(1) = %+v, want the busiest partition alone", got)
	}
	cancel()
	if r := await(t, ch); r.err == nil {
		t.Fatal("the waiter got a slot after its context ended")
	}
	for _, release := range held {
		release()
	}
	if got := l.Busiest(10); len(got) != 0 {
		t.Errorf("Busiest after every slot came back = %+v, want none", got)
	}
}
