package missrate

import (
	"strconv"
	"testing"
)

// The detector runs on every lookup: compare these with the cost of a request through Traefik
// (run them under Yaegi too: YAEGI_TEST_FLAGS="-run XXX -bench ." scripts/yaegi-test.sh
// core/missrate).

func BenchmarkObserveHit(b *testing.B) {
	d, _ := New(Settings{})
	const p = "https://shop.example.com/products/catalog/item-12345"
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Hit(d, p)
	}
}

// BenchmarkObserveMiss observes misses spread over 100 paths, few enough per slot and window
// that none is judged: the common miss path.
func BenchmarkObserveMiss(b *testing.B) {
	d, _ := New(Settings{})
	paths := make([]string, 100)
	for i := range paths {
		paths[i] = "https://shop.example.com/products/catalog/item-" + strconv.Itoa(i)
	}
	const q = "page=2&sort=price&utm_source=newsletter&gclid=Cj0KCQiA"
	now := t0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Miss(d, paths[i%100], q, now)
		if i%2048 == 0 {
			// A new window for every slot, each with about 32 misses.
			now = now.Add(DefaultWindow)
		}
	}
}

// BenchmarkObserveMissJudged observes misses on one path past half of MinMisses, with hits
// enough that it never qualifies: every tenth miss is judged and, up to 64 a window, sampled.
func BenchmarkObserveMissJudged(b *testing.B) {
	d, _ := New(Settings{})
	const p = "https://shop.example.com/search"
	const q = "page=2&sort=price&utm_source=newsletter&gclid=Cj0KCQiA"
	now := t0
	for i := 0; i < 300; i++ {
		Miss(d, p, q, now)
		Hit(d, p)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Miss(d, p, q, now)
		Hit(d, p)
	}
}

// BenchmarkAllowFetch asks for a fetch on a partition that is not flagged, with throttling on.
func BenchmarkAllowFetch(b *testing.B) {
	d, _ := New(Settings{Throttle: true})
	const p = "https://shop.example.com/search"
	now := t0
	for i := 0; i < b.N; i++ {
		AllowFetch(d, p, now)
	}
}

// BenchmarkObserveFlood observes misses on a flagged partition and asks for their fetches: the
// miss path during a throttled flood.
func BenchmarkObserveFlood(b *testing.B) {
	d, _ := New(Settings{Throttle: true})
	const p = "https://shop.example.com/search"
	now := t0
	for i := 0; i < 500; i++ {
		Miss(d, p, "cb="+strconv.Itoa(i), now)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Miss(d, p, "cb=x", now)
		AllowFetch(d, p, now)
	}
}

// BenchmarkSample is the query sample alone.
func BenchmarkSample(b *testing.B) {
	d, _ := New(Settings{})
	pt := newParamTable()
	const q = "page=2&sort=price&utm_source=newsletter&gclid=Cj0KCQiA"
	for i := 0; i < b.N; i++ {
		sample(&pt, d.seed, q)
	}
}

// BenchmarkHashFNV1a is the FNV-1a loop the package does not use, for comparison with the keyed
// hash in BenchmarkObserveHit: compiled they are alike, under Yaegi the loop runs interpreted
// byte by byte.
func BenchmarkHashFNV1a(b *testing.B) {
	const p = "https://shop.example.com/products/catalog/item-12345"
	var sum uint64
	for i := 0; i < b.N; i++ {
		h := uint64(14695981039346656037)
		for j := 0; j < len(p); j++ {
			h ^= uint64(p[j])
			h *= 1099511628211
		}
		sum += h
	}
	if sum == 1 {
		b.Log(sum)
	}
}
