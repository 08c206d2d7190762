package core

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/missrate"
	"github.com/weirproxy/weir/core/store"
)

func (h *Handler) v1(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return
	}
	if h.mem == nil || r.URL.RawQuery != "" || r.URL.RawPath != "" || len(r.Header["Upgrade"]) > 0 ||
		strings.IndexByte(r.URL.Path, '%') >= 0 {
		return
	}
	var key string
	if r.TLS == nil {
		key = "http://" + r.Host + r.URL.Path
	} else {
		key = "https://" + r.Host + r.URL.Path
	}
	ent := store.Lookup(h.mem, key)
	if ent == nil || ent.VaryIndex || len(r.Header["Cache-Control"]) > 0 || len(r.Header["Pragma"]) > 0 ||
		len(r.Header["If-None-Match"]) > 0 || len(r.Header["If-Modified-Since"]) > 0 {
		return
	}
	now := h.s.Now()
	if ent.Pass {
		return
	}
	if !now.Before(ent.FreshUntil) {
		return
	}
	hdr := w.Header()
	for k, v := range ent.Header {
		hdr[k] = v
	}
	hdr["Age"] = []string{strconv.FormatInt(int64(now.Sub(ent.Born)/time.Second), 10)}
	hdr["Cache-Status"] = []string{statusHit + strconv.FormatInt(int64(ent.FreshUntil.Sub(now)/time.Second), 10)}
	w.WriteHeader(ent.Status)
	if r.Method != http.MethodHead {
		w.Write(ent.Body)
	}
}

// only up to lookup
func (h *Handler) v2(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return
	}
	if h.mem == nil || r.URL.RawQuery != "" || r.URL.RawPath != "" || len(r.Header["Upgrade"]) > 0 ||
		strings.IndexByte(r.URL.Path, '%') >= 0 {
		return
	}
	var key string
	if r.TLS == nil {
		key = "http://" + r.Host + r.URL.Path
	} else {
		key = "https://" + r.Host + r.URL.Path
	}
	ent := store.Lookup(h.mem, key)
	_ = ent
}

// write only
func (h *Handler) v3(w http.ResponseWriter, r *http.Request, ent0 interface{}) {
	hdr := w.Header()
	hdr["Age"] = []string{"1"}
	hdr["Cache-Status"] = []string{"x"}
	w.WriteHeader(200)
	w.Write(nil)
}

type dw struct{ h http.Header }

func (d *dw) Header() http.Header       { return d.h }
func (d *dw) WriteHeader(int)           {}
func (d *dw) Write([]byte) (int, error) { return 0, nil }

func perfSetup(b *testing.B) (*Handler, *http.Request) {
	origin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=3600")
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("hello"))
	})
	h, _ := New("perf"+b.Name(), Settings{}, origin)
	r := httptest.NewRequest(http.MethodGet, "http://example.com/a/b", nil)
	r.RequestURI = "/a/b"
	h.ServeHTTP(httptest.NewRecorder(), r)
	return h, r
}

func BenchmarkPerfFull(b *testing.B) {
	h, r := perfSetup(b)
	w := httptest.NewRecorder()
	for i := 0; i < b.N; i++ {
		w.HeaderMap = http.Header{}
		h.ServeHTTP(w, r)
	}
}
func BenchmarkPerfV1NoMissrate(b *testing.B) {
	h, r := perfSetup(b)
	w := httptest.NewRecorder()
	for i := 0; i < b.N; i++ {
		w.HeaderMap = http.Header{}
		h.v1(w, r)
	}
}
func BenchmarkPerfV2UpToLookup(b *testing.B) {
	h, r := perfSetup(b)
	w := httptest.NewRecorder()
	for i := 0; i < b.N; i++ {
		h.v2(w, r)
	}
}
func BenchmarkPerfV3WriteOnly(b *testing.B) {
	h, r := perfSetup(b)
	w := httptest.NewRecorder()
	for i := 0; i < b.N; i++ {
		w.HeaderMap = http.Header{}
		h.v3(w, r, nil)
	}
}
func BenchmarkPerfMissrateHit(b *testing.B) {
	h, _ := perfSetup(b)
	for i := 0; i < b.N; i++ {
		missrate.Hit(h.missRate, "http://example.com/a/b")
	}
}
func BenchmarkPerfBaseline(b *testing.B) {
	w := httptest.NewRecorder()
	for i := 0; i < b.N; i++ {
		w.HeaderMap = http.Header{}
	}
}
