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
	if len(section) == 0 {
		return cfg, nil
	}
	decoder, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		DecodeHook:       mapstructure.StringToSliceHookFunc(","),
		WeaklyTypedInput: true,
		Result:           cfg,
	})
	if err != nil {
		return nil, fmt.Errorf("failed to create configuration decoder: %w", err)
	}
	if err := decoder.Decode(section); err != nil {
		return nil, fmt.Errorf("failed to decode configuration: %w", err)
	}
	return cfg, nil
}
