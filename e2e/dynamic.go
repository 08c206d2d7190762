package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/traefik/genconf/dynamic"
)

// PluginName is the alias Weir is declared under in Traefik's static configuration
// (experimental.localPlugins.weir), and so the key under a middleware's `plugin`.
const PluginName = "weir"

// markerPrefix is the path of the marker router that tells which configuration generation
// Traefik is serving: /__weir_gen/N answers 200 once generation N is live.
const markerPrefix = "/__weir_gen/"

// Route is one Traefik router on the web entry point, forwarding to the origin.
type Route struct {
	// Name is the router's name in the file provider ("hit" becomes hit@file).
	Name string
	// Rule is the router's rule, e.g. "PathPrefix(`/hit`)" or "Host(`a.test`)".
	Rule string
	// Middleware names the Weir middleware the router uses; "" means none (bare Traefik).
	Middleware string
	// Service overrides the service; "" means the origin.
	Service string
}

// Dynamic is the part of Traefik's dynamic configuration a test controls.
type Dynamic struct {
	// Routes are the routers, in no particular order.
	Routes []Route
	// Middlewares maps a middleware name to Weir's configuration for it, as an operator would
	// write it under http.middlewares.<name>.plugin.weir. A nil or empty map is an empty
	// configuration: every setting at its default.
	Middlewares map[string]map[string]interface{}
	// Builtin maps a middleware name to one of Traefik's own middlewares (for example
	// {InFlightReq: &dynamic.InFlightReq{Amount: 16}}), for tests that compare Weir with them.
	Builtin map[string]*dynamic.Middleware
}

// originService is the name of the service that forwards to the origin.
const originService = "origin"

// document renders d as Traefik's dynamic configuration, in Traefik's own configuration
// types (github.com/traefik/genconf), with the marker router for generation gen added.
// Weir's sections stay maps: the tests write values New must refuse, too.
func (d Dynamic) document(originURL string, gen int) *dynamic.Configuration {
	routers := map[string]*dynamic.Router{
		"weir-gen": {
			Rule:        fmt.Sprintf("Path(`%s%d`)", markerPrefix, gen),
			EntryPoints: []string{"web"},
			Service:     "ping@internal",
		},
	}
	for _, r := range d.Routes {
		service := r.Service
		if service == "" {
			service = originService
		}
		router := &dynamic.Router{Rule: r.Rule, EntryPoints: []string{"web"}, Service: service}
		if r.Middleware != "" {
			router.Middlewares = []string{r.Middleware}
		}
		routers[r.Name] = router
	}
	passHostHeader := true
	httpConf := &dynamic.HTTPConfiguration{
		Routers: routers,
		Services: map[string]*dynamic.Service{
			originService: {LoadBalancer: &dynamic.ServersLoadBalancer{
				Servers:        []dynamic.Server{{URL: originURL}},
				PassHostHeader: &passHostHeader,
			}},
		},
	}
	if len(d.Middlewares)+len(d.Builtin) > 0 {
		httpConf.Middlewares = make(map[string]*dynamic.Middleware, len(d.Middlewares)+len(d.Builtin))
		for name, conf := range d.Middlewares {
			if conf == nil {
				conf = map[string]interface{}{}
			}
			httpConf.Middlewares[name] = &dynamic.Middleware{Plugin: map[string]dynamic.PluginConf{PluginName: conf}}
		}
		for name, mw := range d.Builtin {
			httpConf.Middlewares[name] = mw
		}
	}
	return &dynamic.Configuration{HTTP: httpConf}
}

// writeDynamic writes the configuration for generation gen into dir/dynamic.yml. JSON is a
// subset of the YAML Traefik parses (yaml.v3), so the file is written with encoding/json;
// the file provider reads only .yml, .yaml and .toml names. The file is renamed into place
// so the provider's watcher never reads half of it.
func writeDynamic(dir, scratch, originURL string, d Dynamic, gen int) error {
	data, err := json.MarshalIndent(d.document(originURL, gen), "", "  ")
	if err != nil {
		return fmt.Errorf("encode dynamic configuration: %w", err)
	}
	tmp := filepath.Join(scratch, fmt.Sprintf("dynamic-%d.yml", gen))
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write dynamic configuration: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "dynamic.yml")); err != nil {
		return fmt.Errorf("install dynamic configuration: %w", err)
	}
	return nil
}
