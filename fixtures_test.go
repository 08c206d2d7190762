package weir

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/weirproxy/weir/internal/fixture"
)

// The configurations of testdata/ (testdata/README.md) decode into Config as Traefik decodes
// them, and New accepts each.

// otherFields are the keys of Weir's section that labelFields leaves out, as the fuzz test
// must: the store's, whose url dials a server, budgets.shared, which needs it, and the
// files New reads.
// key.queryDrop, a list, is decoded apart.
var otherFields = []labelField{
	{"store.url", func(c *Config, v string) { c.Store.URL = v }},
	{"store.keyPrefix", func(c *Config, v string) { c.Store.KeyPrefix = v }},
	{"store.nearCache", func(c *Config, v string) { c.Store.NearCache = v }},
	{"budgets.shared", func(c *Config, v string) { c.Budgets.Shared = v }},
	{"private.shared", func(c *Config, v string) { c.Private.Shared = v }},
	// Files, read when the middleware is built.
	{"store.urlFile", func(c *Config, v string) { c.Store.URLFile = v }},
	{"admin.tokenFile", func(c *Config, v string) { c.Admin.TokenFile = v }},
	{"private.secretFile", func(c *Config, v string) { c.Private.SecretFile = v }},
}

// listField is a list of Weir's section, and how to set it.
type listField struct {
	name string
	set  func(c *Config, list []string)
}

// listFields are the lists of Weir's section.
var listFields = []listField{
	{"key.queryDrop", func(c *Config, list []string) { c.Key.QueryDrop = list }},
	{"cache.paths", func(c *Config, list []string) { c.Cache.Paths = list }},
	{"cache.ttls", func(c *Config, list []string) { c.Cache.TTLs = list }},
	{"breaker.overrides", func(c *Config, list []string) { c.Breaker.Overrides = list }},
	{"breaker.paths", func(c *Config, list []string) { c.Breaker.Paths = list }},
	{"admin.allow", func(c *Config, list []string) { c.Admin.Allow = list }},
	{"admin.hosts", func(c *Config, list []string) { c.Admin.Hosts = list }},
	{"budgets.exempt", func(c *Config, list []string) { c.Budgets.Exempt = list }},
	{"admission.protect", func(c *Config, list []string) { c.Admission.Protect = list }},
	// pacing is a list at the top of Weir's section, not in a section of its own.
	{"pacing", func(c *Config, list []string) { c.Pacing = list }},
	{"warm.paths", func(c *Config, list []string) { c.Warm.Paths = list }},
	{"warm.hosts", func(c *Config, list []string) { c.Warm.Hosts = list }},
	{"private.paths", func(c *Config, list []string) { c.Private.Paths = list }},
}

// decodeConfig decodes Weir's section of a middleware, as Traefik hands it over, into a
// Config from CreateConfig, as Traefik does: keys matched without regard to case, values
// strings, and for the lists (listFields) a list, into which a label's comma-separated string
// is split. It returns the keys it set, as labelFields and otherFields name them. An unknown
// key, or a value of the wrong kind, is an error naming it: Traefik would ignore the key,
// but a fixture that misspells one must fail.
func decodeConfig(section map[string]interface{}) (*Config, []string, error) {
	c := CreateConfig()
	var set []string
	for sec, v := range section {
		if lf, ok := findList(sec); ok {
			list, err := stringList(v)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", sec, err)
			}
			lf.set(c, list)
			set = append(set, lf.name)
			continue
		}
		keys, ok := v.(map[string]interface{})
		if !ok {
			return nil, nil, fmt.Errorf("%s: a section of keys, not %v", sec, v)
		}
		for key, value := range keys {
			name := sec + "." + key
			if lf, ok := findList(name); ok {
				list, err := stringList(value)
				if err != nil {
					return nil, nil, fmt.Errorf("%s: %w", name, err)
				}
				lf.set(c, list)
				set = append(set, lf.name)
				continue
			}
			f, ok := findField(name)
			if !ok {
				return nil, nil, fmt.Errorf("%s: not a key of Weir's", name)
			}
			s, ok := value.(string)
			if !ok {
				return nil, nil, fmt.Errorf("%s: a string, not %v", name, value)
			}
			f.set(c, s)
			set = append(set, f.name)
		}
	}
	return c, set, nil
}

// findList is the list field called name, without regard to case.
func findList(name string) (listField, bool) {
	for _, lf := range listFields {
		if strings.EqualFold(lf.name, name) {
			return lf, true
		}
	}
	return listField{}, false
}

// findField is the field called name, without regard to case.
func findField(name string) (labelField, bool) {
	for _, fields := range [][]labelField{labelFields, otherFields} {
		for _, f := range fields {
			if strings.EqualFold(f.name, name) {
				return f, true
			}
		}
	}
	return labelField{}, false
}

// stringList reads a list of strings: a YAML sequence, or a label's comma-separated string.
func stringList(v interface{}) ([]string, error) {
	switch v := v.(type) {
	case string:
		return strings.Split(v, ","), nil
	case []interface{}:
		out := make([]string, 0, len(v))
		for _, item := range v {
			s, ok := item.(string)
			if !ok {
				return nil, fmt.Errorf("a list of strings, not %v", v)
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("a list of strings, not %v", v)
}

// newFromSection decodes section and builds the middleware name from it.
func newFromSection(t *testing.T, name string, section map[string]interface{}) (*Config, []string) {
	t.Helper()
	c, set, err := decodeConfig(section)
	if err != nil {
		t.Fatalf("%s: decode: %v", name, err)
	}
	if _, err := New(context.Background(), http.NotFoundHandler(), c, "fixture-"+name); err != nil {
		t.Fatalf("%s: New: %v", name, err)
	}
	return c, set
}

// fixtureMiddlewares lists Weir's middlewares of every configuration fixture matching
// pattern.
func fixtureMiddlewares(t *testing.T, pattern string) map[string]map[string]map[string]interface{} {
	t.Helper()
	names, err := fixture.Names(pattern)
	if err != nil || len(names) == 0 {
		t.Fatalf("fixtures %s: %v, %d found", pattern, err, len(names))
	}
	out := map[string]map[string]map[string]interface{}{}
	for _, name := range names {
		mws, err := fixture.Middlewares(name, "weir")
		if err != nil {
			t.Fatalf("%v", err)
		}
		if len(mws) == 0 {
			t.Errorf("%s: no Weir middleware", name)
		}
		out[name] = mws
	}
	return out
}

// TestDynamicFixtures: each Weir middleware of testdata/dynamic decodes and New builds it;
// every-setting.yml gives every key but store.url and the files (store.urlFile,
// admin.tokenFile), which stand for values it gives.
func TestDynamicFixtures(t *testing.T) {
	for file, mws := range fixtureMiddlewares(t, "dynamic/*.yml") {
		for mw, section := range mws {
			_, set := newFromSection(t, file+"/"+mw, section)
			if file != "dynamic/every-setting.yml" {
				continue
			}
			given := map[string]bool{}
			for _, k := range set {
				given[k] = true
			}
			for _, fields := range [][]labelField{labelFields, otherFields} {
				for _, f := range fields {
					// store.url dials a server; budgets.shared and private.shared need it; a file stands for a
					// value given here.
					if !given[f.name] && f.name != "store.url" && f.name != "budgets.shared" && f.name != "store.urlFile" && f.name != "admin.tokenFile" &&
						f.name != "private.shared" && f.name != "private.secretFile" {
						t.Errorf("%s: %s is not given", file, f.name)
					}
				}
			}
			for _, lf := range listFields {
				if !given[lf.name] {
					t.Errorf("%s: %s is not given", file, lf.name)
				}
			}
		}
	}
}

// TestLabelFixtures: each Weir middleware of testdata/labels decodes and New builds it, and
// a label set gives the same settings as the dynamic configuration of the same name.
func TestLabelFixtures(t *testing.T) {
	for file, mws := range fixtureMiddlewares(t, "labels/*.txt") {
		yml := "dynamic/" + strings.TrimSuffix(strings.TrimPrefix(file, "labels/"), ".txt") + ".yml"
		yamlMws, err := fixture.Middlewares(yml, "weir")
		if err != nil {
			t.Fatalf("%s has no counterpart: %v", file, err)
		}
		for mw, section := range mws {
			fromLabels, _ := newFromSection(t, file+"/"+mw, section)
			fromYAML, _, err := decodeConfig(yamlMws[mw])
			if err != nil || yamlMws[mw] == nil {
				t.Fatalf("%s: middleware %s: %v", yml, mw, err)
			}
			got, err := fromLabels.settings()
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			want, err := fromYAML.settings()
			if err != nil {
				t.Fatalf("%s: %v", yml, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: middleware %s: settings\n%+v\nwant those of %s\n%+v", file, mw, got, yml, want)
			}
		}
	}
}

func TestDecodeConfigRefuses(t *testing.T) {
	tests := []struct {
		desc    string
		section map[string]interface{}
		want    string
	}{
		{desc: "unknown key", section: map[string]interface{}{"cache": map[string]interface{}{"maxSise": "1MiB"}}, want: "cache.maxSise"},
		{desc: "unknown section", section: map[string]interface{}{"caches": map[string]interface{}{"maxSize": "1MiB"}}, want: "caches.maxSize"},
		{desc: "a section that is a value", section: map[string]interface{}{"cache": "1MiB"}, want: "cache"},
		{desc: "a list for a string", section: map[string]interface{}{"cache": map[string]interface{}{"maxSize": []interface{}{"1MiB"}}}, want: "cache.maxSize"},
		{desc: "a list of lists", section: map[string]interface{}{"key": map[string]interface{}{"queryDrop": []interface{}{[]interface{}{"a"}}}}, want: "key.queryDrop"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			c, _, err := decodeConfig(tc.section)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("decodeConfig = %+v, %v; want an error naming %s", c, err, tc.want)
			}
		})
	}
}
