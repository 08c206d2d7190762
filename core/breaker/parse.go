package breaker

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Which names an override entry has set, as bits: each may be given once.
const (
	setWindow = 1 << iota
	setMinRequests
	setFailureRatio
	setMaxFailures
	setOpenFor
	setMaxOpenFor
	setSlowCall
	setSlowCallRatio
	setProbes
	setProbeInterval
)

// ParseOverride reads one entry of the dynamic configuration's breaker.overrides: a key, a
// colon and a space, then name=value pairs separated by spaces:
//
//	api.example.com: window=30s failureRatio=0.3
//	api.example.com:8443: openFor=10s maxOpenFor=2m
//	[2001:db8::1]: minRequests=50
//	api.example.com
//
// The key ends at the first colon followed by a space or a tab, or at a colon that ends the
// entry, so that a port after the host and the colons of an IPv6 literal stay in the key;
// an entry with neither such a colon nor an '=' is a key alone, which declares it (a zero
// Override). The key comes back in the form ScopeKey gives under ScopeHost: ASCII lower
// case, without port or trailing dot, an IPv6 literal in its shortest form in brackets.
// Breakers are per host, not per port, so "api.example.com:8443" and "api.example.com" name
// one breaker; a Group reduces the key further under scope domain (Group.SetOverride).
//
// The names are window, minRequests, failureRatio, maxFailures, openFor, maxOpenFor, slowCall,
// slowCallRatio, probes and probeInterval, matched whatever their case, as Traefik matches
// option names. window, openFor, maxOpenFor, slowCall and probeInterval are Go durations
// (30s, 1m30s), minRequests, maxFailures and probes whole numbers, failureRatio and
// slowCallRatio numbers above 0 and at most 1. Each name may be given once and every value
// must be above zero: a name left out keeps the group's default. Errors name the part at
// fault and wrap ErrInvalidSetting.
//
// The configuration holds a list of these strings rather than a map from host to settings
// because host names hold dots, which Docker labels split into nested keys.
func ParseOverride(s string) (string, Override, error) {
	key, o, err := parseOverride(s)
	if err != nil {
		return "", Override{}, fmt.Errorf("breaker.overrides: %q: %w", s, err)
	}
	return key, o, nil
}

// ParseOverrides reads the entries of breaker.overrides (see ParseOverride) for a group
// whose scope is scope, with each key reduced to that scope's (ScopeKey). Two entries that
// name one breaker (api.example.com and api.example.com:8443; under scope domain,
// a.example.com and b.example.com) are an error naming both.
func ParseOverrides(scope string, list []string) ([]KeyOverride, error) {
	out := make([]KeyOverride, 0, len(list))
	at := make(map[string]int, len(list))
	for i, s := range list {
		key, o, err := parseOverride(s)
		if err != nil {
			return nil, fmt.Errorf("breaker.overrides[%d]: %q: %w", i, s, err)
		}
		key = ScopeKey(scope, key)
		if j, ok := at[key]; ok {
			return nil, fmt.Errorf("breaker.overrides[%d]: %q names the breaker of breaker.overrides[%d] (%q under scope %s) again: %w",
				i, s, j, key, scope, ErrInvalidSetting)
		}
		at[key] = i
		out = append(out, KeyOverride{Key: key, Override: o})
	}
	return out, nil
}

// parseOverride is ParseOverride without the entry named in its errors.
func parseOverride(s string) (string, Override, error) {
	var o Override
	s = strings.TrimSpace(s)
	key := s
	rest := ""
	if i := keyEnd(s); i >= 0 {
		key = s[:i]
		rest = s[i+1:]
	} else if strings.Contains(s, "=") {
		return "", o, fmt.Errorf(`no ": " between the key and its settings: %w`, ErrInvalidSetting)
	}
	key, err := overrideKey(strings.TrimSpace(key))
	if err != nil {
		return "", o, err
	}
	if o, err = ParseOverrideParams(rest); err != nil {
		return "", Override{}, err
	}
	return key, o, nil
}

// ParseOverrideParams reads the part of a breaker.overrides entry after the key, "window=30s
// failureRatio=0.3" (see ParseOverride), as an operator gives it for a key already named.
// Empty, or spaces only, it is the zero Override. Errors name the part at fault and wrap
// ErrInvalidSetting; the caller says where the text came from.
func ParseOverrideParams(s string) (Override, error) {
	var o Override
	set := 0
	for _, pair := range strings.Fields(s) {
		bit, err := setField(&o, pair)
		if err != nil {
			return Override{}, err
		}
		if set&bit != 0 {
			return Override{}, fmt.Errorf("%q: %s is given twice: %w", pair, pair[:strings.IndexByte(pair, '=')], ErrInvalidSetting)
		}
		set |= bit
	}
	if err := o.Validate(); err != nil {
		return Override{}, err
	}
	return o, nil
}

// keyEnd returns the index of the colon that ends an entry's key: the first followed by a
// space or a tab, or one that ends s; -1 for none.
func keyEnd(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == ':' && (i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\t') {
			return i
		}
	}
	return -1
}

// overrideKey checks that k is written as a host, with an optional port, and returns it in
// ScopeHost's form.
func overrideKey(k string) (string, error) {
	if k == "" {
		return "", fmt.Errorf("no key before the colon: %w", ErrInvalidSetting)
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '.' || c == '-' || c == '_' || c == ':' || c == '[' || c == ']') {
			return "", fmt.Errorf("key %q: %q is not allowed: want a host, as ASCII (punycode), with an optional port: %w",
				k, string(c), ErrInvalidSetting)
		}
	}
	h := ScopeKey(ScopeHost, k)
	if h == "" {
		return "", fmt.Errorf("key %q names no host: %w", k, ErrInvalidSetting)
	}
	return h, nil
}

// setField sets in o the field that pair, "name=value", names, and returns its bit.
func setField(o *Override, pair string) (int, error) {
	i := strings.IndexByte(pair, '=')
	if i <= 0 {
		return 0, fmt.Errorf("%q: want name=value: %w", pair, ErrInvalidSetting)
	}
	name := pair[:i]
	v := pair[i+1:]
	// The field name sets: a duration, a whole number or a ratio, one of the three.
	fields := []struct {
		name string
		bit  int
		d    *time.Duration
		n    *int
		r    *float64
	}{
		{"window", setWindow, &o.Window, nil, nil},
		{"minrequests", setMinRequests, nil, &o.MinRequests, nil},
		{"failureratio", setFailureRatio, nil, nil, &o.FailureRatio},
		{"maxfailures", setMaxFailures, nil, &o.MaxFailures, nil},
		{"openfor", setOpenFor, &o.OpenFor, nil, nil},
		{"maxopenfor", setMaxOpenFor, &o.MaxOpenFor, nil, nil},
		{"slowcall", setSlowCall, &o.SlowCall, nil, nil},
		{"slowcallratio", setSlowCallRatio, nil, nil, &o.SlowCallRatio},
		{"probes", setProbes, nil, &o.Probes, nil},
		{"probeinterval", setProbeInterval, &o.ProbeInterval, nil, nil},
	}
	var d *time.Duration
	var n *int
	var r *float64
	bit := 0
	lower := strings.ToLower(name)
	for _, f := range fields {
		if f.name == lower {
			bit, d, n, r = f.bit, f.d, f.n, f.r
		}
	}
	if bit == 0 {
		return 0, fmt.Errorf("%q: unknown name: want window, minRequests, failureRatio, maxFailures, openFor, maxOpenFor, slowCall, slowCallRatio, probes or probeInterval: %w", name, ErrInvalidSetting)
	}
	var err error
	zero := false
	switch {
	case d != nil:
		*d, err = time.ParseDuration(v)
		zero = *d == 0
	case n != nil:
		*n, err = strconv.Atoi(v)
		zero = *n == 0
	default:
		*r, err = strconv.ParseFloat(v, 64)
		zero = *r == 0
	}
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a %s: %w", name, v, kindOf(bit), ErrInvalidSetting)
	}
	if zero {
		return 0, fmt.Errorf("%s: %q: zero is the group's default: leave %s out: %w", name, v, name, ErrInvalidSetting)
	}
	return bit, nil
}

// kindOf names what the value of the field with bit must be.
func kindOf(bit int) string {
	switch bit {
	case setMinRequests, setMaxFailures, setProbes:
		return "whole number"
	case setFailureRatio, setSlowCallRatio:
		return "number"
	}
	return "duration such as 30s"
}
