package core

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkHit measures one fresh hit from the memory store, the path that decides Weir's
// throughput inside Traefik. Run it under Yaegi too (scripts/yaegi-test.sh with
// YAEGI_TEST_FLAGS="-test.bench Hit -test.run ^$"): interpreted cost is what Traefik pays.
func BenchmarkHit(b *testing.B) {
	body := strings.Repeat("x", 1024)
	origin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=3600")
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte(body))
	})
	h, err := New("bench-hit", Settings{}, origin)
	if err != nil {
		b.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodGet, "http://example.com/a/b", nil)
	r.RequestURI = "/a/b"
	h.ServeHTTP(httptest.NewRecorder(), r)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
}

// BenchmarkPassThrough measures an answer that may not be stored, after the first.
func BenchmarkPassThrough(b *testing.B) {
	origin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Write([]byte("x"))
	})
	h, err := New("bench-pass", Settings{}, origin)
	if err != nil {
		b.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodGet, "http://example.com/a/b", nil)
	r.RequestURI = "/a/b"
	h.ServeHTTP(httptest.NewRecorder(), r)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
}

// BenchmarkBare is the origin alone, to subtract from the others.
func BenchmarkBare(b *testing.B) {
	origin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Write([]byte("x"))
	})
	r := httptest.NewRequest(http.MethodGet, "http://example.com/a/b", nil)
	r.RequestURI = "/a/b"
	for i := 0; i < b.N; i++ {
		origin.ServeHTTP(httptest.NewRecorder(), r)
	}
}
