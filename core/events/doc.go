// Package events is Weir's event log for operators: one structured line for each thing that
// changes how Weir treats traffic (a breaker opening or closing, the shared store failing or
// coming back, a miss-rate anomaly, a configuration applied or rejected), and one summary line
// a second at most while requests are shed. Never one line per request.
//
// # Lines
//
// A Log writes each event as one line, in the operator's log.format: logfmt (the default) or
// JSON. Every line starts with the time (RFC 3339, UTC, milliseconds, from the injected clock),
// the event's level, the event's name and the middleware's name, then the event's own fields
// in the order given:
//
//	time=2025-03-01T12:00:00.250Z level=warn event=breaker_opened middleware=shop scope=api.example reason=failure-ratio ratio=0.5 failures=10 requests=20 open_for=30s
//	{"time":"2025-03-01T12:00:00.250Z","level":"warn","event":"breaker_opened","middleware":"shop","scope":"api.example","reason":"failure-ratio","ratio":0.5,"failures":10,"requests":20,"open_for":"30s"}
//
// The level (info, warn or error) belongs to the event: names.go gives each name its own, and
// the caller of Emit does not choose it, so a log filter on level=warn sees every breaker
// that opened and every shed line, whoever emitted them.
//
// A logfmt value is quoted when it is empty or holds a space, '=', '"', a control character or
// bytes that are not UTF-8; within quotes '"' and '\' are escaped and control characters
// written as \n, \r, \t or \u00XX, as JSON strings are, so one unquoting reads both formats.
// Bytes that are not UTF-8 become U+FFFD in both. A key is written as given, with any byte a
// logfmt key cannot hold replaced by '_'. Ints, floats (shortest form: 0.5) and bools are JSON
// numbers and booleans; durations (Go's form: 30s, 1m30s) and strings are JSON strings.
// The keys time, level, event and middleware are the line's own: fields should not reuse them.
//
// # Shed requests
//
// A shed request is counted, not logged: a Summary counts them by reason and writes one shed
// line at most every ShedEvery (a second), ShedEvery after the first shed it holds, so the
// first shed after a quiet period shows within a second and the end of a burst is reported
// without waiting for the next shed. The timer is injected (Settings.AfterFunc), so tests
// drive it by hand.
//
// # Cost
//
// Weir runs in Traefik's Yaegi interpreter, where every interpreted call costs a frame of
// reflect values and every call into compiled code a reflect call (docs/yaegi.md). Events
// are rare, so Emit is a method and favours clarity; still, a field whose key and value need
// no change is copied in the line's loop after two calls into compiled code
// (strings.ContainsAny), and only one that needs escaping goes through a function of its own
// and is walked byte by byte. The level is one map read a line, the name's constant copied
// as is. CountShed runs on the request path of every shed request, so it
// is a function, not a method: a lock, a map update and an unlock, and a clock read and a
// timer only for the first shed of a line. bench_test.go measures both.
//
// # Wiring
//
//	log, err := events.New(events.Settings{Format: format, Middleware: name, Sink: settings.Log})
//	shed := events.NewSummary(log)
//	...
//	log.Emit(events.BreakerOpened, events.Str("scope", key), events.Str("reason", "failure-ratio"),
//		events.Float("ratio", ratio), events.Int("failures", failed), events.Int("requests", n),
//		events.Dur("open_for", openFor))
//	...
//	events.CountShed(shed, "queue-full") // a request refused by the gate
package events
