package events

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// The formats of log.format.
const (
	FormatLogfmt = "logfmt"
	FormatJSON   = "json"
)

var (
	// ErrFormat wraps the error for a log.format that is neither logfmt nor json.
	ErrFormat = errors.New("unknown log format")
)

// Settings configure a Log. The zero value writes logfmt lines to nowhere.
type Settings struct {
	// Format is log.format: "logfmt" or "json", in any case. Empty: logfmt. Anything else:
	// rejected.
	Format string
	// Middleware is the middleware's name, written in every line (middleware=).
	Middleware string
	// Sink receives each line, without a line break. It is called outside any lock of this
	// package, from the caller's goroutine for Emit and from the timer's for a Summary, so it
	// must be safe for concurrent use and must not panic. Nil: lines are dropped.
	//
	// A func of one string, as core.Settings.Log: Yaegi v0.16.1 panics while compiling a
	// call of a variadic func-typed field with several arguments.
	Sink func(line string)
	// Now reads the clock for each line's time and a Summary's interval. Nil: time.Now.
	Now func() time.Time
	// AfterFunc calls f once, on a goroutine of its own, d from now, as time.AfterFunc does:
	// a Summary's timer. Nil: time.AfterFunc.
	AfterFunc func(d time.Duration, f func())
	// Recent, when set, keeps the last events as well (the admin's feed). Nil: none kept.
	Recent *Recent
}

// ParseFormat returns the format log.format names (case-insensitive; empty selects logfmt), or
// an error naming the value.
func ParseFormat(s string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", FormatLogfmt:
		return FormatLogfmt, nil
	case FormatJSON:
		return FormatJSON, nil
	}
	return "", fmt.Errorf("log.format: %q must be logfmt or json: %w", s, ErrFormat)
}

// Log writes events as lines. It is safe for concurrent use.
type Log struct {
	json bool
	// mw is the middleware's field as the format writes it, with its separator: written once.
	mw    string
	sink  func(line string)
	now   func() time.Time
	after func(d time.Duration, f func())
	// recent keeps the last events; nil for none.
	recent *Recent
}

// Package variables holding func literals, not top-level functions: Yaegi v0.16.1 cannot hand
// out a top-level function as a func value (docs/yaegi.md).
var (
	dropLine  = func(line string) {}
	afterFunc = func(d time.Duration, f func()) { time.AfterFunc(d, f) }
)

// New returns a Log, or an error naming log.format if s.Format is not a format.
func New(s Settings) (*Log, error) {
	format, err := ParseFormat(s.Format)
	if err != nil {
		return nil, err
	}
	l := &Log{json: format == FormatJSON, sink: s.Sink, now: s.Now, after: s.AfterFunc, recent: s.Recent}
	if l.json {
		l.mw = string(jsonString([]byte(`,"middleware":`), s.Middleware))
	} else {
		l.mw = string(logfmtValue([]byte(" middleware="), s.Middleware))
	}
	if l.sink == nil {
		l.sink = dropLine
	}
	if l.now == nil {
		l.now = time.Now
	}
	if l.after == nil {
		l.after = afterFunc
	}
	return l, nil
}

// Emit writes one line: the time, the event's level (level=, as levels gives it), event=name,
// middleware=, then fields in their order. Event names are the constants of this package; a
// name that is not one is written at LevelInfo. A nil Log writes nothing.
func (l *Log) Emit(name string, fields ...Field) {
	if l == nil {
		return
	}
	t := l.now()
	// The map read written out, not Level: a line costs one interpreted call fewer.
	level, ok := levels[name]
	if !ok {
		level = LevelInfo
	}
	if l.recent != nil {
		l.recent.add(t, level, name, fields)
	}
	if l.json {
		l.sink(jsonLine(t, level, name, l.mw, fields))
		return
	}
	l.sink(logfmtLine(t, level, name, l.mw, fields))
}
