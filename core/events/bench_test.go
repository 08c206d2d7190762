package events

import (
	"testing"
	"time"
)

// Compare these with the cost of a request through Traefik, and run them under Yaegi too:
// YAEGI_TEST_FLAGS="-run XXX -bench ." scripts/yaegi-test.sh core/events

// BenchmarkEmitLogfmt writes a breaker_opened line with its six fields, built as the engine
// builds them.
func BenchmarkEmitLogfmt(b *testing.B) {
	l, _ := New(Settings{Middleware: "shop", Sink: func(string) {}})
	for i := 0; i < b.N; i++ {
		l.Emit(BreakerOpened, Str("scope", "api.example"), Str("reason", "failure-ratio"), Float("ratio", 0.5),
			Int("failures", 10), Int("requests", 20), Dur("open_for", 30*time.Second))
	}
}

func BenchmarkEmitJSON(b *testing.B) {
	l, _ := New(Settings{Format: FormatJSON, Middleware: "shop", Sink: func(string) {}})
	for i := 0; i < b.N; i++ {
		l.Emit(BreakerOpened, Str("scope", "api.example"), Str("reason", "failure-ratio"), Float("ratio", 0.5),
			Int("failures", 10), Int("requests", 20), Dur("open_for", 30*time.Second))
	}
}

// BenchmarkEmitQuoted writes a line whose value needs escaping: the byte loop.
func BenchmarkEmitQuoted(b *testing.B) {
	l, _ := New(Settings{Middleware: "shop", Sink: func(string) {}})
	for i := 0; i < b.N; i++ {
		l.Emit(ConfigRejected, Str("error", `cache.maxSize: "12 parsecs" is not a size`))
	}
}

// BenchmarkCountShed is a shed request's cost: the timer is armed once, so this is the
// common CountShed, a lock, a map update and an unlock.
func BenchmarkCountShed(b *testing.B) {
	l, _ := New(Settings{Sink: func(string) {}, AfterFunc: func(time.Duration, func()) {}})
	s := NewSummary(l)
	for i := 0; i < b.N; i++ {
		CountShed(s, "queue-full")
	}
}

// BenchmarkCountShedReport is a line's worth of sheds: one CountShed that arms the timer, then the
// timer firing and writing the line.
func BenchmarkCountShedReport(b *testing.B) {
	var fire func()
	l, _ := New(Settings{Sink: func(string) {}, AfterFunc: func(d time.Duration, f func()) { fire = f }})
	s := NewSummary(l)
	for i := 0; i < b.N; i++ {
		CountShed(s, "queue-full")
		fire()
	}
}
