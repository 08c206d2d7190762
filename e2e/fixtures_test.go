package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/weirproxy/weir/internal/fixture"
)

// fixtureOrigin is where the services of testdata/dynamic point: the demo's origin. The
// test puts its own origin there.
const fixtureOrigin = "http://127.0.0.1:9000"

// pathPrefix finds a router rule's PathPrefix.
var pathPrefix = regexp.MustCompile("PathPrefix\\(`([^`]*)`\\)")

// TestDynamicFixtures hands every dynamic configuration of testdata/dynamic, as written, to
// a real Traefik beside the harness's own: Traefik must enable each router and each Weir
// middleware, read each Weir section as fixture.ParseYAML does (Traefik's API shows what it
// read), and each router must store and then serve from Weir's cache the recorded static
// asset of testdata/origin.
func TestDynamicFixtures(t *testing.T) {
	o := newOrigin(t)
	asset, err := fixture.ReadAnswer("origin/static-asset.http")
	if err != nil {
		t.Fatalf("%v", err)
	}
	// The recorded Date is the core tests' fake clock; the server sets the current one.
	asset.Header.Del("Date")
	tr := startTraefik(t, o, Dynamic{})
	names, err := fixture.Names("dynamic/*.yml")
	if err != nil || len(names) == 0 {
		t.Fatalf("fixtures: %v, %d found", err, len(names))
	}
	routers := map[string]string{} // router name: the path the test asks for
	sections := map[string]map[string]interface{}{}
	for _, name := range names {
		routes, mws := installFixture(t, tr, o, name)
		for r, p := range routes {
			routers[r] = p
		}
		for mw, s := range mws {
			sections[mw] = s
		}
	}
	// A new generation of the harness's own file: Traefik has read the fixtures beside it.
	apply(t, tr, Dynamic{})
	t.Logf("%d files: %d Weir middlewares, %d routers", len(names), len(sections), len(routers))

	for mw, want := range sections {
		var got struct {
			Status string                            `json:"status"`
			Plugin map[string]map[string]interface{} `json:"plugin"`
		}
		apiGet(t, tr, "/api/http/middlewares/"+mw+"@file", &got)
		if got.Status != "enabled" {
			t.Errorf("middleware %s: status %q, want enabled", mw, got.Status)
		}
		if g, w := flatten(got.Plugin[PluginName]), flatten(want); g != w {
			t.Errorf("middleware %s: Traefik read Weir's section as\n%s\nfixture.ParseYAML as\n%s", mw, g, w)
		}
	}
	for r, p := range routers {
		var got struct {
			Status string `json:"status"`
		}
		apiGet(t, tr, "/api/http/routers/"+r+"@file", &got)
		if got.Status != "enabled" {
			t.Errorf("router %s: status %q, want enabled", r, got.Status)
		}
		o.Handle(p, asset.ServeHTTP)
		wantMiss(t, "router "+r+": first GET "+p, get(t, tr, p), "uri-miss", true)
		second := get(t, tr, p)
		wantHit(t, "router "+r+": second GET "+p, second)
		wantReply(t, "router "+r+": second GET "+p, second, asset.Status, string(asset.Body))
		wantCount(t, o, p, 1)
	}
}

// installFixture writes the dynamic configuration fixture name into Traefik's dynamic
// directory, its services pointed at o, and returns its routers that have a path prefix,
// with the path the test asks for through each, and its Weir middlewares.
func installFixture(t *testing.T, tr *Traefik, o *Origin, name string) (map[string]string, map[string]map[string]interface{}) {
	t.Helper()
	data, err := fixture.Read(name)
	if err != nil {
		t.Fatalf("%v", err)
	}
	doc, err := fixture.ParseYAML(data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	mws, err := fixture.YAMLMiddlewares(doc, PluginName)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	text := strings.ReplaceAll(string(data), fixtureOrigin, o.URL)
	dst := filepath.Join(tr.dynDir, "fixture-"+path.Base(name))
	if err := os.WriteFile(dst, []byte(text), 0o644); err != nil {
		t.Fatalf("%v", err)
	}
	routes := map[string]string{}
	httpConf, _ := doc["http"].(map[string]interface{})
	rs, _ := httpConf["routers"].(map[string]interface{})
	for r, v := range rs {
		rule, _ := v.(map[string]interface{})["rule"].(string)
		if m := pathPrefix.FindStringSubmatch(rule); m != nil {
			routes[r] = strings.TrimSuffix(m[1], "/") + "/fixture-asset.css"
		}
	}
	return routes, mws
}

// apiGet decodes the JSON that Traefik's API answers for path into v.
func apiGet(t *testing.T, tr *Traefik, path string, v interface{}) {
	t.Helper()
	status, body, err := tr.get(tr.APIURL + path)
	if err != nil || status != http.StatusOK {
		t.Fatalf("GET %s: %d %v: %s", path, status, err, short(string(body)))
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, short(string(body)))
	}
}

// flatten writes a decoded configuration as sorted "path = value" lines, keys without
// regard to case, and a value that reads as a number written as that number: Traefik hands
// a plugin a YAML float as "0.600000", which Weir reads as ParseYAML's "0.6".
func flatten(v interface{}) string {
	var lines []string
	var walk func(prefix string, v interface{})
	walk = func(prefix string, v interface{}) {
		switch v := v.(type) {
		case map[string]interface{}:
			for k, x := range v {
				walk(prefix+"."+strings.ToLower(k), x)
			}
		case []interface{}:
			for i, x := range v {
				walk(fmt.Sprintf("%s[%d]", prefix, i), x)
			}
		default:
			s := fmt.Sprint(v)
			if f, err := strconv.ParseFloat(s, 64); err == nil {
				s = strconv.FormatFloat(f, 'g', -1, 64)
			}
			lines = append(lines, prefix+" = "+s)
		}
	}
	walk("", v)
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
