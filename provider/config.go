package provider

import (
	"fmt"
	"sort"
	"strings"

	"github.com/traefik/genconf/dynamic"
	"github.com/weirproxy/weir"
	"github.com/weirproxy/weir/core/admin"
)

// DefaultMiddleware is the alias Weir's middleware plugin is declared under
// (experimental.plugins.weir or experimental.localPlugins.weir) unless middleware says
// otherwise: the key under each published middleware's plugin section.
const DefaultMiddleware = "weir"

// AdminRouterName is the name of the admin router, published as weir-admin@plugin-<alias>.
const AdminRouterName = "weir-admin"

// AdminService is the admin router's service: Traefik's own, which answers 418 to whatever
// reaches it. The admin middleware answers every request under its admin.path before it.
const AdminService = "noop@internal"

// Config is the provider's block of static configuration, under providers.plugin.<alias>.
type Config struct {
	// Presets maps a middleware name to a whole Weir middleware configuration, as it would be
	// written under http.middlewares.<name>.plugin.weir; each is published as
	// <name>@plugin-<alias>. At least one. Raw values, not weir.Config: Traefik's static
	// configuration hands an empty preset ("weir-default: {}") over as an empty string,
	// which it cannot decode onto a struct; decodePreset reads each.
	Presets map[string]interface{} `json:"presets,omitempty"`
	// Admin is the admin router (nil: none).
	Admin *AdminConfig `json:"admin,omitempty"`
	// Middleware is the alias of Weir's middleware plugin in the static configuration
	// ("": DefaultMiddleware, "weir").
	Middleware string `json:"middleware,omitempty"`
}

// AdminConfig is the admin router: the admin page, API and metrics of one preset on a
// router of their own, so that they need no other router to live on.
type AdminConfig struct {
	// Preset names the preset whose admin the router serves; its admin section sets
	// admin.path and who may use it (admin.token, admin.allow, admin.hosts). Required.
	Preset string `json:"preset,omitempty"`
	// Rule is the router's rule ("": PathPrefix of the preset's admin.path). With the
	// preset's admin.hosts set, Host(...) of each is added to it.
	Rule string `json:"rule,omitempty"`
	// EntryPoint is the entry point the router listens on ("": every entry point).
	EntryPoint string `json:"entryPoint,omitempty"`
}

// Build checks c with the middleware's own parser (weir's Config.Check, what New runs) and
// turns it into the dynamic configuration the provider publishes: one plugin middleware per
// preset and, with admin set, the admin router.
func Build(c *Config) (*dynamic.Configuration, error) {
	if c == nil || len(c.Presets) == 0 {
		return nil, fmt.Errorf("%w: presets: none given; name at least one, such as weir-default: {}", errConfig)
	}
	alias := strings.TrimSpace(c.Middleware)
	if alias == "" {
		alias = DefaultMiddleware
	}
	hc := &dynamic.HTTPConfiguration{Middlewares: make(map[string]*dynamic.Middleware, len(c.Presets))}
	presets := make(map[string]*weir.Config, len(c.Presets))
	// In name order, so that the first error reported is the same from one start to the next.
	for _, name := range presetNames(c.Presets) {
		if name == "" || strings.ContainsAny(name, "@ ") {
			return nil, fmt.Errorf("%w: presets: %q must be a middleware name without '@' or spaces", errConfig, name)
		}
		preset, conf, err := decodePreset(c.Presets[name])
		if err != nil {
			return nil, fmt.Errorf("%w: presets.%s: %w", errConfig, name, err)
		}
		if err := preset.Check(); err != nil {
			return nil, fmt.Errorf("%w: presets.%s: %w", errConfig, name, err)
		}
		presets[name] = preset
		mw := &dynamic.Middleware{Plugin: map[string]dynamic.PluginConf{alias: conf}}
		hc.Middlewares[name] = mw
	}
	if c.Admin != nil {
		router, err := adminRouter(c.Admin, presets)
		if err != nil {
			return nil, err
		}
		hc.Routers = map[string]*dynamic.Router{AdminRouterName: router}
	}
	return &dynamic.Configuration{HTTP: hc}, nil
}

// adminRouter builds the admin router a describes over the checked presets.
func adminRouter(a *AdminConfig, presets map[string]*weir.Config) (*dynamic.Router, error) {
	name := strings.TrimSpace(a.Preset)
	preset, ok := presets[name]
	if name == "" || !ok {
		return nil, fmt.Errorf("%w: admin.preset: %q must name one of the presets (%s)", errConfig, a.Preset, strings.Join(sortedKeys(presets), ", "))
	}
	path := strings.TrimSpace(preset.Admin.Path)
	if path == "" {
		return nil, fmt.Errorf("%w: admin.preset: %q sets no admin.path, so the admin router would serve nothing; set presets.%s.admin.path (and admin.token)", errConfig, a.Preset, name)
	}
	rule := strings.TrimSpace(a.Rule)
	if rule == "" {
		rule = "PathPrefix(`" + path + "`)"
	}
	// The preset's admin answers only under admin.hosts: the router matches only them, so a
	// request to another name goes where it would without the admin.
	hosts, err := admin.ParseHosts(preset.Admin.Hosts)
	if err != nil {
		return nil, fmt.Errorf("%w: presets.%s: %w", errConfig, name, err)
	}
	if len(hosts) > 0 {
		match := make([]string, len(hosts))
		for i, h := range hosts {
			match[i] = "Host(`" + h + "`)"
		}
		rule = "(" + strings.Join(match, " || ") + ") && (" + rule + ")"
	}
	r := &dynamic.Router{Rule: rule, Service: AdminService, Middlewares: []string{name}}
	if ep := strings.TrimSpace(a.EntryPoint); ep != "" {
		r.EntryPoints = []string{ep}
	}
	return r, nil
}

// presetNames lists the presets' names in order.
func presetNames(presets map[string]interface{}) []string {
	names := make([]string, 0, len(presets))
	for name := range presets {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// sortedKeys lists the checked presets' names in order.
func sortedKeys(presets map[string]*weir.Config) []string {
	names := make([]string, 0, len(presets))
	for name := range presets {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
