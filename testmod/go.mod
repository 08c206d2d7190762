// Compiled-only tests (doc.go): never loaded by Traefik, never vendored by Weir.
module github.com/weirproxy/weir/testmod

// 1.26.0 is what github.com/prometheus/common v0.73.1 asks for.
go 1.26.0

require (
	github.com/chromedp/chromedp v0.23.0
	github.com/mitchellh/mapstructure v1.5.1-0.20231216201459-8508981c8b6c
	github.com/prometheus/client_model v0.6.3
	github.com/prometheus/common v0.73.1
	github.com/traefik/genconf v0.5.2
	github.com/traefik/paerser v0.2.2
	github.com/traefik/yaegi v0.16.1
	github.com/weirproxy/weir v0.0.0
	gopkg.in/yaml.v3 v3.0.1
)

require github.com/mna/redisc v1.4.0 // indirect

require (
	github.com/BurntSushi/toml v1.4.0 // indirect
	github.com/mna/redisc v1.4.0 // indirect
)

require (
	github.com/chromedp/cdproto v0.159.0 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/gomodule/redigo v1.9.3 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/pandatix/go-abnf v0.5.3 // indirect
	github.com/weirproxy/weir/e2e v0.0.0
	google.golang.org/protobuf v1.36.12 // indirect
)

replace github.com/weirproxy/weir => ../

replace github.com/weirproxy/weir/e2e => ../e2e

// Weir's vendored redigo carries Weir's patches (patches/, scripts/vendor.sh), API included.
replace github.com/gomodule/redigo => ../vendor/github.com/gomodule/redigo
