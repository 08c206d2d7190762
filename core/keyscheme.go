package core

import (
	"fmt"
	"net/http"
)

// The scheme in the cache key (key.scheme). A key is scheme, host and URI; the scheme comes
// from r.TLS, set by Traefik when the connection to its entry point is TLS. Behind a proxy
// that terminates TLS in front of Traefik, every request arrives over plain HTTP, so https
// and http requests for one URL share one entry: an answer to one is served to the other,
// such as a redirect to https served to https clients (a loop) or a page with http:// links
// served over https. key.scheme: forwarded takes the scheme from X-Forwarded-Proto instead,
// which Traefik's entry point keeps only from peers listed in its
// forwardedHeaders.trustedIPs and otherwise sets from the connection itself.
const (
	// KeySchemeTLS takes the key's scheme from the connection (r.TLS): the default.
	KeySchemeTLS = "tls"
	// KeySchemeForwarded takes it from X-Forwarded-Proto: "https" is https, anything else
	// (none included) is http.
	KeySchemeForwarded = "forwarded"
)

// validateKeyScheme checks key.scheme.
func validateKeyScheme(v string) error {
	switch v {
	case "", KeySchemeTLS, KeySchemeForwarded:
		return nil
	}
	return fmt.Errorf("%w: key.scheme: %q must be %q or %q", ErrSettings, v, KeySchemeTLS, KeySchemeForwarded)
}

// forwardedScheme is the handler Traefik is given with key.scheme: forwarded, in front of
// everything else: it makes r.TLS say what X-Forwarded-Proto says, so that every key Weir
// builds (the hit path's, the general path's, a partition's, a refusal's stale lookup, a
// PURGE's) carries the scheme the client used. The default keeps Front without it, so the
// hit path pays nothing for the option.
//
// The request given on is a shallow copy when the two disagree, never r changed in place;
// what follows Weir (later middlewares, the service) sees the copy: for https, a TLS state
// with nothing in it (no version, no peer certificates); for http, none.
type forwardedScheme struct {
	// front is Weir's own handler (Front without this), never the origin.
	front http.Handler
}

// ServeHTTP serves r, or its copy with the forwarded scheme, through front.
func (f *forwardedScheme) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	https := false
	if v := r.Header["X-Forwarded-Proto"]; len(v) > 0 && v[0] == "https" {
		https = true
	}
	if https == (r.TLS != nil) {
		f.front.ServeHTTP(w, r)
		return
	}
	c := new(http.Request)
	*c = *r
	c.TLS = nil
	if https {
		c.TLS = tlsSeen
	}
	f.front.ServeHTTP(w, c)
}
