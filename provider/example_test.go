package provider

import (
	"encoding/json"
	"fmt"
)

// ExampleBuild publishes two presets and the admin router of one of them: what a block of
// static configuration under providers.plugin.<alias> becomes.
func ExampleBuild() {
	conf, err := Build(&Config{
		Presets: map[string]interface{}{
			"weir-default": map[string]interface{}{"admin": map[string]interface{}{"path": "/_weir", "token": "a-long-random-secret-token"}},
			"weir-api":     map[string]interface{}{"limiter": map[string]interface{}{"maxConcurrent": "8"}},
		},
		Admin: &AdminConfig{Preset: "weir-default", EntryPoint: "web"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	api, _ := json.Marshal(conf.HTTP.Middlewares["weir-api"])
	admin, _ := json.Marshal(conf.HTTP.Routers[AdminRouterName])
	fmt.Println(string(api))
	fmt.Println(string(admin))
	// Output:
	// {"plugin":{"weir":{"limiter":{"maxConcurrent":"8"}}}}
	// {"entryPoints":["web"],"middlewares":["weir-default"],"service":"noop@internal","rule":"PathPrefix(`/_weir`)"}
}
