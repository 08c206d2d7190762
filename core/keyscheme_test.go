package core

import (
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestKeyScheme: by default the key's scheme is the connection's, so a request forwarded
// as https over plain HTTP shares the http entry; with key.scheme: forwarded,
// X-Forwarded-Proto https and http are cached apart, and a TLS connection that says http
// is keyed http.
func TestKeyScheme(t *testing.T) {
	tests := []struct {
		desc   string
		scheme string
		// overTLS says whether each request arrives over TLS; protos are their
		// X-Forwarded-Proto ("": none).
		overTLS     []bool
		protos      []string
		wantFetches int
	}{
		{desc: "tls: forwarded https and http share", scheme: "", overTLS: []bool{false, false}, protos: []string{"https", "http"}, wantFetches: 1},
		{desc: "tls named: forwarded https and http share", scheme: KeySchemeTLS, overTLS: []bool{false, false}, protos: []string{"https", "http"}, wantFetches: 1},
		{desc: "tls: the connections differ", scheme: "", overTLS: []bool{true, false}, protos: []string{"", ""}, wantFetches: 2},
		{desc: "forwarded: https and http apart", scheme: KeySchemeForwarded, overTLS: []bool{false, false}, protos: []string{"https", "http"}, wantFetches: 2},
		{desc: "forwarded: https twice shares", scheme: KeySchemeForwarded, overTLS: []bool{false, false}, protos: []string{"https", "https"}, wantFetches: 1},
		{desc: "forwarded: https forwarded and over TLS share", scheme: KeySchemeForwarded, overTLS: []bool{false, true}, protos: []string{"https", "https"}, wantFetches: 1},
		{desc: "forwarded: none is http", scheme: KeySchemeForwarded, overTLS: []bool{false, true}, protos: []string{"", "http"}, wantFetches: 1},
		{desc: "forwarded: anything but https is http", scheme: KeySchemeForwarded, overTLS: []bool{false, false}, protos: []string{"HTTPS", "wss"}, wantFetches: 1},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Cache-Control", "max-age=60")
				w.Write([]byte("answer"))
			})
			h := newTestHandler(t, Settings{Log: discardLog, KeyScheme: tc.scheme}, o)
			front := h.Front()
			for i, proto := range tc.protos {
				r := newRequest("GET", "http://example.test/page")
				if tc.overTLS[i] {
					r.TLS = &tls.ConnectionState{}
				}
				if proto != "" {
					r.Header.Set("X-Forwarded-Proto", proto)
				}
				w := httptest.NewRecorder()
				front.ServeHTTP(w, r)
				wantCode(t, "request "+proto, w, 200)
			}
			if got := o.callCount(); got != tc.wantFetches {
				t.Errorf("origin fetches %d, want %d", got, tc.wantFetches)
			}
		})
	}
}

// TestKeySchemeLeavesRequestAlone: the request Traefik handed in is not changed; the
// origin is given a copy whose TLS says the forwarded scheme.
func TestKeySchemeLeavesRequestAlone(t *testing.T) {
	o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
	})
	h := newTestHandler(t, Settings{Log: discardLog, KeyScheme: KeySchemeForwarded}, o)
	r := newRequest("GET", "http://example.test/page", "X-Forwarded-Proto", "https")
	h.Front().ServeHTTP(httptest.NewRecorder(), r)
	if r.TLS != nil {
		t.Errorf("the client's request: TLS %v, want it left nil", r.TLS)
	}
	if got := o.request(t, 1); got.TLS == nil {
		t.Errorf("the origin's request: TLS nil, want the forwarded https")
	}
}

func TestKeySchemeInvalid(t *testing.T) {
	_, err := New(uniqueEngineName(t), Settings{Log: discardLog, KeyScheme: "header"}, http.NotFoundHandler())
	if err == nil || !errors.Is(err, ErrSettings) || !strings.Contains(err.Error(), `key.scheme: "header" must be "tls" or "forwarded"`) {
		t.Errorf("New with key.scheme header: %v, want an error naming key.scheme and the value", err)
	}
}
