package e2e

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/weirproxy/weir/internal/fixture"
)

// ModuleName is Weir's module path: where Traefik looks for the plugin under
// plugins-local/src/ and what the static configuration names.
const ModuleName = fixture.Module

// ProviderModuleName is the provider plugin's module name in Traefik's static configuration:
// its directory in the same tree, where its own .traefik.yml is.
const ProviderModuleName = ModuleName + "/provider"

// fallbackManifest stands in for .traefik.yml while the repository has none, so the harness
// can load the plugin at all; Traefik refuses a local plugin without a manifest.
const fallbackManifest = `displayName: Weir
type: middleware
import: github.com/weirproxy/weir
summary: Origin-protecting HTTP cache.
testData: {}
`

// RepoRoot finds the repository by walking up from the working directory to the go.mod
// that declares Weir's module.
func RepoRoot() (string, error) { return fixture.Root() }

// CopyPlugin lays out the plugin source of the repository at root where Traefik's local
// plugin mode reads it: workDir/plugins-local/src/<module>/. It copies what Traefik loads and
// nothing else: go.mod, go.sum, .traefik.yml, the root package's and core/'s non-test .go
// files (testdata skipped), provider/'s non-test .go files and its .traefik.yml, and vendor/.
func CopyPlugin(root, workDir string) error {
	dst := filepath.Join(workDir, "plugins-local", "src", filepath.FromSlash(ModuleName))
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("copy plugin: %w", err)
	}
	for _, name := range []string{"go.mod", "go.sum", ".traefik.yml"} {
		err := copyFile(filepath.Join(root, name), filepath.Join(dst, name))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("copy plugin: %w", err)
		}
	}
	if _, err := os.Stat(filepath.Join(dst, ".traefik.yml")); errors.Is(err, fs.ErrNotExist) {
		if err := os.WriteFile(filepath.Join(dst, ".traefik.yml"), []byte(fallbackManifest), 0o644); err != nil {
			return fmt.Errorf("copy plugin: manifest: %w", err)
		}
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return fmt.Errorf("copy plugin: %w", err)
	}
	for _, e := range entries {
		if e.Type().IsRegular() && isPluginSource(e.Name()) {
			if err := copyFile(filepath.Join(root, e.Name()), filepath.Join(dst, e.Name())); err != nil {
				return fmt.Errorf("copy plugin: %w", err)
			}
		}
	}
	if err := copyTree(filepath.Join(root, "core"), filepath.Join(dst, "core"), isPluginSource); err != nil {
		return fmt.Errorf("copy plugin: core: %w", err)
	}
	// The provider plugin, loaded from the same tree under its own module name
	// (ProviderModuleName): its package and its manifest.
	providerFiles := func(name string) bool { return isPluginSource(name) || name == ".traefik.yml" }
	if err := copyTree(filepath.Join(root, "provider"), filepath.Join(dst, "provider"), providerFiles); err != nil {
		return fmt.Errorf("copy plugin: provider: %w", err)
	}
	everything := func(string) bool { return true }
	if err := copyTree(filepath.Join(root, "vendor"), filepath.Join(dst, "vendor"), everything); err != nil {
		return fmt.Errorf("copy plugin: vendor: %w", err)
	}
	return nil
}

func isPluginSource(name string) bool {
	return strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go")
}

// copyTree copies the regular files under src that keep accepts, skipping testdata
// directories. A missing src copies nothing.
func copyTree(src, dst string, keep func(name string) bool) error {
	if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !keep(d.Name()) {
			return nil
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		return copyFile(path, filepath.Join(dst, rel))
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
