module github.com/weirproxy/weir

// go 1.21 keeps the loop-variable semantics of Yaegi v0.16.1, which runs this code in Traefik.
go 1.21

require (
	github.com/gomodule/redigo v1.9.3
	github.com/mna/redisc v1.4.0
	// Only provider/ imports it (Traefik's dynamic configuration types); the middleware never does.
	github.com/traefik/genconf v0.5.2
)
