package testmod

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/traefik/yaegi/interp"
	"github.com/traefik/yaegi/stdlib"
	"gopkg.in/yaml.v3"
)

// manifest is the plugin's .traefik.yml as Traefik and its plugin catalog read it
// (traefik/v3 pkg/plugins, Manifest).
type manifest struct {
	DisplayName string                 `yaml:"displayName"`
	Type        string                 `yaml:"type"`
	Import      string                 `yaml:"import"`
	BasePkg     string                 `yaml:"basePkg"`
	Summary     string                 `yaml:"summary"`
	IconPath    string                 `yaml:"iconPath"`
	TestData    map[string]interface{} `yaml:"testData"`
}

// catalogNewWithin is how long the catalog gives New with testData.
const catalogNewWithin = 10 * time.Second

// TestCatalog does what the plugin catalog does with a release of Weir: it reads
// .traefik.yml, imports the plugin into Yaegi v0.16.1 as Traefik does (GOPATH mode, the
// standard library's symbols), calls CreateConfig, decodes testData onto it as Traefik
// decodes a middleware's section, and calls New, which must succeed within 10s with no
// outside service; the handler then serves a request.
func TestCatalog(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatalf("%v", err)
	}
	data, err := os.ReadFile(filepath.Join(root, ".traefik.yml"))
	if err != nil {
		t.Fatalf("%v", err)
	}
	var m manifest
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatalf(".traefik.yml: %v", err)
	}
	const module = "github.com/weirproxy/weir"
	if m.Type != "middleware" || m.Import != module || m.DisplayName == "" || m.Summary == "" {
		t.Errorf(".traefik.yml: type %q, import %q, displayName %q, summary %q; want a middleware importing %s, named and summarised",
			m.Type, m.Import, m.DisplayName, m.Summary, module)
	}
	if len(m.TestData) == 0 {
		t.Errorf(".traefik.yml: no testData")
	}
	checkIcon(t, root, m.IconPath)
	if _, err := os.Stat(filepath.Join(root, "LICENSE")); err != nil {
		t.Errorf("no LICENSE: %v", err)
	}
	if _, ok := m.TestData["store"]; ok {
		t.Errorf(".traefik.yml: testData has a store section: the catalog runs it with no Redis")
	}

	// GOPATH mode, as Traefik loads a plugin: the module at its import path.
	gopath := t.TempDir()
	dir := filepath.Join(gopath, "src", filepath.FromSlash(module))
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatalf("%v", err)
	}
	if err := os.Symlink(root, dir); err != nil {
		t.Fatalf("%v", err)
	}
	var stderr bytes.Buffer
	i := interp.New(interp.Options{GoPath: gopath, Env: os.Environ(), Stderr: &stderr})
	if err := i.Use(stdlib.Symbols); err != nil {
		t.Fatalf("load symbols: %v", err)
	}
	began := time.Now()
	if _, err := i.Eval(fmt.Sprintf("import %q", m.Import)); err != nil {
		t.Fatalf("failed to import plugin code %q: %v", m.Import, err)
	}
	t.Logf("import: %v", time.Since(began).Round(time.Millisecond))
	basePkg := m.BasePkg
	if basePkg == "" {
		basePkg = strings.ReplaceAll(path.Base(m.Import), "-", "_")
	}
	fnNew, err := i.Eval(basePkg + ".New")
	if err != nil {
		t.Fatalf("failed to eval New: %v", err)
	}
	fnCreateConfig, err := i.Eval(basePkg + ".CreateConfig")
	if err != nil {
		t.Fatalf("failed to eval CreateConfig: %v", err)
	}
	results := fnCreateConfig.Call(nil)
	if len(results) != 1 {
		t.Fatalf("CreateConfig returned %d values, want 1", len(results))
	}
	cfg := results[0]
	if err := decodePlugin(m.TestData, cfg.Interface()); err != nil {
		t.Fatalf("testData: %v", err)
	}

	type built struct {
		handler http.Handler
		err     error
	}
	done := make(chan built, 1)
	began = time.Now()
	go func() {
		next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Cache-Control", "max-age=60")
			fmt.Fprint(w, "from the origin")
		})
		args := []reflect.Value{reflect.ValueOf(context.Background()), reflect.ValueOf(next), cfg, reflect.ValueOf("weir-catalog")}
		out := fnNew.Call(args)
		var b built
		if e := out[1].Interface(); e != nil {
			b.err, _ = e.(error)
			if b.err == nil {
				b.err = fmt.Errorf("invalid error type: %T", e)
			}
		} else if b.handler, _ = out[0].Interface().(http.Handler); b.handler == nil {
			b.err = fmt.Errorf("invalid handler type: %T", out[0].Interface())
		}
		done <- b
	}()
	var b built
	select {
	case b = <-done:
	case <-time.After(catalogNewWithin):
		t.Fatalf("New with testData hangs: no answer within %v", catalogNewWithin)
	}
	if b.err != nil {
		t.Fatalf("New with testData: %v\n%s", b.err, stderr.String())
	}
	t.Logf("New: %v", time.Since(began).Round(time.Millisecond))
	for _, want := range []string{"fwd=uri-miss", "hit"} {
		rec := httptest.NewRecorder()
		b.handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://catalog.test/page", nil))
		if rec.Code != http.StatusOK || !strings.Contains(rec.Header().Get("Cache-Status"), want) {
			t.Errorf("GET /page: %d, Cache-Status %q; want 200 with %s", rec.Code, rec.Header().Get("Cache-Status"), want)
		}
	}
}

// checkIcon checks that iconPath names a small PNG or SVG in the repository.
func checkIcon(t *testing.T, root, iconPath string) {
	t.Helper()
	if iconPath == "" {
		t.Errorf(".traefik.yml: no iconPath")
		return
	}
	icon, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(iconPath)))
	if err != nil {
		t.Errorf(".traefik.yml: iconPath: %v", err)
		return
	}
	png := bytes.HasPrefix(icon, []byte("\x89PNG\r\n\x1a\n"))
	svg := strings.HasSuffix(iconPath, ".svg") && bytes.Contains(icon, []byte("<svg"))
	if !png && !svg || len(icon) > 100<<10 {
		t.Errorf(".traefik.yml: iconPath %s: %d bytes, PNG %t, SVG %t; want a PNG or SVG under 100 KiB", iconPath, len(icon), png, svg)
	}
}
