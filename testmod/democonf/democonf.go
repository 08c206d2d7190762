// Package democonf builds the demo's Traefik dynamic configuration from typed values:
// Traefik's (github.com/traefik/genconf) and Weir's own Config, so that a misspelt key or
// option is a compile error. It lives in testmod, a module Traefik never loads, so that
// genconf never enters Weir's vendor/. testdata/dynamic/demo.yml is the same configuration
// written by hand, with comments; TestDemoFixture checks that the two agree, and
// traefik-demo/run.sh --redis writes its configuration with cmd/democonf.
package democonf

import (
	"encoding/json"
	"fmt"

	"github.com/traefik/genconf/dynamic"
	"github.com/weirproxy/weir"
	"gopkg.in/yaml.v3"
)

// Options are what the demo's configuration varies by.
type Options struct {
	// StoreURL is the Redis the cache lives in ("": Traefik's memory).
	StoreURL string
}

// Weir is the demo's Weir configuration: the protections set low, so that the tour sets them
// off with a few hundred requests.
func Weir(o Options) *weir.Config {
	c := weir.CreateConfig()
	c.Key.QueryDrop = []string{"utm_source", "utm_medium", "utm_campaign"}
	c.Cache.MaxSize = "32MiB"
	c.Cache.MaxEntrySize = "2MiB"
	c.Coalesce.LeaderMaxAge = "10s"
	c.Coalesce.FollowerMaxWait = "10s"
	c.Timeouts.Origin = "30s"
	c.Limiter.MaxPerPartition = "4"
	c.Limiter.MaxQueuePerPartition = "8"
	c.Limiter.MaxQueueWait = "1s"
	c.Breaker.MinRequests = "5"
	c.Breaker.OpenFor = "3s"
	c.Negative.TTL = "2s"
	c.Stale.IfError = "1h"
	c.MissRate.MinMisses = "200"
	// /account answers each user (the session cookie) with a page of their own.
	c.Private.Paths = []string{"/account"}
	c.Private.Identity = "cookie:session"
	c.Admin.Path = "/_weir"
	// traefik-demo/run.sh puts the demo's own token in place of this one.
	c.Admin.Token = "weir-demo-token-set-by-run-sh"
	c.Admin.Allow = []string{"127.0.0.1"}
	c.Store.URL = o.StoreURL
	return c
}

// Dynamic is the demo's dynamic configuration: every path of the web entry point through
// Weir to the origin on 127.0.0.1:9000, and the failing page's own host, so that its breaker
// (one per host) opens for it alone.
func Dynamic(o Options) (*dynamic.Configuration, error) {
	plugin, err := PluginConf(Weir(o))
	if err != nil {
		return nil, err
	}
	return &dynamic.Configuration{HTTP: &dynamic.HTTPConfiguration{
		Routers: map[string]*dynamic.Router{
			"demo": {
				Rule: "PathPrefix(`/`)", EntryPoints: []string{"web"},
				Service: "demo-origin", Middlewares: []string{"cache"},
			},
			"demo-flaky": {
				Rule: "Host(`flaky.localhost`)", EntryPoints: []string{"web"},
				Service: "demo-origin", Middlewares: []string{"cache"},
			},
		},
		Middlewares: map[string]*dynamic.Middleware{
			"cache": {Plugin: map[string]dynamic.PluginConf{"weir": plugin}},
		},
		Services: map[string]*dynamic.Service{
			"demo-origin": {LoadBalancer: &dynamic.ServersLoadBalancer{
				Servers: []dynamic.Server{{URL: "http://127.0.0.1:9000"}},
			}},
		},
	}}, nil
}

// PluginConf is c as Traefik's configuration carries a plugin's section: keys by Config's
// JSON names, unset values left out.
func PluginConf(c *weir.Config) (dynamic.PluginConf, error) {
	data, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encode weir configuration: %w", err)
	}
	var conf dynamic.PluginConf
	if err := json.Unmarshal(data, &conf); err != nil {
		return nil, fmt.Errorf("decode weir configuration: %w", err)
	}
	return conf, nil
}

// Plain is conf as plain values (maps, lists, strings), as a YAML or JSON file holds it:
// unset fields, null values and empty sections left out.
func Plain(conf *dynamic.Configuration) (map[string]interface{}, error) {
	data, err := json.Marshal(conf)
	if err != nil {
		return nil, fmt.Errorf("encode dynamic configuration: %w", err)
	}
	var plain map[string]interface{}
	if err := json.Unmarshal(data, &plain); err != nil {
		return nil, fmt.Errorf("decode dynamic configuration: %w", err)
	}
	dropEmpty(plain)
	return plain, nil
}

// dropEmpty removes null values and empty sections: genconf writes some pointer fields
// without omitempty, and encoding/json writes a struct (a section of Weir's Config with
// nothing set) even when empty.
func dropEmpty(v interface{}) {
	switch v := v.(type) {
	case map[string]interface{}:
		for k, e := range v {
			dropEmpty(e)
			if m, ok := e.(map[string]interface{}); e == nil || ok && len(m) == 0 {
				delete(v, k)
			}
		}
	case []interface{}:
		for _, e := range v {
			dropEmpty(e)
		}
	}
}

// YAML is conf as a file provider's YAML.
func YAML(conf *dynamic.Configuration) ([]byte, error) {
	plain, err := Plain(conf)
	if err != nil {
		return nil, err
	}
	return yaml.Marshal(plain)
}
