package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// LocalPlugin is a further middleware plugin Traefik loads beside Weir in local plugin mode,
// such as a reference plugin a benchmark measures Weir against.
type LocalPlugin struct {
	// Alias is the name it is declared under (experimental.localPlugins.<Alias>), and so the
	// key under a middleware's `plugin`.
	Alias string
	// ModuleName is its module path: where it is laid out under plugins-local/src/.
	ModuleName string
	// Dir holds its source: go.mod, .traefik.yml and the package's .go files, copied as they
	// are (test files left out; subdirectories are not read).
	Dir string
}

// copyLocalPlugins lays out each plugin of ps under workDir/plugins-local/src/<module>/.
func copyLocalPlugins(ps []LocalPlugin, workDir string) error {
	for _, p := range ps {
		if p.Alias == "" || p.ModuleName == "" || p.Dir == "" {
			return fmt.Errorf("local plugin %+v: Alias, ModuleName and Dir are required", p)
		}
		if p.Alias == PluginName || p.Alias == ProviderAlias {
			return fmt.Errorf("local plugin %s: the alias is Weir's", p.Alias)
		}
		entries, err := os.ReadDir(p.Dir)
		if err != nil {
			return fmt.Errorf("local plugin %s: %w", p.Alias, err)
		}
		dst := filepath.Join(workDir, "plugins-local", "src", filepath.FromSlash(p.ModuleName))
		for _, e := range entries {
			name := e.Name()
			if !e.Type().IsRegular() || !(name == "go.mod" || name == "go.sum" || name == ".traefik.yml" || isPluginSource(name)) {
				continue
			}
			if err := copyFile(filepath.Join(p.Dir, name), filepath.Join(dst, name)); err != nil {
				return fmt.Errorf("local plugin %s: %w", p.Alias, err)
			}
		}
		// Traefik refuses a local plugin without its manifest: say so before it starts.
		if _, err := os.Stat(filepath.Join(dst, ".traefik.yml")); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				err = fmt.Errorf("%s has no .traefik.yml", p.Dir)
			}
			return fmt.Errorf("local plugin %s: %w", p.Alias, err)
		}
	}
	return nil
}

// localPluginsStatic is what declares ps under experimental.localPlugins, indented to follow
// Weir's own entry in staticConfig.
func localPluginsStatic(ps []LocalPlugin) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "\n    %s:\n      moduleName: %s", p.Alias, p.ModuleName)
	}
	return b.String()
}
