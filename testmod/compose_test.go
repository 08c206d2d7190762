package testmod

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/traefik/paerser/flag"
	"github.com/traefik/paerser/parser"
	"github.com/weirproxy/weir"
	"gopkg.in/yaml.v3"
)

// composeFile is the Docker Compose file of the demo.
const composeFile = "../traefik-demo/docker-compose.yml"

// compose is what the test reads of a Compose file.
type compose struct {
	Services map[string]struct {
		Command []string          `yaml:"command"`
		Labels  map[string]string `yaml:"labels"`
		Volumes []string          `yaml:"volumes"`
	} `yaml:"services"`
}

// The parts of Traefik's dynamic configuration (pkg/config/dynamic) that the labels set,
// with Traefik's own field names and label tags, for paerser to decode them onto.
type (
	dynamicConfig struct {
		HTTP *httpConfig `json:"http,omitempty"`
	}
	httpConfig struct {
		Routers     map[string]*router     `json:"routers,omitempty"`
		Middlewares map[string]*middleware `json:"middlewares,omitempty"`
		Services    map[string]*service    `json:"services,omitempty"`
	}
	router struct {
		EntryPoints []string `json:"entryPoints,omitempty"`
		Middlewares []string `json:"middlewares,omitempty"`
		Service     string   `json:"service,omitempty"`
		Rule        string   `json:"rule,omitempty"`
	}
	// middleware is Traefik's Middleware with its plugin field only:
	// Plugin map[string]PluginConf, where PluginConf is map[string]any.
	middleware struct {
		Plugin map[string]map[string]interface{} `json:"plugin,omitempty"`
	}
	service struct {
		LoadBalancer *struct {
			Servers []struct {
				URL  string `json:"url,omitempty" label:"-"`
				Port string `json:"-"`
			} `json:"servers,omitempty" label-slice-as-struct:"server"`
		} `json:"loadBalancer,omitempty"`
	}
)

// staticConfig is the part of Traefik's static configuration that declares plugins.
type staticConfig struct {
	Experimental *struct {
		Plugins map[string]struct {
			ModuleName string
			Version    string
		}
		LocalPlugins map[string]struct {
			ModuleName string
		}
	}
}

// readCompose reads the demo's Compose file.
func readCompose(t *testing.T) compose {
	t.Helper()
	data, err := os.ReadFile(composeFile)
	if err != nil {
		t.Fatalf("%v", err)
	}
	var c compose
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatalf("%s: %v", composeFile, err)
	}
	return c
}

// TestComposeLabels decodes the labels of the demo's Compose file as Traefik's Docker
// provider does (pkg/config/label: paerser's parser.Decode under "traefik.http"), then the
// Weir section as Traefik's plugin loader does (pluginConfig), and checks that New accepts
// the result and that it holds what the labels say, lists given as comma-separated strings
// included.
func TestComposeLabels(t *testing.T) {
	c := readCompose(t)
	origin, ok := c.Services["origin"]
	if !ok {
		t.Fatalf("%s: no origin service", composeFile)
	}
	var conf dynamicConfig
	if err := parser.Decode(origin.Labels, &conf, parser.DefaultRootName, "traefik.http"); err != nil {
		t.Fatalf("decode labels: %v", err)
	}
	if conf.HTTP == nil {
		t.Fatalf("labels hold no traefik.http configuration")
	}
	demo := conf.HTTP.Routers["demo"]
	if demo == nil || !reflect.DeepEqual(demo.Middlewares, []string{"cache"}) {
		t.Fatalf("router demo = %+v, want one with middlewares [cache]", demo)
	}
	mw := conf.HTTP.Middlewares["cache"]
	if mw == nil || mw.Plugin["weir"] == nil {
		t.Fatalf("middleware cache = %+v, want a plugin.weir section", mw)
	}
	cfg, err := pluginConfig(mw.Plugin["weir"])
	if err != nil {
		t.Fatalf("%v", err)
	}
	// The token file is in the volume Compose mounts in Traefik's container: New reads one of
	// the test's in its place.
	tokenFile := cfg.Admin.TokenFile
	cfg.Admin.TokenFile = filepath.Join(t.TempDir(), "admin-token")
	if err := os.WriteFile(cfg.Admin.TokenFile, []byte("a-generated-token-of-32-characters\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h, err := weir.New(context.Background(), http.NotFoundHandler(), cfg, "cache@docker")
	if err != nil || h == nil {
		t.Fatalf("New = %v, %v; want a handler", h, err)
	}
	cfg.Admin.TokenFile = tokenFile

	want := weir.CreateConfig()
	want.Key.QueryDrop = []string{"utm_source", "utm_medium", "utm_campaign"}
	want.Cache.MaxSize = "64MiB"
	want.Cache.MaxEntrySize = "2MiB"
	want.Cache.DefaultTTL = "0s"
	want.Coalesce.FollowerMaxWait = "10s"
	want.Timeouts.Origin = "30s"
	want.Limiter.MaxConcurrent = "64"
	want.Limiter.MaxPerPartition = "4"
	want.Limiter.MaxQueuePerPartition = "8"
	want.Limiter.MaxQueueWait = "1s"
	want.Breaker.MinRequests = "5"
	want.Breaker.OpenFor = "3s"
	want.Breaker.Overrides = []string{"api.example.com: failureRatio=0.3", "static.example.com: openFor=10s"}
	want.Negative.TTL = "2s"
	want.Stale.IfError = "1h"
	want.Private.Paths = []string{"/account"}
	want.Private.Identity = "cookie:session"
	want.MissRate.MinMisses = "200"
	want.Store.URL = "redis://redis:6379/0"
	want.Store.KeyPrefix = "demo:"
	want.Admin.Path = "/_weir"
	want.Admin.TokenFile = "/run/secrets/weir/admin-token"
	want.Admin.Allow = []string{"127.0.0.1", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("labels decode to\n%+v\nwant\n%+v", *cfg, *want)
	}

	// Every Weir label was read: none misspelt, none at a key Config lacks (mapstructure
	// would drop it without a word).
	for label, value := range origin.Labels {
		const prefix = "traefik.http.middlewares.cache.plugin.weir."
		if !strings.HasPrefix(label, prefix) {
			continue
		}
		if got := fieldByPath(reflect.ValueOf(cfg).Elem(), strings.TrimPrefix(label, prefix)); got == "" {
			t.Errorf("label %s=%s: no such field of Config, or not set", label, value)
		}
	}
}

// fieldByPath is the value of the Config field that section.key names (matched without
// regard to case, by JSON name, as Traefik matches it), lists joined with commas; "" when
// there is no such field.
func fieldByPath(v reflect.Value, path string) string {
	for _, name := range strings.Split(path, ".") {
		if v.Kind() != reflect.Struct {
			return ""
		}
		found := false
		for i := 0; i < v.NumField(); i++ {
			tag := strings.Split(v.Type().Field(i).Tag.Get("json"), ",")[0]
			if strings.EqualFold(tag, name) {
				v = v.Field(i)
				found = true
				break
			}
		}
		if !found {
			return ""
		}
	}
	switch v.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Slice:
		return strings.Join(v.Interface().([]string), ",")
	}
	return ""
}

// TestComposePlugin checks that the Compose file's Traefik declares Weir the catalog's way,
// experimental.plugins with moduleName and version, as Traefik reads its flags (paerser's
// flag.Decode), and keeps the local plugin form beside it, commented.
func TestComposePlugin(t *testing.T) {
	c := readCompose(t)
	var args []string
	for _, a := range c.Services["traefik"].Command {
		if strings.HasPrefix(a, "--experimental.") {
			args = append(args, a)
		}
	}
	var static staticConfig
	if err := flag.Decode(args, &static); err != nil {
		t.Fatalf("decode %v: %v", args, err)
	}
	if static.Experimental == nil {
		t.Fatalf("no experimental section in %v", args)
	}
	p := static.Experimental.Plugins["weir"]
	if p.ModuleName != "github.com/weirproxy/weir" || !strings.HasPrefix(p.Version, "v") {
		t.Errorf("experimental.plugins.weir = %+v, want moduleName github.com/weirproxy/weir and a version tag", p)
	}
	if len(static.Experimental.LocalPlugins) != 0 {
		t.Errorf("experimental.localPlugins = %+v, want it commented out beside the catalog form", static.Experimental.LocalPlugins)
	}
	data, err := os.ReadFile(composeFile)
	if err != nil {
		t.Fatalf("%v", err)
	}
	for _, want := range []string{
		"# - --experimental.localPlugins.weir.moduleName=github.com/weirproxy/weir",
		"# - ..:/plugins-local/src/github.com/weirproxy/weir",
	} {
		if !strings.Contains(string(data), want) {
			t.Errorf("%s lacks the development form %q", composeFile, want)
		}
	}
	if _, ok := c.Services["redis"]; !ok {
		t.Errorf("%s: no redis service for the shared store", composeFile)
	}
}
