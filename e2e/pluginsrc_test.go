package e2e

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPluginTreeHoldsNoTestCode: the two copies of what Traefik loads of Weir, the
// harness's (CopyPlugin) and the operators' (scripts/plugin-tree.sh), hold no test file and
// no package that imports testing, such as a test-only helper package: Traefik's local
// plugin mode reads that tree, and test code has no business there. Needs no Traefik.
func TestPluginTreeHoldsNoTestCode(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatalf("%v", err)
	}
	tests := []struct {
		desc string
		lay  func(dst string) error
	}{
		{desc: "e2e.CopyPlugin", lay: func(dst string) error { return CopyPlugin(root, dst) }},
		{desc: "scripts/plugin-tree.sh", lay: func(dst string) error {
			tree := filepath.Join(dst, "plugins-local", "src", filepath.FromSlash(ModuleName))
			out, err := exec.Command("bash", filepath.Join(root, "scripts", "plugin-tree.sh"), tree).CombinedOutput()
			if err != nil {
				t.Logf("plugin-tree.sh: %s", out)
			}
			return err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			dst := t.TempDir()
			if err := tc.lay(dst); err != nil {
				t.Fatalf("laying out the plugin: %v", err)
			}
			tree := filepath.Join(dst, "plugins-local", "src", filepath.FromSlash(ModuleName))
			for _, name := range []string{"plugin.go", "provider/.traefik.yml", "provider/provider.go", "vendor/github.com/traefik/genconf/dynamic/config.go"} {
				if _, err := os.Stat(filepath.Join(tree, filepath.FromSlash(name))); err != nil {
					t.Errorf("the tree lacks %s: %v", name, err)
				}
			}
			for _, problem := range testCodeIn(t, tree) {
				t.Errorf("%s", problem)
			}
		})
	}
}

// testCodeIn lists the test files, and the Go files importing testing, under tree outside
// vendor/.
func testCodeIn(t *testing.T, tree string) []string {
	t.Helper()
	var problems []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(tree, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(tree, path)
		if d.IsDir() {
			if rel == "vendor" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		if strings.HasSuffix(path, "_test.go") {
			problems = append(problems, rel+": a test file")
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "testing" {
				problems = append(problems, rel+": imports testing (test-only code)")
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walking %s: %v", tree, err)
	}
	return problems
}

// TestMiddlewareImportsNoGenconf: the middleware's import graph (the root package and every
// package of Weir's it reaches) never reaches github.com/traefik/genconf, which only the
// provider plugin imports. Needs no Traefik.
func TestMiddlewareImportsNoGenconf(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatalf("%v", err)
	}
	seen := map[string]bool{ModuleName: true}
	queue := []string{ModuleName}
	fset := token.NewFileSet()
	for len(queue) > 0 {
		pkg := queue[0]
		queue = queue[1:]
		dir := filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(strings.TrimPrefix(pkg, ModuleName), "/")))
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatalf("%s: %v", pkg, err)
		}
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ImportsOnly)
			if err != nil {
				t.Fatalf("%v", err)
			}
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if strings.HasPrefix(p, "github.com/traefik/genconf") {
					t.Errorf("%s (%s) imports %s: only the provider plugin may", pkg, name, p)
				}
				if strings.HasPrefix(p, ModuleName+"/") && !seen[p] {
					seen[p] = true
					queue = append(queue, p)
				}
			}
		}
	}
	if seen[ProviderModuleName] {
		t.Errorf("the middleware's packages import %s", ProviderModuleName)
	}
	t.Logf("%d packages of Weir in the middleware's import graph", len(seen))
}
