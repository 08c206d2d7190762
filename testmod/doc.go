// Package testmod holds compiled-only tests: what Traefik never loads.
//
// It is a Go module of its own (github.com/weirproxy/weir/testmod, with Weir's module
// replaced by the repository beside it), so that its tests may use libraries that Yaegi
// cannot load and that Weir's go.mod and vendor/ must not carry: Traefik fetches the
// repository and loads only the root module, and the root's `go vet ./...`, `go list ./...`
// and `go mod vendor` do not descend into a nested module. scripts/test.sh runs `go vet` and
// `go test` here with GOFLAGS=-mod=mod, after the unit tests.
//
// The tests check Weir's output against the real thing: exposition_test.go parses what
// core/metrics writes with the Prometheus text parser (github.com/prometheus/common/expfmt),
// adminpage drives the admin page in headless Chromium (github.com/chromedp/chromedp)
// through a real Traefik, compose_test.go decodes the demo's Docker labels with Traefik's own
// label parser (github.com/traefik/paerser) and the plugin decoder Traefik uses
// (github.com/mitchellh/mapstructure), and catalog_test.go loads the plugin as the plugin
// catalog does, in Yaegi (github.com/traefik/yaegi) with .traefik.yml's testData.
// democonf builds the demo's dynamic configuration from Traefik's configuration types
// (github.com/traefik/genconf) and Weir's Config.
package testmod
