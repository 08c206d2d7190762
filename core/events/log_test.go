package events

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/weirproxy/weir/internal/clocktest"
)

func TestParseFormat(t *testing.T) {
	tests := []struct {
		desc string
		in   string
		want string
	}{
		{"empty is logfmt", "", FormatLogfmt},
		{"logfmt", "logfmt", FormatLogfmt},
		{"json", "json", FormatJSON},
		{"any case and spaces", " JSON ", FormatJSON},
	}
	for _, tc := range tests {
		got, err := ParseFormat(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("%s: ParseFormat(%q) = %q, %v; want %q, nil", tc.desc, tc.in, got, err, tc.want)
		}
	}
}

func TestNewRejectsFormat(t *testing.T) {
	for _, format := range []string{"text", "yaml", "logfmt2"} {
		l, err := New(Settings{Format: format})
		if l != nil || !errors.Is(err, ErrFormat) {
			t.Errorf("New(Format %q) = %v, %v; want nil and an error wrapping ErrFormat", format, l, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "log.format") || !strings.Contains(msg, `"`+format+`"`) {
			t.Errorf("New(Format %q) error %q; want it to name log.format and the value", format, msg)
		}
	}
}

// breakerFields are what the engine passes with BreakerOpened, as Example shows.
func breakerFields() []Field {
	return []Field{Str("scope", "api.example"), Str("reason", "failure-ratio"), Float("ratio", 0.5),
		Int("failures", 10), Int("requests", 20), Dur("open_for", 30*time.Second)}
}

func TestEmit(t *testing.T) {
	tests := []struct {
		desc       string
		middleware string
		name       string
		fields     []Field
		logfmt     string
		json       string
	}{
		{
			desc: "breaker opened", middleware: "shop", name: BreakerOpened, fields: breakerFields(),
			logfmt: `time=2025-03-01T12:00:00.250Z level=warn event=breaker_opened middleware=shop scope=api.example reason=failure-ratio ratio=0.5 failures=10 requests=20 open_for=30s`,
			json:   `{"time":"2025-03-01T12:00:00.250Z","level":"warn","event":"breaker_opened","middleware":"shop","scope":"api.example","reason":"failure-ratio","ratio":0.5,"failures":10,"requests":20,"open_for":"30s"}`,
		},
		{
			desc: "no fields", middleware: "shop", name: NearCacheBack,
			logfmt: `time=2025-03-01T12:00:00.250Z level=info event=near_cache_back middleware=shop`,
			json:   `{"time":"2025-03-01T12:00:00.250Z","level":"info","event":"near_cache_back","middleware":"shop"}`,
		},
		{
			desc: "quoting and escapes", middleware: "my shop", name: ConfigRejected,
			fields: []Field{Str("error", `cache.maxSize: "12 parsecs" is not a size`), Str("empty", ""),
				Str("lines", "a\nb\r\tc\x01\x7f"), Str("eq", "a=b"), Str("slash", `C:\dir`), Str("utf8", "café ✓")},
			logfmt: `time=2025-03-01T12:00:00.250Z level=error event=config_rejected middleware="my shop" error="cache.maxSize: \"12 parsecs\" is not a size" empty="" lines="a\nb\r\tc\u0001\u007f" eq="a=b" slash=C:\dir utf8="café ✓"`,
			json:   `{"time":"2025-03-01T12:00:00.250Z","level":"error","event":"config_rejected","middleware":"my shop","error":"cache.maxSize: \"12 parsecs\" is not a size","empty":"","lines":"a\nb\r\tc\u0001\u007f","eq":"a=b","slash":"C:\\dir","utf8":"café ✓"}`,
		},
		{
			desc: "bytes that are not UTF-8", middleware: "shop", name: MissRateAnomaly,
			fields: []Field{Str("partition", "https://x.example/\xff\xfe")},
			logfmt: `time=2025-03-01T12:00:00.250Z level=warn event=miss_rate_anomaly middleware=shop partition="https://x.example/\ufffd\ufffd"`,
			json:   `{"time":"2025-03-01T12:00:00.250Z","level":"warn","event":"miss_rate_anomaly","middleware":"shop","partition":"https://x.example/\ufffd\ufffd"}`,
		},
		{
			desc: "keys a logfmt key cannot hold", middleware: "shop", name: ConfigApplied,
			fields: []Field{Bool("a key", true), Bool("", false), Int("k=\"v\"\n", -3)},
			logfmt: `time=2025-03-01T12:00:00.250Z level=info event=config_applied middleware=shop a_key=true _=false k__v__=-3`,
			json:   `{"time":"2025-03-01T12:00:00.250Z","level":"info","event":"config_applied","middleware":"shop","a key":true,"":false,"k=\"v\"\n":-3}`,
		},
		{
			desc: "empty middleware", middleware: "", name: StoreBreakerClosed,
			logfmt: `time=2025-03-01T12:00:00.250Z level=info event=store_breaker_closed middleware=""`,
			json:   `{"time":"2025-03-01T12:00:00.250Z","level":"info","event":"store_breaker_closed","middleware":""}`,
		},
	}
	for _, tc := range tests {
		for _, format := range []string{FormatLogfmt, FormatJSON} {
			r := newRig(t, format, tc.middleware)
			r.log.Emit(tc.name, tc.fields...)
			want := tc.logfmt
			if format == FormatJSON {
				want = tc.json
			}
			if got := r.take(); !equalLines(got, []string{want}) {
				t.Errorf("%s (%s):\n got %q\nwant %q", tc.desc, format, got, want)
			}
		}
	}
}

func TestEmitTimeIsUTCWithMilliseconds(t *testing.T) {
	r := newRig(t, "", "shop")
	r.clock = clocktest.New(time.Date(2025, 3, 1, 13, 0, 0, 5999999, time.FixedZone("CET", 3600)))
	r.log.Emit(NearCacheBack)
	want := `time=2025-03-01T12:00:00.005Z level=info event=near_cache_back middleware=shop`
	if got := r.take(); !equalLines(got, []string{want}) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestFields(t *testing.T) {
	tests := []struct {
		desc string
		f    Field
		want Field
	}{
		{"string", Str("k", "v"), Field{key: "k", val: "v"}},
		{"int", Int("k", -42), Field{key: "k", val: "-42", raw: true}},
		{"half", Float("k", 0.5), Field{key: "k", val: "0.5", raw: true}},
		{"whole float", Float("k", 12), Field{key: "k", val: "12", raw: true}},
		{"zero", Float("k", 0), Field{key: "k", val: "0", raw: true}},
		{"tiny", Float("k", 1e-7), Field{key: "k", val: "1e-07", raw: true}},
		{"huge", Float("k", 1e21), Field{key: "k", val: "1e+21", raw: true}},
		{"large but plain", Float("k", 123456789), Field{key: "k", val: "123456789", raw: true}},
		{"NaN", Float("k", math.NaN()), Field{key: "k", val: "NaN"}},
		{"infinity", Float("k", math.Inf(1)), Field{key: "k", val: "+Inf"}},
		{"minus infinity", Float("k", math.Inf(-1)), Field{key: "k", val: "-Inf"}},
		{"duration", Dur("k", 90*time.Second), Field{key: "k", val: "1m30s"}},
		{"sub-second duration", Dur("k", 250*time.Millisecond), Field{key: "k", val: "250ms"}},
		{"zero duration", Dur("k", 0), Field{key: "k", val: "0s"}},
		{"true", Bool("k", true), Field{key: "k", val: "true", raw: true}},
		{"false", Bool("k", false), Field{key: "k", val: "false", raw: true}},
	}
	for _, tc := range tests {
		if tc.f != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.desc, tc.f, tc.want)
		}
	}
}

func TestNilLogAndNilSink(t *testing.T) {
	var nilLog *Log
	nilLog.Emit(BreakerClosed, Str("scope", "x")) // must not panic

	l, err := New(Settings{})
	if err != nil {
		t.Fatalf("New(Settings{}) error = %v", err)
	}
	l.Emit(BreakerClosed, Str("scope", "x")) // dropped, must not panic
}

// TestExampleLines asserts what Example and Example_json show: yaegi test does not run
// examples (docs/yaegi.md).
func TestExampleLines(t *testing.T) {
	tests := []struct {
		desc   string
		format string
		emit   func(l *Log)
		want   []string
	}{
		{
			desc: "Example", format: "",
			emit: func(l *Log) {
				l.Emit(BreakerOpened, breakerFields()...)
				l.Emit(ConfigRejected, Str("error", `cache.maxSize: "12 parsecs" is not a size`))
			},
			want: []string{
				`time=2025-03-01T12:00:00.250Z level=warn event=breaker_opened middleware=shop scope=api.example reason=failure-ratio ratio=0.5 failures=10 requests=20 open_for=30s`,
				`time=2025-03-01T12:00:00.250Z level=error event=config_rejected middleware=shop error="cache.maxSize: \"12 parsecs\" is not a size"`,
			},
		},
		{
			desc: "Example_json", format: "json",
			emit: func(l *Log) {
				l.Emit(MissRateAnomaly, Str("partition", "https://shop.example/search"), Int("requests", 520),
					Int("misses", 500), Dur("window", 10*time.Second), Str("varying", "cb"), Bool("throttled", true))
				l.Emit(NearCacheLost, Str("error", "read tcp 10.0.0.2:6379: i/o timeout"))
			},
			want: []string{
				`{"time":"2025-03-01T12:00:00.250Z","level":"warn","event":"miss_rate_anomaly","middleware":"shop","partition":"https://shop.example/search","requests":520,"misses":500,"window":"10s","varying":"cb","throttled":true}`,
				`{"time":"2025-03-01T12:00:00.250Z","level":"warn","event":"near_cache_lost","middleware":"shop","error":"read tcp 10.0.0.2:6379: i/o timeout"}`,
			},
		},
	}
	for _, tc := range tests {
		r := newRig(t, tc.format, "shop")
		tc.emit(r.log)
		if got := r.take(); !equalLines(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.desc, got, tc.want)
		}
	}
}
