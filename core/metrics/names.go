package metrics

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// nonBaseUnits are name components that speak of a unit Prometheus would have in its base
// unit: seconds for time, bytes for sizes, a ratio from 0 to 1 for a share.
var nonBaseUnits = map[string]string{
	"nanoseconds": "seconds", "microseconds": "seconds", "milliseconds": "seconds",
	"nanos": "seconds", "micros": "seconds", "millis": "seconds",
	"minutes": "seconds", "hours": "seconds", "days": "seconds",
	"bits": "bytes", "kilobytes": "bytes", "megabytes": "bytes", "gigabytes": "bytes",
	"kibibytes": "bytes", "mebibytes": "bytes", "gibibytes": "bytes",
	"percent": "ratio", "percentage": "ratio",
}

// histogramSuffixes are the names a histogram x writes besides x itself.
var histogramSuffixes = []string{"_bucket", "_sum", "_count"}

// isName reports whether s matches [a-zA-Z_][a-zA-Z0-9_]*, the metric names Weir writes and
// every label name.
func isName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// checkName checks the name of a family of kind k against Prometheus's rules and
// conventions (package comment).
func checkName(name string, k Kind) error {
	if !isName(name) {
		return fmt.Errorf("metric %q: a name matches [a-zA-Z_][a-zA-Z0-9_]*: %w", name, ErrInvalid)
	}
	total := strings.HasSuffix(name, "_total")
	if k == KindCounter && (!total || name == "_total") {
		return fmt.Errorf("metric %q: a counter's name ends in _total: %w", name, ErrInvalid)
	}
	if k != KindCounter && total {
		return fmt.Errorf("metric %q: only a counter's name ends in _total: %w", name, ErrInvalid)
	}
	if k == KindHistogram {
		for _, s := range histogramSuffixes {
			if strings.HasSuffix(name, s) {
				return fmt.Errorf("metric %q: a histogram's name does not end in %s, which its series add: %w", name, s, ErrInvalid)
			}
		}
	}
	for _, part := range strings.Split(strings.ToLower(name), "_") {
		if base, ok := nonBaseUnits[part]; ok {
			return fmt.Errorf("metric %q: %s is not a base unit, use %s: %w", name, part, base, ErrInvalid)
		}
	}
	return nil
}

// checkLabels checks the label names of a family of kind k.
func checkLabels(name string, k Kind, labels []string) error {
	for i, l := range labels {
		if !isName(l) || strings.HasPrefix(l, "__") {
			return fmt.Errorf("metric %q: label name %q: a label name matches [a-zA-Z_][a-zA-Z0-9_]* and does not start with __: %w", name, l, ErrInvalid)
		}
		if k == KindHistogram && l == "le" {
			return fmt.Errorf("metric %q: label name le is a histogram's own: %w", name, ErrInvalid)
		}
		for _, prev := range labels[:i] {
			if prev == l {
				return fmt.Errorf("metric %q: label name %q given twice: %w", name, l, ErrInvalid)
			}
		}
	}
	return nil
}

// checkValues checks the label values of a fixed family: one value per label name, valid
// UTF-8, and no combination given twice.
func checkValues(name string, labels []string, values [][]string) error {
	if len(values) == 0 {
		return fmt.Errorf("metric %q: a family declares at least one set of label values: %w", name, ErrInvalid)
	}
	seen := make(map[string]bool, len(values))
	for _, vs := range values {
		if len(vs) != len(labels) {
			return fmt.Errorf("metric %q: label values %q: want one for each of %q: %w", name, vs, labels, ErrInvalid)
		}
		for _, v := range vs {
			if !utf8.ValidString(v) {
				return fmt.Errorf("metric %q: label value %q is not valid UTF-8: %w", name, v, ErrInvalid)
			}
		}
		// The escaped values, joined by commas, are one string per combination.
		k := string(appendLabels(nil, labels, vs))
		if seen[k] {
			return fmt.Errorf("metric %q: label values %q given twice: %w", name, vs, ErrInvalid)
		}
		seen[k] = true
	}
	return nil
}
