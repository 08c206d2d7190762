package core

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func (h *Handler) passNoLimiter(w http.ResponseWriter, r *http.Request, cacheStatus string) {
	b, permit := h.admit(r, h.s.Now())
	if !permit.Allowed {
		return
	}
	_ = b
	w.Header()["Cache-Status"] = []string{cacheStatus}
	h.next.ServeHTTP(w, r)
}

func (h *Handler) passNoBreaker(w http.ResponseWriter, r *http.Request, cacheStatus string) {
	release, err := h.e.limiter.Acquire(r.Context(), limitRequest(r))
	if err != nil {
		return
	}
	defer release()
	w.Header()["Cache-Status"] = []string{cacheStatus}
	h.next.ServeHTTP(w, r)
}

func (h *Handler) passNothing(w http.ResponseWriter, r *http.Request, cacheStatus string) {
	w.Header()["Cache-Status"] = []string{cacheStatus}
	h.next.ServeHTTP(w, r)
}

func passSetup(b *testing.B) (*Handler, *http.Request) {
	origin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("x"))
	})
	h, _ := New("pp"+b.Name(), Settings{}, origin)
	r := httptest.NewRequest(http.MethodGet, "http://example.com/a/b", nil)
	r.RequestURI = "/a/b"
	return h, r
}

func BenchmarkPerfPassFull(b *testing.B) {
	h, r := passSetup(b)
	for i := 0; i < b.N; i++ {
		h.pass(httptest.NewRecorder(), r, "", "x")
	}
}
func BenchmarkPerfPassNoLimiter(b *testing.B) {
	h, r := passSetup(b)
	for i := 0; i < b.N; i++ {
		h.passNoLimiter(httptest.NewRecorder(), r, "x")
	}
}
func BenchmarkPerfPassNoBreaker(b *testing.B) {
	h, r := passSetup(b)
	for i := 0; i < b.N; i++ {
		h.passNoBreaker(httptest.NewRecorder(), r, "x")
	}
}
func BenchmarkPerfPassNothing(b *testing.B) {
	h, r := passSetup(b)
	for i := 0; i < b.N; i++ {
		h.passNothing(httptest.NewRecorder(), r, "x")
	}
}
