package events

import (
	"strconv"
	"time"
)

// Field is one key and value of an event, made by Str, Int, Float, Dur or Bool. The value is
// formatted when the Field is made, so the line writers only copy and quote it.
type Field struct {
	key string
	val string
	// raw marks a JSON number or boolean: written as is in both formats, never quoted.
	raw bool
}

// Str is a string field: quoted in logfmt when it needs to be, a string in JSON.
func Str(key, value string) Field {
	return Field{key: key, val: value}
}

// Int is an integer field.
func Int(key string, n int) Field {
	return Field{key: key, val: strconv.Itoa(n), raw: true}
}

// Float is a number field in its shortest form (0.5, 12, 1e-07). NaN and the infinities, which
// JSON has no number for, are the strings NaN, +Inf and -Inf.
func Float(key string, f float64) Field {
	// f-f is zero for every finite f, NaN for NaN and the infinities: one comparison where
	// math.IsNaN and math.IsInf were two calls into compiled code under Yaegi.
	if f-f != 0 {
		return Field{key: key, val: strconv.FormatFloat(f, 'g', -1, 64)}
	}
	abs := f
	if abs < 0 {
		abs = -abs
	}
	// As encoding/json writes numbers: exponents only below 1e-6 and from 1e21 on.
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		return Field{key: key, val: strconv.FormatFloat(f, 'e', -1, 64), raw: true}
	}
	return Field{key: key, val: strconv.FormatFloat(f, 'f', -1, 64), raw: true}
}

// Dur is a duration field in Go's form (30s, 1m30s, 250ms): a string in JSON.
func Dur(key string, d time.Duration) Field {
	return Field{key: key, val: d.String()}
}

// Bool is a true or false field.
func Bool(key string, b bool) Field {
	if b {
		return Field{key: key, val: "true", raw: true}
	}
	return Field{key: key, val: "false", raw: true}
}
