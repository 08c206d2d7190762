package provider

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/traefik/genconf/dynamic"
	"github.com/weirproxy/weir"
)

// decodePreset reads one preset as Traefik hands the static configuration over (nested
// maps, lists and leaves; an empty preset, "{}", as an empty string) onto a weir.Config,
// and returns it with the plugin section published for it: the same values under the JSON
// names of weir.Config's fields, which Traefik decodes onto the middleware's Config as it
// decodes any plugin section. Names match weir.Config's fields whatever their case, as
// Traefik's decoder matches them; leaves are read as strings, as from labels; a name that is
// no Weir setting is an error, named with its section.
func decodePreset(raw interface{}) (*weir.Config, dynamic.PluginConf, error) {
	conf, err := section(raw, reflect.TypeOf(weir.Config{}), "")
	if err != nil {
		return nil, nil, err
	}
	data, err := json.Marshal(conf)
	if err != nil {
		return nil, nil, fmt.Errorf("encode: %w", err)
	}
	c := weir.CreateConfig()
	if err := json.Unmarshal(data, c); err != nil {
		return nil, nil, fmt.Errorf("decode: %w", err)
	}
	return c, dynamic.PluginConf(conf), nil
}

// section reads raw, a map or nothing, as the struct type t; prefix names where it is
// ("limiter.", or "" at the top).
func section(raw interface{}, t reflect.Type, prefix string) (map[string]interface{}, error) {
	out := map[string]interface{}{}
	m, ok := raw.(map[string]interface{})
	if !ok {
		if s, isString := raw.(string); raw != nil && !(isString && strings.TrimSpace(s) == "") {
			return nil, fmt.Errorf("%s: %q must be a section of settings", strings.TrimSuffix(prefix, "."), fmt.Sprint(raw))
		}
		return out, nil
	}
	// In name order, so that the first error reported is the same from one start to the next.
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		f, name, found := fieldByName(t, key)
		if !found {
			return nil, fmt.Errorf("%s%s: not a Weir setting", prefix, key)
		}
		v := m[key]
		switch f.Type.Kind() {
		case reflect.Struct:
			sub, err := section(v, f.Type, prefix+name+".")
			if err != nil {
				return nil, err
			}
			out[name] = sub
		case reflect.Slice:
			list, err := asList(v, prefix+name)
			if err != nil {
				return nil, err
			}
			out[name] = list
		default:
			s, err := asString(v, prefix+name)
			if err != nil {
				return nil, err
			}
			out[name] = s
		}
	}
	return out, nil
}

// fieldByName finds the field of t whose JSON name is key, whatever its case, and returns it
// with that JSON name.
func fieldByName(t reflect.Type, key string) (reflect.StructField, string, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := strings.Split(f.Tag.Get("json"), ",")[0]
		if name != "" && strings.EqualFold(name, key) {
			return f, name, true
		}
	}
	return reflect.StructField{}, "", false
}

// asList reads a list setting: a list, or one string (which the middleware splits on
// commas, as it does a label's).
func asList(v interface{}, field string) ([]interface{}, error) {
	switch l := v.(type) {
	case nil:
		return []interface{}{}, nil
	case []interface{}:
		out := make([]interface{}, 0, len(l))
		for _, item := range l {
			s, err := asString(item, field)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	case []string:
		out := make([]interface{}, 0, len(l))
		for _, item := range l {
			out = append(out, item)
		}
		return out, nil
	}
	s, err := asString(v, field)
	if err != nil {
		return nil, err
	}
	return []interface{}{s}, nil
}

// asString reads a value: a string, or a number or boolean written without quotes.
func asString(v interface{}, field string) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case bool, int, int64, float64, uint64:
		return fmt.Sprint(x), nil
	}
	return "", fmt.Errorf("%s: %v must be a value, not a section or a list", field, v)
}
