package democonf

import (
	"context"
	"net/http"
	"os"
	"reflect"
	"testing"

	"github.com/weirproxy/weir"
	"gopkg.in/yaml.v3"
)

// TestDemoFixture: testdata/dynamic/demo.yml, written by hand with comments, is the
// configuration Dynamic builds from typed values.
func TestDemoFixture(t *testing.T) {
	data, err := os.ReadFile("../../testdata/dynamic/demo.yml")
	if err != nil {
		t.Fatalf("%v", err)
	}
	var fixture map[string]interface{}
	if err := yaml.Unmarshal(data, &fixture); err != nil {
		t.Fatalf("demo.yml: %v", err)
	}
	conf, err := Dynamic(Options{})
	if err != nil {
		t.Fatalf("%v", err)
	}
	built, err := Plain(conf)
	if err != nil {
		t.Fatalf("%v", err)
	}
	if !reflect.DeepEqual(fixture, built) {
		want, _ := yaml.Marshal(built)
		t.Errorf("testdata/dynamic/demo.yml differs from democonf.Dynamic; Dynamic gives:\n%s", want)
	}
}

// TestDemoStore: with a store, the Weir section carries store.url, and Weir accepts it.
func TestDemoStore(t *testing.T) {
	const url = "redis://127.0.0.1:6399/0"
	conf, err := Dynamic(Options{StoreURL: url})
	if err != nil {
		t.Fatalf("%v", err)
	}
	plugin := conf.HTTP.Middlewares["cache"].Plugin["weir"]
	store, _ := plugin["store"].(map[string]interface{})
	if store["url"] != url {
		t.Errorf("plugin.weir.store = %v, want url %s", plugin["store"], url)
	}
	if _, err := weir.New(context.Background(), http.NotFoundHandler(), Weir(Options{StoreURL: url}), "democonf-store"); err != nil {
		t.Errorf("New: %v", err)
	}
}
