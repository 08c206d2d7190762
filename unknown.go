package weir

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// unknownOptions refuses the sections and options c was given that Weir does not know,
// which Traefik's decoder left in the Unknown fields (mapstructure's ",remain"), naming each
// in full (breaker.minrequest) with the known option closest to it by edit distance. Keys differing
// from an option in case alone are no unknowns: the decoder matches names whatever their
// case, as labels may come lowercased.
func (c *Config) unknownOptions() error {
	sections := []struct {
		name    string
		unknown map[string]interface{}
	}{
		{"", c.Unknown},
		{"key", c.Key.Unknown}, {"cache", c.Cache.Unknown}, {"coalesce", c.Coalesce.Unknown},
		{"timeouts", c.Timeouts.Unknown}, {"limiter", c.Limiter.Unknown}, {"breaker", c.Breaker.Unknown},
		{"negative", c.Negative.Unknown}, {"missRate", c.MissRate.Unknown}, {"store", c.Store.Unknown},
		{"admin", c.Admin.Unknown}, {"log", c.Log.Unknown}, {"budgets", c.Budgets.Unknown},
		{"admission", c.Admission.Unknown}, {"clients", c.Clients.Unknown}, {"warm", c.Warm.Unknown},
		{"stale", c.Stale.Unknown}, {"refusal", c.Refusal.Unknown},
		{"private", c.Private.Unknown},
	}
	var found []string
	for _, sec := range sections {
		for key := range sec.unknown {
			if sec.name != "" {
				key = sec.name + "." + key
			}
			found = append(found, key)
		}
	}
	if len(found) == 0 {
		return nil
	}
	sort.Strings(found)
	known := knownOptions()
	msgs := make([]string, 0, len(found))
	for _, key := range found {
		msg := key + ": not an option of Weir's"
		if near := closestOption(key, known); near != "" {
			msg += "; did you mean " + near + "?"
		}
		msgs = append(msgs, msg)
	}
	return fmt.Errorf("%w: %s", errConfig, strings.Join(msgs, "; "))
}

// knownOptions names every section and option of Config by the JSON names Traefik matches
// them by: "cache", "cache.maxSize", "pacing".
func knownOptions() []string {
	var names []string
	ct := reflect.TypeOf(Config{})
	for i := 0; i < ct.NumField(); i++ {
		sec := ct.Field(i)
		secName := optionName(sec)
		if secName == "" {
			continue
		}
		names = append(names, secName)
		if sec.Type.Kind() != reflect.Struct {
			continue
		}
		for j := 0; j < sec.Type.NumField(); j++ {
			if name := optionName(sec.Type.Field(j)); name != "" {
				names = append(names, secName+"."+name)
			}
		}
	}
	return names
}

// optionName is f's JSON name, or "" for a field no option sets (Unknown).
func optionName(f reflect.StructField) string {
	name := strings.Split(f.Tag.Get("json"), ",")[0]
	if name == "-" {
		return ""
	}
	return name
}

// closestOption returns the option of known nearest to key by edit distance, case aside,
// or "" when none is within a third of key's length (two edits for a short one): a
// suggestion further off would mislead.
func closestOption(key string, known []string) string {
	limit := len(key) / 3
	if limit < 2 {
		limit = 2
	}
	best, bestD := "", limit+1
	lk := strings.ToLower(key)
	for _, k := range known {
		if d := editDistance(lk, strings.ToLower(k)); d < bestD {
			best = k
			bestD = d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d := prev[j] + 1
			if ins := cur[j-1] + 1; ins < d {
				d = ins
			}
			if sub := prev[j-1] + cost; sub < d {
				d = sub
			}
			cur[j] = d
		}
		// Not a tuple swap: one assignment each, which Yaegi v0.16.1 runs as written.
		swap := prev
		prev = cur
		cur = swap
	}
	return prev[len(b)]
}
