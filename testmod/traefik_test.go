package testmod

import (
	"fmt"

	"github.com/mitchellh/mapstructure"
	"github.com/weirproxy/weir"
)

// pluginConfig decodes a middleware's plugin section (the map under plugin.weir, from YAML,
// TOML or labels) onto CreateConfig's result as Traefik v3.6.12 does
// (pkg/plugins/middlewareyaegi.go, createConfig): mapstructure, with a comma-separated string
// split into a list and weakly typed input.
func pluginConfig(section map[string]interface{}) (*weir.Config, error) {
	cfg := weir.CreateConfig()
	if err := decodePlugin(section, cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// decodePlugin is Traefik's decoding of a plugin section onto cfg, a pointer to the plugin's
// configuration: compiled, or interpreted by Yaegi.
func decodePlugin(section map[string]interface{}, cfg interface{}) error {
	if len(section) == 0 {
		return nil
	}
	decoder, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		DecodeHook:       mapstructure.StringToSliceHookFunc(","),
		WeaklyTypedInput: true,
		Result:           cfg,
	})
	if err != nil {
		return fmt.Errorf("failed to create configuration decoder: %w", err)
	}
	if err := decoder.Decode(section); err != nil {
		return fmt.Errorf("failed to decode configuration: %w", err)
	}
	return nil
}
