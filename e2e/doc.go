// Package e2e runs Weir inside a real Traefik, as operators run it: the plugin's source is
// laid out in Traefik's local plugin directory, Traefik interprets it with Yaegi, and requests
// travel client → Traefik → Weir → origin over loopback TCP.
//
// The package holds the harness (an origin that counts what reaches it, a Traefik process
// with a file-provider configuration that can be rewritten live, helpers to read its
// goroutine count) and, in its tests, the end-to-end behaviour that Weir promises. It is
// compiled only, never loaded by Traefik, and a Go module of its own
// (github.com/weirproxy/weir/e2e, Weir replaced by the repository beside it), so that it may
// write Traefik's dynamic configuration in Traefik's own types (github.com/traefik/genconf),
// which Weir's go.mod and vendor/ must not carry. Run it from this directory with
// GOFLAGS=-mod=mod (scripts/e2e.sh does).
//
// The Traefik binary comes from WEIR_TRAEFIK or, when unset, from scripts/build-traefik.sh.
// Without a binary the tests skip, unless WEIR_E2E=required, in which case they fail.
package e2e
