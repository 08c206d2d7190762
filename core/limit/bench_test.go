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
