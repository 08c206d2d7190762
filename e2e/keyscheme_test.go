package e2e

import (
	"io"
	"net/http"
	"testing"
)

// TestKeyScheme: behind a proxy that terminates TLS, Traefik's web entry point (trusting
// 127.0.0.1's forwarded headers) receives every request over plain HTTP. With key.scheme:
// forwarded, requests whose X-Forwarded-Proto is https and http are cached apart, each
// answered with its own; with the default (tls), they share one entry, the first fetched
// answering both (docs/caching.md, "The scheme behind a proxy that terminates TLS").
func TestKeyScheme(t *testing.T) {
	o := newOrigin(t)
	for _, p := range []string{"/fwd/page", "/tls/page"} {
		o.Handle(p, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Cache-Control", "max-age=60")
			io.WriteString(w, "for "+r.Header.Get("X-Forwarded-Proto"))
		})
	}
	d := Dynamic{
		Routes: []Route{
			{Name: "fwd", Rule: "PathPrefix(`/fwd`)", Middleware: "weir-fwd"},
			{Name: "tls", Rule: "PathPrefix(`/tls`)", Middleware: "weir-tls"},
		},
		Middlewares: map[string]map[string]interface{}{
			"weir-fwd": {"key": map[string]interface{}{"scheme": "forwarded"}},
			"weir-tls": nil,
		},
	}
	tr := startTraefikWith(t, Options{TrustForwarded: true}, o.URL, d)

	steps := []struct {
		desc, path, proto, want string
		hit                     bool
	}{
		{desc: "forwarded: https first", path: "/fwd/page", proto: "https", want: "for https"},
		{desc: "forwarded: http, its own entry", path: "/fwd/page", proto: "http", want: "for http"},
		{desc: "forwarded: https again", path: "/fwd/page", proto: "https", want: "for https", hit: true},
		{desc: "forwarded: http again", path: "/fwd/page", proto: "http", want: "for http", hit: true},
		{desc: "tls: https first", path: "/tls/page", proto: "https", want: "for https"},
		{desc: "tls: http served the https answer", path: "/tls/page", proto: "http", want: "for https", hit: true},
	}
	for _, st := range steps {
		r := send(t, tr, http.MethodGet, st.path, map[string]string{"X-Forwarded-Proto": st.proto})
		wantReply(t, st.desc, r, http.StatusOK, st.want)
		if st.hit {
			wantHit(t, st.desc, r)
		} else {
			wantMiss(t, st.desc, r, "uri-miss", true)
		}
	}
	wantCount(t, o, "/fwd/page", 2)
	wantCount(t, o, "/tls/page", 1)
}
