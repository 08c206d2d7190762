package limit

import (
	"context"
	"testing"
)

// BenchmarkWaitReturn measures the uncontended path every origin fetch takes.
func BenchmarkWaitReturn(b *testing.B) {
	l, err := New(Settings{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	req := Request{Partition: "https://shop.example/search", Host: "shop.example"}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		sl, err := Wait(ctx, l, req.Partition, req.Host, req.Upload)
		if err != nil {
			b.Fatal(err)
		}
		Return(sl)
	}
}

// BenchmarkTakeReturn measures Take and a deferred Return, as a pass-through request takes
// and gives back its slot. Under Yaegi, count it with scripts/yaegi-cost.sh core/limit
// BenchmarkTakeReturn.
func BenchmarkTakeReturn(b *testing.B) {
	benchTakeReturn(b, Settings{})
}

// BenchmarkTakeReturnAtCap is BenchmarkTakeReturn with a partition cap of one slot: a slot
// free at once while the pool is at its smallest cap.
func BenchmarkTakeReturnAtCap(b *testing.B) {
	benchTakeReturn(b, Settings{MaxPerPartition: 1})
}

func benchTakeReturn(b *testing.B, s Settings) {
	l, err := New(s)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		takeReturn(l)
	}
}

func takeReturn(l *Limiter) {
	sl := Take(l, "https://shop.example/search", "shop.example", false)
	defer Return(sl)
}

// BenchmarkTakeReturnBare is BenchmarkTakeReturn's loop and call without the limiter, to
// subtract from it.
func BenchmarkTakeReturnBare(b *testing.B) {
	l, err := New(Settings{})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		takeReturnBare(l)
	}
}

func takeReturnBare(l *Limiter) {
	if l == nil {
		return
	}
}
