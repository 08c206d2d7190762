package core

import (
	"fmt"
	"os"
	"sync"

	"github.com/weirproxy/weir/core/events"
)

// eventLog is an engine's event log (core/events): one line per event an operator needs,
// never one per request. It outlives reloads, as the store whose callbacks write to it does;
// a reload that changes log.format gives it a new Log.
type eventLog struct {
	// mu guards log and shed.
	mu   sync.Mutex
	log  *events.Log
	shed *events.Summary
	// conf is the format and sink the Log was built for.
	conf string
	// recent keeps the last events for the admin's feed, across the Logs built here.
	recent *events.Recent
}

// current returns the Log to write to.
func (l *eventLog) current() *events.Log {
	l.mu.Lock()
	log := l.log
	l.mu.Unlock()
	return log
}

// kept returns the events kept for the admin's feed (nil before configure).
func (l *eventLog) kept() *events.Recent {
	l.mu.Lock()
	k := l.recent
	l.mu.Unlock()
	return k
}

// shedSummary returns the Summary of l that counts shed requests; a function, not a method,
// for every refusal calls it (docs/yaegi.md).
func shedSummary(l *eventLog) *events.Summary {
	l.mu.Lock()
	s := l.shed
	l.mu.Unlock()
	return s
}

// configure builds the Log for name and s unless it already is; s is valid.
func (l *eventLog) configure(name string, s Settings) {
	conf := fmt.Sprintf("%s %p", s.LogFormat, s.Events)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.log != nil && l.conf == conf {
		return
	}
	if l.recent == nil {
		l.recent = &events.Recent{}
	}
	log, err := events.New(events.Settings{Format: s.LogFormat, Middleware: name, Sink: s.Events, Now: s.Now, Recent: l.recent})
	if err != nil {
		// validate checked the format.
		return
	}
	l.log = log
	l.shed = events.NewSummary(log)
	l.conf = conf
}

// stderrLine writes an event line to standard error as it is: the line carries its own time.
var stderrLine = func(line string) { fmt.Fprintln(os.Stderr, line) }

// ConfigRejected writes the config_rejected event of the middleware name, whose
// configuration err refuses, in the format format names (logfmt when it names none).
func ConfigRejected(name, format string, err error) {
	log, logErr := events.New(events.Settings{Format: format, Middleware: name, Sink: stderrLine})
	if logErr != nil {
		log, _ = events.New(events.Settings{Middleware: name, Sink: stderrLine})
	}
	log.Emit(events.ConfigRejected, events.Str("error", err.Error()))
}
