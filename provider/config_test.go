package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/weirproxy/weir"
)

// presetToken is a token as long as New requires.
const presetToken = "provider-test-token-24-chars"

// adminPreset is a preset whose admin is on: a path and who may use it, as Traefik hands
// the static configuration over.
func adminPreset() interface{} {
	return map[string]interface{}{"admin": map[string]interface{}{"path": "/_weir", "token": presetToken, "allow": []interface{}{"127.0.0.1/32"}}}
}

// hostsPreset is adminPreset with admin.hosts, as a label gives it (comma-separated).
func hostsPreset() interface{} {
	return map[string]interface{}{"admin": map[string]interface{}{"path": "/_weir", "token": presetToken, "hosts": "Ops.Example.com, ops.internal"}}
}

// apiPreset is a preset with eight origin slots.
func apiPreset() interface{} {
	return map[string]interface{}{"limiter": map[string]interface{}{"maxConcurrent": "8"}}
}

// section1 is a preset of one setting, as Traefik hands it over.
func section1(name, field string, v interface{}) map[string]interface{} {
	return map[string]interface{}{name: map[string]interface{}{field: v}}
}

func TestBuildPublishesPresetsAsPluginMiddlewares(t *testing.T) {
	tests := []struct {
		desc      string
		alias     string
		wantAlias string
	}{
		{desc: "default alias", alias: "", wantAlias: "weir"},
		{desc: "alias set", alias: "cache", wantAlias: "cache"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			c := &Config{Presets: map[string]interface{}{"weir-default": "", "weir-api": apiPreset()}, Middleware: tc.alias}
			conf, err := Build(c)
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			if conf.HTTP == nil || len(conf.HTTP.Middlewares) != 2 {
				t.Fatalf("Build: got %+v, want two middlewares", conf.HTTP)
			}
			if len(conf.HTTP.Routers) != 0 {
				t.Errorf("routers = %v, want none without admin", conf.HTTP.Routers)
			}
			mw := conf.HTTP.Middlewares["weir-api"]
			if mw == nil || mw.Plugin[tc.wantAlias] == nil {
				t.Fatalf("weir-api: got %+v, want a plugin section under %q", mw, tc.wantAlias)
			}
			limiter, _ := mw.Plugin[tc.wantAlias]["limiter"].(map[string]interface{})
			if got := limiter["maxConcurrent"]; got != "8" {
				t.Errorf("weir-api limiter.maxConcurrent = %v, want \"8\"", got)
			}
			if mw := conf.HTTP.Middlewares["weir-default"]; mw == nil || mw.Plugin[tc.wantAlias] == nil {
				t.Errorf("weir-default: got %+v, want an empty preset published", mw)
			}
		})
	}
}

// TestPublishedPresetDecodesToTheSameConfig checks the round trip Traefik makes: the
// published JSON decoded back onto weir.Config is the preset as written, whatever the case
// of its names and however its lists and leaves were written.
func TestPublishedPresetDecodesToTheSameConfig(t *testing.T) {
	raw := map[string]interface{}{
		"key":     map[string]interface{}{"QueryDrop": []interface{}{"utm_source", "utm_medium"}},
		"breaker": map[string]interface{}{"overrides": "api.example.com: failureRatio=0.3", "minRequests": 20},
		"cache":   map[string]interface{}{"maxSize": "16MiB", "allowPurge": false},
		"limiter": map[string]interface{}{"maxconcurrent": "8"},
		"pacing":  []string{"feeds.example.com=3/10s"},
		"admin":   "",
	}
	want := weir.CreateConfig()
	want.Key.QueryDrop = []string{"utm_source", "utm_medium"}
	want.Breaker.Overrides = []string{"api.example.com: failureRatio=0.3"}
	want.Breaker.MinRequests = "20"
	want.Cache.MaxSize = "16MiB"
	want.Cache.AllowPurge = "false"
	want.Limiter.MaxConcurrent = "8"
	want.Pacing = []string{"feeds.example.com=3/10s"}
	conf, err := Build(&Config{Presets: map[string]interface{}{"p": raw}})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	data, err := json.Marshal(conf.HTTP.Middlewares["p"].Plugin["weir"])
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	got := weir.CreateConfig()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(got); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decoded preset = %+v, want %+v", got, want)
	}
}

func TestBuildAdminRouter(t *testing.T) {
	tests := []struct {
		desc  string
		admin *AdminConfig
		hosts bool
		want  dynamicRouter
	}{
		{
			desc:  "rule and entry point given",
			admin: &AdminConfig{Preset: "weir-default", Rule: "Host(`ops.example.com`) && PathPrefix(`/_weir`)", EntryPoint: "web"},
			want:  dynamicRouter{rule: "Host(`ops.example.com`) && PathPrefix(`/_weir`)", entryPoints: "web"},
		},
		{
			desc:  "rule from the preset's admin.path, every entry point",
			admin: &AdminConfig{Preset: "weir-default"},
			want:  dynamicRouter{rule: "PathPrefix(`/_weir`)"},
		},
		{
			desc:  "admin.hosts narrows the rule from admin.path",
			admin: &AdminConfig{Preset: "weir-default"},
			hosts: true,
			want:  dynamicRouter{rule: "(Host(`ops.example.com`) || Host(`ops.internal`)) && (PathPrefix(`/_weir`))"},
		},
		{
			desc:  "admin.hosts narrows a rule given",
			admin: &AdminConfig{Preset: "weir-default", Rule: "PathPrefix(`/_weir`) && ClientIP(`10.0.0.0/8`)"},
			hosts: true,
			want:  dynamicRouter{rule: "(Host(`ops.example.com`) || Host(`ops.internal`)) && (PathPrefix(`/_weir`) && ClientIP(`10.0.0.0/8`))"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			preset := adminPreset()
			if tc.hosts {
				preset = hostsPreset()
			}
			conf, err := Build(&Config{Presets: map[string]interface{}{"weir-default": preset}, Admin: tc.admin})
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			r := conf.HTTP.Routers[AdminRouterName]
			if r == nil {
				t.Fatalf("routers = %v, want %s", conf.HTTP.Routers, AdminRouterName)
			}
			got := dynamicRouter{rule: r.Rule, entryPoints: strings.Join(r.EntryPoints, ",")}
			if got != tc.want {
				t.Errorf("router = %+v, want %+v", got, tc.want)
			}
			if r.Service != AdminService || len(r.Middlewares) != 1 || r.Middlewares[0] != "weir-default" {
				t.Errorf("router service %q middlewares %v, want %q and [weir-default]", r.Service, r.Middlewares, AdminService)
			}
		})
	}
}

// dynamicRouter is what TestBuildAdminRouter compares of a router.
type dynamicRouter struct {
	rule        string
	entryPoints string
}

func TestBuildErrorNamesPresetAndField(t *testing.T) {
	bad := section1("limiter", "maxConcurrent", "lots")
	noAccess := section1("admin", "path", "/_weir")
	tests := []struct {
		desc string
		c    *Config
		want []string
	}{
		{desc: "no presets", c: &Config{}, want: []string{"presets: none given"}},
		{desc: "nil block", c: nil, want: []string{"presets: none given"}},
		{desc: "bad count", c: &Config{Presets: map[string]interface{}{"weir-api": bad, "weir-default": nil}},
			want: []string{"presets.weir-api:", "limiter.maxConcurrent", `"lots"`}},
		{desc: "admin without access, as New refuses it", c: &Config{Presets: map[string]interface{}{"weir-default": noAccess}},
			want: []string{"presets.weir-default:", "admin.path", "needs admin.token"}},
		{desc: "admin.allow without a token", c: &Config{Presets: map[string]interface{}{"weir-default": map[string]interface{}{
			"admin": map[string]interface{}{"path": "/_weir", "allow": "127.0.0.1"}}}},
			want: []string{"presets.weir-default:", "admin.allow: needs admin.token"}},
		{desc: "refused while New builds the engine", c: &Config{Presets: map[string]interface{}{"weir-api": map[string]interface{}{
			"admission": map[string]interface{}{"kneeInFlight": "100", "lagLimit": "5ms"}}}},
			want: []string{"presets.weir-api:", "admission.lagLimit", "5ms"}},
		{desc: "a store URL New refuses", c: &Config{Presets: map[string]interface{}{"weir-api": section1("store", "url", "ftp://cache:21")}},
			want: []string{"presets.weir-api:", "store.url", "ftp://cache:21"}},
		{desc: "name with @", c: &Config{Presets: map[string]interface{}{"weir@file": nil}},
			want: []string{"presets:", `"weir@file"`}},
		{desc: "unknown section", c: &Config{Presets: map[string]interface{}{"weir-api": section1("limitter", "maxConcurrent", "8")}},
			want: []string{"presets.weir-api: limitter: not a Weir setting"}},
		{desc: "unknown field", c: &Config{Presets: map[string]interface{}{"weir-api": section1("limiter", "maxConcurent", "8")}},
			want: []string{"presets.weir-api: limiter.maxConcurent: not a Weir setting"}},
		{desc: "a value where a section goes", c: &Config{Presets: map[string]interface{}{"weir-api": map[string]interface{}{"limiter": "8"}}},
			want: []string{"presets.weir-api: limiter:", "section"}},
		{desc: "a section where a value goes", c: &Config{Presets: map[string]interface{}{"weir-api": section1("limiter", "maxConcurrent", map[string]interface{}{"x": "1"})}},
			want: []string{"presets.weir-api: limiter.maxConcurrent:"}},
		{desc: "a preset that is a value", c: &Config{Presets: map[string]interface{}{"weir-api": "8"}},
			want: []string{"presets.weir-api:", "section"}},
		{desc: "admin preset unknown", c: &Config{Presets: map[string]interface{}{"weir-default": adminPreset()}, Admin: &AdminConfig{Preset: "nope"}},
			want: []string{"admin.preset:", `"nope"`, "weir-default"}},
		{desc: "admin preset missing", c: &Config{Presets: map[string]interface{}{"weir-default": adminPreset()}, Admin: &AdminConfig{}},
			want: []string{"admin.preset:", `""`}},
		{desc: "admin preset without admin.path", c: &Config{Presets: map[string]interface{}{"weir-default": nil}, Admin: &AdminConfig{Preset: "weir-default"}},
			want: []string{"admin.preset:", "presets.weir-default.admin.path"}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			_, err := Build(tc.c)
			if !errors.Is(err, errConfig) {
				t.Fatalf("Build: err = %v, want %v", err, errConfig)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Build: err = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

// TestBuildUsesTheMiddlewaresParser checks that a preset is refused exactly when the
// middleware's New refuses it, with the same message.
func TestBuildUsesTheMiddlewaresParser(t *testing.T) {
	bad := weir.CreateConfig()
	bad.Breaker.FailureRatio = "2"
	_, newErr := weir.New(context.Background(), nil, bad, "check-parser")
	_, buildErr := Build(&Config{Presets: map[string]interface{}{"p": section1("breaker", "failureRatio", "2")}})
	if newErr == nil || buildErr == nil {
		t.Fatalf("New err = %v, Build err = %v; want both to refuse breaker.failureRatio=2", newErr, buildErr)
	}
	if !strings.HasSuffix(buildErr.Error(), newErr.Error()) {
		t.Errorf("Build err = %q, want it to end with New's %q", buildErr, newErr)
	}
}
