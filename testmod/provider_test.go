package testmod

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/traefik/genconf/dynamic"
	"github.com/traefik/paerser/file"
	"github.com/traefik/yaegi/interp"
	"github.com/traefik/yaegi/stdlib"
	"gopkg.in/yaml.v3"
)

// PP and _PP are Traefik's provider plugin contract (traefik/v3 pkg/plugins, providers.go),
// the symbols Traefik gives the interpreter under the same import path.
type PP interface {
	Init() error
	Provide(cfgChan chan<- json.Marshaler) error
	Stop() error
}

type _PP struct {
	IValue   interface{}
	WInit    func() error
	WProvide func(cfgChan chan<- json.Marshaler) error
	WStop    func() error
}

func (p _PP) Init() error                                 { return p.WInit() }
func (p _PP) Provide(cfgChan chan<- json.Marshaler) error { return p.WProvide(cfgChan) }
func (p _PP) Stop() error                                 { return p.WStop() }

// providerStatic is the provider's block as docs/provider.md gives it ("Enabling it"), read as
// Traefik reads its static configuration file (paerser): an empty preset arrives as an empty
// string. TestProviderBlockDocumented holds the page to it.
const providerStatic = `
providers:
  plugin:
    weirp:
      presets:
        weir-default:
          admin:
            path: /_weir
            token: "change-me-openssl-rand-hex-24"
            allow: ["127.0.0.1/32"]
        weir-api:
          limiter: {maxConcurrent: "8"}
        weir-static: {}
      admin:
        rule: "PathPrefix(` + "`/_weir`" + `)"
        entryPoint: web
        preset: weir-default
`

// staticProviders is the part of Traefik's static configuration the provider's block is in.
type staticProviders struct {
	Providers struct {
		Plugin map[string]map[string]interface{}
	}
}

// providerDoc is the page that documents the provider plugin.
const providerDoc = "../docs/provider.md"

// TestProviderBlockDocumented: docs/provider.md shows providerStatic word for word, so that the
// block TestProviderPlugin runs is the one operators copy.
func TestProviderBlockDocumented(t *testing.T) {
	doc, err := os.ReadFile(providerDoc)
	if err != nil {
		t.Fatalf("%v", err)
	}
	if !strings.Contains(string(doc), providerStatic) {
		t.Errorf("%s does not show the provider's block as providerStatic has it:%s", providerDoc, providerStatic)
	}
}

// TestProviderPlugin builds Weir's provider plugin as Traefik v3.6.12 does
// (pkg/plugins/providers.go): provider/.traefik.yml read, the package imported into Yaegi
// v0.16.1 in GOPATH mode with the standard library's and the provider contract's symbols,
// CreateConfig, the block decoded onto it as Traefik decodes it (paerser, then mapstructure),
// New through Traefik's wrapper; then it starts and stops the provider 100 times as Traefik's
// Provider does (a reader of cfgChan, Stop when the context ends) and checks the goroutine
// count is flat.
func TestProviderPlugin(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatalf("%v", err)
	}
	data, err := os.ReadFile(filepath.Join(root, "provider", ".traefik.yml"))
	if err != nil {
		t.Fatalf("%v", err)
	}
	var m manifest
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatalf("provider/.traefik.yml: %v", err)
	}
	const module = "github.com/weirproxy/weir/provider"
	if m.Type != "provider" || m.Import != module || m.DisplayName == "" || m.Summary == "" || len(m.TestData) == 0 {
		t.Errorf("provider/.traefik.yml: type %q, import %q, displayName %q, summary %q, testData %v; want a provider importing %s, named, summarised, with testData",
			m.Type, m.Import, m.DisplayName, m.Summary, m.TestData, module)
	}

	gopath := t.TempDir()
	dir := filepath.Join(gopath, "src", "github.com", "weirproxy", "weir")
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatalf("%v", err)
	}
	if err := os.Symlink(root, dir); err != nil {
		t.Fatalf("%v", err)
	}
	var stderr bytes.Buffer
	i := interp.New(interp.Options{GoPath: gopath, Env: os.Environ(), Stdout: &stderr, Stderr: &stderr})
	if err := i.Use(stdlib.Symbols); err != nil {
		t.Fatalf("load symbols: %v", err)
	}
	// Under Traefik's import path, and under this package's: Yaegi finds an interface's
	// wrapper (_PP) by the Go package path of the interface type, Traefik's own there.
	pp := map[string]reflect.Value{
		"PP":  reflect.ValueOf((*PP)(nil)),
		"_PP": reflect.ValueOf((*_PP)(nil)),
	}
	ppPath := reflect.TypeOf((*PP)(nil)).Elem().PkgPath()
	if err := i.Use(map[string]map[string]reflect.Value{
		"github.com/traefik/traefik/v3/pkg/plugins/plugins": pp,
		ppPath + "/" + path.Base(ppPath):                    pp,
	}); err != nil {
		t.Fatalf("load provider symbols: %v", err)
	}
	began := time.Now()
	if _, err := i.Eval(fmt.Sprintf("import %q", m.Import)); err != nil {
		t.Fatalf("failed to import plugin code %q: %v\n%s", m.Import, err, stderr.String())
	}
	t.Logf("import: %v", time.Since(began).Round(time.Millisecond))
	basePkg := strings.ReplaceAll(path.Base(m.Import), "-", "_")
	if _, err := i.Eval(`package wrapper

import (
	"context"

	` + basePkg + ` "` + m.Import + `"
	"github.com/traefik/traefik/v3/pkg/plugins"
)

func NewWrapper(ctx context.Context, config *` + basePkg + `.Config, name string) (plugins.PP, error) {
	p, err := ` + basePkg + `.New(ctx, config, name)
	var pv plugins.PP = p
	return pv, err
}
`); err != nil {
		if p, ok := err.(interp.Panic); ok {
			t.Logf("%s", p.Stack)
		}
		t.Fatalf("failed to eval wrapper: %v", err)
	}
	fnNew, err := i.Eval("wrapper.NewWrapper")
	if err != nil {
		t.Fatalf("failed to eval New: %v", err)
	}
	newProvider := func(block map[string]interface{}) (PP, error) {
		cfg, err := i.Eval(basePkg + ".CreateConfig()")
		if err != nil {
			return nil, fmt.Errorf("failed to eval CreateConfig: %w", err)
		}
		if err := decodePlugin(block, cfg.Interface()); err != nil {
			return nil, err
		}
		out := fnNew.Call([]reflect.Value{reflect.ValueOf(context.Background()), cfg, reflect.ValueOf("plugin-weirp")})
		if e := out[1].Interface(); e != nil {
			return nil, e.(error)
		}
		return out[0].Interface().(PP), nil
	}

	t.Run("testData", func(t *testing.T) {
		if _, err := newProvider(m.TestData); err != nil {
			t.Fatalf("New with testData: %v", err)
		}
	})

	staticFile := filepath.Join(t.TempDir(), "traefik.yml")
	if err := os.WriteFile(staticFile, []byte(providerStatic), 0o644); err != nil {
		t.Fatalf("%v", err)
	}
	var static staticProviders
	if err := file.Decode(staticFile, &static); err != nil {
		t.Fatalf("static configuration: %v", err)
	}
	block := static.Providers.Plugin["weirp"]
	// Why the provider's presets are raw values: an empty preset comes as an empty string.
	if presets, _ := block["presets"].(map[string]interface{}); presets != nil {
		t.Logf("weir-static: {} decoded by paerser as %#v", presets["weir-static"])
	}

	t.Run("publishes the presets and the admin router", func(t *testing.T) {
		p, err := newProvider(block)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		conf := provideOnce(t, p, true)
		for _, name := range []string{"weir-default", "weir-api", "weir-static"} {
			mw := conf.HTTP.Middlewares[name]
			if mw == nil || mw.Plugin["weir"] == nil {
				t.Errorf("middleware %s = %+v, want a weir plugin section", name, mw)
			}
		}
		if got := fmt.Sprint(conf.HTTP.Middlewares["weir-api"].Plugin["weir"]["limiter"]); got != "map[maxConcurrent:8]" {
			t.Errorf("weir-api limiter = %s, want map[maxConcurrent:8]", got)
		}
		r := conf.HTTP.Routers["weir-admin"]
		if r == nil || r.Rule != "PathPrefix(`/_weir`)" || r.Service != "noop@internal" || fmt.Sprint(r.EntryPoints) != "[web]" || fmt.Sprint(r.Middlewares) != "[weir-default]" {
			t.Errorf("admin router = %+v, want PathPrefix(`/_weir`) on web through weir-default to noop@internal", r)
		}
	})

	t.Run("a bad preset is refused with its name and field", func(t *testing.T) {
		bad := map[string]interface{}{"presets": map[string]interface{}{"weir-api": map[string]interface{}{"limiter": map[string]interface{}{"maxConcurrent": "lots"}}}}
		_, err := newProvider(bad)
		if err == nil || !strings.Contains(err.Error(), `presets.weir-api: weir: invalid configuration: limiter.maxConcurrent: "lots"`) {
			t.Errorf("New: err = %v, want the preset, field and value named", err)
		}
	})

	t.Run("100 restarts leave the goroutine count flat", func(t *testing.T) {
		// One start and stop first, so that whatever the interpreter starts once is counted
		// in before.
		p, err := newProvider(block)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		provideOnce(t, p, true)
		before := runtime.NumGoroutine()
		for n := 0; n < 100; n++ {
			p, err := newProvider(block)
			if err != nil {
				t.Fatalf("New %d: %v", n, err)
			}
			// Every other start is stopped before the configuration is taken.
			provideOnce(t, p, n%2 == 0)
		}
		after := runtime.NumGoroutine()
		for deadline := time.Now().Add(5 * time.Second); after > before && time.Now().Before(deadline); after = runtime.NumGoroutine() {
			time.Sleep(10 * time.Millisecond)
		}
		if after > before {
			t.Errorf("goroutines after 100 restarts = %d, want at most %d as before", after, before)
		}
		t.Logf("goroutines: %d before, %d after 100 restarts", before, after)
	})
}

// provideOnce runs p as Traefik's Provider does: Init, a reader of cfgChan, Provide, and
// Stop when the context ends. With take, it waits for the configuration and returns it;
// otherwise it stops the provider before reading anything.
func provideOnce(t *testing.T, p PP, take bool) *dynamic.Configuration {
	t.Helper()
	if err := p.Init(); err != nil {
		t.Fatalf("Init: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cfgChan := make(chan json.Marshaler)
	got := make(chan *dynamic.Configuration, 1)
	ended := make(chan error, 1)
	go func() {
		for {
			select {
			case <-ctx.Done():
				ended <- p.Stop()
				return
			case m := <-cfgChan:
				data, err := m.MarshalJSON()
				conf := &dynamic.Configuration{}
				if err == nil {
					err = json.Unmarshal(data, conf)
				}
				if err != nil {
					t.Errorf("configuration: %v", err)
				}
				got <- conf
			}
		}
	}()
	if err := p.Provide(cfgChan); err != nil {
		t.Fatalf("Provide: %v", err)
	}
	var conf *dynamic.Configuration
	if take {
		select {
		case conf = <-got:
		case <-time.After(10 * time.Second):
			t.Fatalf("Provide: nothing published: hangs")
		}
	}
	cancel()
	select {
	case err := <-ended:
		if err != nil {
			t.Errorf("Stop: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Stop: hangs")
	}
	return conf
}
