package core

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func BenchmarkPerfAdmit(b *testing.B) {
	h, r := perfSetup(b)
	now := h.now()
	for i := 0; i < b.N; i++ {
		bk, p := h.admit(r, now)
		bk.Release(p, now)
	}
}

func BenchmarkPerfAdmitRecord(b *testing.B) {
	h, r := perfSetup(b)
	now := h.now()
	for i := 0; i < b.N; i++ {
		bk, p := h.admit(r, now)
		h.outcome(bk, p, r.Context(), 200)
	}
}

func BenchmarkPerfAcquire(b *testing.B) {
	h, r := perfSetup(b)
	for i := 0; i < b.N; i++ {
		release, _ := h.e.limiter.Acquire(r.Context(), limitRequest(r))
		release()
	}
}

func BenchmarkPerfStatusWriter(b *testing.B) {
	origin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Write([]byte("x"))
	})
	r := httptest.NewRequest(http.MethodGet, "http://example.com/a/b", nil)
	for i := 0; i < b.N; i++ {
		sw := &statusWriter{w: httptest.NewRecorder()}
		origin.ServeHTTP(sw, r)
	}
}
