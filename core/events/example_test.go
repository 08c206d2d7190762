package events_test

import (
	"fmt"
	"time"

	"github.com/weirproxy/weir/core/events"
)

// An origin breaker opened and a configuration was rejected, in logfmt, the default format.
func Example() {
	l, err := events.New(events.Settings{
		Middleware: "shop",
		Sink:       func(line string) { fmt.Println(line) },
		Now:        func() time.Time { return time.Date(2025, 3, 1, 12, 0, 0, 250000000, time.UTC) },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	l.Emit(events.BreakerOpened, events.Str("scope", "api.example"), events.Str("reason", "failure-ratio"),
		events.Float("ratio", 0.5), events.Int("failures", 10), events.Int("requests", 20),
		events.Dur("open_for", 30*time.Second))
	l.Emit(events.ConfigRejected, events.Str("error", `cache.maxSize: "12 parsecs" is not a size`))
	// Output:
	// time=2025-03-01T12:00:00.250Z level=warn event=breaker_opened middleware=shop scope=api.example reason=failure-ratio ratio=0.5 failures=10 requests=20 open_for=30s
	// time=2025-03-01T12:00:00.250Z level=error event=config_rejected middleware=shop error="cache.maxSize: \"12 parsecs\" is not a size"
}

// A miss-rate anomaly and the near cache's tracking lost, with log.format set to json.
func Example_json() {
	l, err := events.New(events.Settings{
		Format:     "json",
		Middleware: "shop",
		Sink:       func(line string) { fmt.Println(line) },
		Now:        func() time.Time { return time.Date(2025, 3, 1, 12, 0, 0, 250000000, time.UTC) },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	l.Emit(events.MissRateAnomaly, events.Str("partition", "https://shop.example/search"),
		events.Int("requests", 520), events.Int("misses", 500), events.Dur("window", 10*time.Second),
		events.Str("varying", "cb"), events.Bool("throttled", true))
	l.Emit(events.NearCacheLost, events.Str("error", "read tcp 10.0.0.2:6379: i/o timeout"))
	// Output:
	// {"time":"2025-03-01T12:00:00.250Z","level":"warn","event":"miss_rate_anomaly","middleware":"shop","partition":"https://shop.example/search","requests":520,"misses":500,"window":"10s","varying":"cb","throttled":true}
	// {"time":"2025-03-01T12:00:00.250Z","level":"warn","event":"near_cache_lost","middleware":"shop","error":"read tcp 10.0.0.2:6379: i/o timeout"}
}

// A burst of shed requests becomes one line, written ShedEvery after the first shed. The
// timer is fired by hand here; by default it is time.AfterFunc.
func ExampleSummary() {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	var timer func()
	l, err := events.New(events.Settings{
		Middleware: "shop",
		Sink:       func(line string) { fmt.Println(line) },
		Now:        func() time.Time { return now },
		AfterFunc:  func(d time.Duration, f func()) { timer = f },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	shed := events.NewSummary(l)
	for i := 0; i < 12; i++ {
		events.CountShed(shed, "queue-full")
	}
	for i := 0; i < 3; i++ {
		events.CountShed(shed, "miss-rate")
	}
	now = now.Add(events.ShedEvery)
	timer()
	// Output:
	// time=2025-03-01T12:00:01.000Z level=warn event=shed middleware=shop count=15 interval=1s reasons="queue-full:12 miss-rate:3"
}

func ExampleParseFormat() {
	for _, s := range []string{"", "JSON", "text"} {
		format, err := events.ParseFormat(s)
		fmt.Printf("%q %v\n", format, err)
	}
	// Output:
	// "logfmt" <nil>
	// "json" <nil>
	// "" log.format: "text" must be logfmt or json: unknown log format
}
