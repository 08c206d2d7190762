package metrics

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ContentType is the Content-Type of what WriteText writes: the text exposition format 0.0.4.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Escapers of the text format: a label value escapes backslash, double quote and line feed;
// a HELP text backslash and line feed. strings.Replacer runs compiled, where a loop over the
// bytes would run interpreted in Yaegi.
var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

// escapeLabelValue returns v escaped for a label value between double quotes. The format is
// UTF-8: a byte sequence that is not (a collected value may hold anything) becomes U+FFFD.
func escapeLabelValue(v string) string {
	if !utf8.ValidString(v) {
		v = strings.ToValidUTF8(v, "\uFFFD")
	}
	return labelEscaper.Replace(v)
}

// escapeHelp returns s escaped for a HELP line.
func escapeHelp(s string) string {
	return helpEscaper.Replace(s)
}

// appendLabels appends `l1="v1",l2="v2"` for the label names and their values.
func appendLabels(b []byte, labels, values []string) []byte {
	for i, l := range labels {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, l...)
		b = append(b, `="`...)
		b = append(b, escapeLabelValue(values[i])...)
		b = append(b, '"')
	}
	return b
}

// seriesPrefix returns what comes before a series' value on its line: the name, the labels
// in braces when there are any, and the space.
func seriesPrefix(name string, labels, values []string) string {
	b := append([]byte(nil), name...)
	if len(labels) > 0 {
		b = append(b, '{')
		b = appendLabels(b, labels, values)
		b = append(b, '}')
	}
	b = append(b, ' ')
	return string(b)
}

// appendFloat appends f as Prometheus reads it: +Inf, -Inf and NaN by name, whole numbers
// below 1e21 in digits without an exponent, others in the shortest form that reads back as f.
func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) {
		return append(b, "NaN"...)
	}
	if math.IsInf(f, 1) {
		return append(b, "+Inf"...)
	}
	if math.IsInf(f, -1) {
		return append(b, "-Inf"...)
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		return strconv.AppendFloat(b, f, 'f', -1, 64)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}
