package testmod

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/weirproxy/weir"
)

// TestUnknownOptionDecoded: Traefik's decoder (mapstructure) leaves the keys that match no
// option in the Unknown fields (",remain"), so New refuses a misspelt option or section,
// naming it in full with the closest option; a name differing only in case (as labels may
// bring it) is the option itself.
func TestUnknownOptionDecoded(t *testing.T) {
	tests := []struct {
		desc    string
		section map[string]interface{}
		want    string // "": New accepts it
	}{
		{desc: "an option misspelt", section: map[string]interface{}{"breaker": map[string]interface{}{"minrequest": "5"}},
			want: "breaker.minrequest: not an option of Weir's; did you mean breaker.minRequests?"},
		{desc: "a section misspelt", section: map[string]interface{}{"limitr": map[string]interface{}{"maxQueue": "5"}},
			want: "limitr: not an option of Weir's; did you mean limiter?"},
		{desc: "a top-level value misspelt", section: map[string]interface{}{"pacin": "a.example=1/1s"},
			want: "pacin: not an option of Weir's; did you mean pacing?"},
		{desc: "an option in lowercase", section: map[string]interface{}{"cache": map[string]interface{}{"maxsize": "8MiB"}}},
		{desc: "options as labels give them", section: map[string]interface{}{"breaker": map[string]interface{}{"paths": "/a,/b", "minRequests": "5"}}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			cfg, err := pluginConfig(tc.section)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			_, err = weir.New(context.Background(), http.NotFoundHandler(), cfg, "unknown-"+strings.ReplaceAll(tc.desc, " ", "-"))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("New: %v, want it built", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
