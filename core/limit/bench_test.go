package limit

import (
	"context"
	"testing"
)

// BenchmarkAcquireRelease measures the uncontended path every origin fetch takes.
func BenchmarkAcquireRelease(b *testing.B) {
	l, err := New(Settings{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	req := Request{Partition: "https://shop.example/search", Host: "shop.example"}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		release, err := l.Acquire(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		release()
	}
}
