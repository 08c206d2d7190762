package core

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/weirproxy/weir/core/httpcache"
)

// What a call into another interpreted package costs against the same call within core,
// under yaegi test -bench (docs/yaegi.md): localPartitionOf and localWeirOnlyField are
// copies of httpcache.PartitionOf and httpcache.WeirOnlyField, constants included.
// BenchmarkKey measures httpcache.Key, the cache key, set against what the same code cost
// as a method measured in core before it moved to httpcache.

func localPartitionOf(key string) string {
	if i := strings.IndexByte(key, '?'); i >= 0 {
		return key[:i]
	}
	return key
}

const (
	localFieldWeirCacheControl = "Weir-Cache-Control"
	localFieldSurrogateControl = "Surrogate-Control"
)

func localWeirOnlyField(name string) bool {
	switch name {
	case localFieldWeirCacheControl, localFieldSurrogateControl:
		return true
	}
	return false
}

var (
	boundarySink string
	boundaryFlag bool
)

func BenchmarkCallWithinPackage(b *testing.B) {
	for i := 0; i < b.N; i++ {
		boundarySink = localPartitionOf("http://example.com/p?a=1")
	}
}

func BenchmarkCallAcrossPackage(b *testing.B) {
	for i := 0; i < b.N; i++ {
		boundarySink = httpcache.PartitionOf("http://example.com/p?a=1")
	}
}

func BenchmarkSwitchCallWithinPackage(b *testing.B) {
	for i := 0; i < b.N; i++ {
		boundaryFlag = localWeirOnlyField("Content-Type")
	}
}

func BenchmarkSwitchCallAcrossPackage(b *testing.B) {
	for i := 0; i < b.N; i++ {
		boundaryFlag = httpcache.WeirOnlyField("Content-Type")
	}
}

func BenchmarkKey(b *testing.B) {
	k := httpcache.NewKeyer(nil)
	r := httptest.NewRequest(http.MethodGet, "http://example.com/p?b=2&a=1", nil)
	for i := 0; i < b.N; i++ {
		boundarySink = httpcache.Key(&k, r)
	}
}
