// The end-to-end tests, a module of their own: what they import beyond Weir's own packages
// (Traefik's configuration types, github.com/traefik/genconf) must stay out of Weir's go.mod
// and vendor/, which Traefik loads. Weir is the repository beside it.
module github.com/weirproxy/weir/e2e

// go 1.21, as Weir's: the same loop-variable semantics as the code under test.
go 1.21

require (
	github.com/traefik/genconf v0.5.2
	github.com/weirproxy/weir v0.0.0
)

replace github.com/weirproxy/weir => ../
