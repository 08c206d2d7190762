package weir

import (
	"errors"
	"strings"
	"testing"
)

func TestClosestOption(t *testing.T) {
	known := knownOptions()
	tests := []struct {
		desc, key, want string
	}{
		{desc: "a letter left out", key: "breaker.minRequest", want: "breaker.minRequests"},
		{desc: "lowercase and a letter out", key: "breaker.minrequest", want: "breaker.minRequests"},
		{desc: "a letter wrong", key: "cache.maxSise", want: "cache.maxSize"},
		{desc: "letters swapped", key: "limiter.maxQeueu", want: "limiter.maxQueue"},
		{desc: "a section misspelt", key: "breakr", want: "breaker"},
		{desc: "an option in the wrong section", key: "cache.queryDrop", want: "key.queryDrop"},
		{desc: "nothing near", key: "cache.colour", want: ""},
		{desc: "a top-level option misspelt", key: "pacingg", want: "pacing"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if got := closestOption(tc.key, known); got != tc.want {
				t.Errorf("closestOption(%q) = %q, want %q", tc.key, got, tc.want)
			}
		})
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"abc", "", 3},
		{"", "abc", 3},
		{"maxsize", "maxsize", 0},
		{"minrequest", "minrequests", 1},
		{"kitten", "sitting", 3},
	}
	for _, tc := range tests {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestKnownOptionsLeaveOutUnknown: the Unknown fields are no options, and every section
// is named.
func TestKnownOptionsLeaveOutUnknown(t *testing.T) {
	known := strings.Join(knownOptions(), " ")
	for _, want := range []string{"cache.maxSize", "breaker.minRequests", "key.scheme", "pacing", "refusal.body"} {
		if !strings.Contains(" "+known+" ", " "+want+" ") {
			t.Errorf("knownOptions lacks %s", want)
		}
	}
	if strings.Contains(known, "-") || strings.Contains(strings.ToLower(known), "unknown") {
		t.Errorf("knownOptions names an Unknown field: %s", known)
	}
}

func TestUnknownOptionsRefused(t *testing.T) {
	tests := []struct {
		desc string
		c    *Config
		want string // "": accepted
	}{
		{desc: "none", c: &Config{}},
		{desc: "an option misspelt", c: &Config{Breaker: BreakerConfig{Unknown: map[string]interface{}{"minrequest": "5"}}},
			want: "breaker.minrequest: not an option of Weir's; did you mean breaker.minRequests?"},
		{desc: "a section misspelt", c: &Config{Unknown: map[string]interface{}{"limitr": map[string]interface{}{}}},
			want: "limitr: not an option of Weir's; did you mean limiter?"},
		{desc: "nothing near", c: &Config{Cache: CacheConfig{Unknown: map[string]interface{}{"colour": "red"}}},
			want: "cache.colour: not an option of Weir's"},
		{desc: "two, in name order", c: &Config{Cache: CacheConfig{Unknown: map[string]interface{}{"maxSise": "1MiB"}},
			Admin: AdminConfig{Unknown: map[string]interface{}{"tokn": "x"}}},
			want: "admin.tokn: not an option of Weir's; did you mean admin.token?; cache.maxSise: not an option of Weir's; did you mean cache.maxSize?"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			_, err := tc.c.settings()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("settings() = %v, want no error", err)
				}
				return
			}
			if err == nil || !errors.Is(err, errConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("settings() = %v, want an error containing %q", err, tc.want)
			}
			if tc.desc == "nothing near" && strings.Contains(err.Error(), "did you mean") {
				t.Errorf("settings() = %v, want no suggestion", err)
			}
		})
	}
}
