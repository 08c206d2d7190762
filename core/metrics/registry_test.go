package metrics

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestWriteText writes a registry with a family of every kind and checks the whole text: the
// behaviours the package's Examples show, and those yaegi test does not run.
func TestWriteText(t *testing.T) {
	var r Registry
	outcomes, err := r.CounterFamily("weir_requests_total", "Requests answered,\nby \\outcome\\.", []string{"outcome", "method"},
		[][]string{{"hit", "GET"}, {"miss", "GET"}, {`say "hi"`, "a\\b\nc"}})
	if err != nil {
		t.Fatal(err)
	}
	outcomes[0].Add(3)
	Inc(outcomes[2])
	g, err := r.Gauge("weir_store_entries", "Entries stored.")
	if err != nil {
		t.Fatal(err)
	}
	g.Set(-5)
	f, err := r.FloatGauge("weir_hit_ratio", "Share of hits.")
	if err != nil {
		t.Fatal(err)
	}
	f.Set(0.75)
	hs, err := r.HistogramFamily("weir_fetch_duration_seconds", "Fetch time.", []string{"upstream"}, [][]string{{"a"}, {"b"}}, []float64{0.5, 1})
	if err != nil {
		t.Fatal(err)
	}
	ObserveDuration(hs[0], 100*time.Millisecond)
	ObserveDuration(hs[0], 100*time.Millisecond)
	ObserveDuration(hs[0], 3*time.Second)
	single, err := r.Histogram("weir_body_bytes", "Body sizes.", []float64{1024})
	if err != nil {
		t.Fatal(err)
	}
	single.Observe(2048)
	err = r.Collect(Collected{Name: "weir_breaker_state", Help: "Breaker state.", Kind: KindGauge, Labels: []string{"key", "state"},
		Collect: func() []Sample {
			return []Sample{{Values: []string{"b.example", "open"}, Value: 1}, {Values: []string{"a.example", "closed"}, Value: 1}}
		}})
	if err != nil {
		t.Fatal(err)
	}
	err = r.Collect(Collected{Name: "weir_evictions_total", Help: "Evictions.", Kind: KindCounter,
		Collect: func() []Sample { return []Sample{{Value: 2}, {Value: 1e6}} }})
	if err != nil {
		t.Fatal(err)
	}

	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	want := `# HELP weir_body_bytes Body sizes.
# TYPE weir_body_bytes histogram
weir_body_bytes_bucket{le="1024"} 0
weir_body_bytes_bucket{le="+Inf"} 1
weir_body_bytes_sum 2048
weir_body_bytes_count 1
# HELP weir_breaker_state Breaker state.
# TYPE weir_breaker_state gauge
weir_breaker_state{key="a.example",state="closed"} 1
weir_breaker_state{key="b.example",state="open"} 1
# HELP weir_evictions_total Evictions.
# TYPE weir_evictions_total counter
weir_evictions_total 1000002
# HELP weir_fetch_duration_seconds Fetch time.
# TYPE weir_fetch_duration_seconds histogram
weir_fetch_duration_seconds_bucket{upstream="a",le="0.5"} 2
weir_fetch_duration_seconds_bucket{upstream="a",le="1"} 2
weir_fetch_duration_seconds_bucket{upstream="a",le="+Inf"} 3
weir_fetch_duration_seconds_sum{upstream="a"} 3.2
weir_fetch_duration_seconds_count{upstream="a"} 3
weir_fetch_duration_seconds_bucket{upstream="b",le="0.5"} 0
weir_fetch_duration_seconds_bucket{upstream="b",le="1"} 0
weir_fetch_duration_seconds_bucket{upstream="b",le="+Inf"} 0
weir_fetch_duration_seconds_sum{upstream="b"} 0
weir_fetch_duration_seconds_count{upstream="b"} 0
# HELP weir_hit_ratio Share of hits.
# TYPE weir_hit_ratio gauge
weir_hit_ratio 0.75
# HELP weir_requests_total Requests answered,\nby \\outcome\\.
# TYPE weir_requests_total counter
weir_requests_total{outcome="hit",method="GET"} 3
weir_requests_total{outcome="miss",method="GET"} 0
weir_requests_total{outcome="say \"hi\"",method="a\\b\nc"} 1
# HELP weir_store_entries Entries stored.
# TYPE weir_store_entries gauge
weir_store_entries -5
`
	if got := buf.String(); got != want {
		t.Errorf("WriteText wrote\n%s\nwant\n%s", got, want)
	}
}

func TestWriteTextEmpty(t *testing.T) {
	var r Registry
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil || buf.Len() != 0 {
		t.Errorf("WriteText of an empty registry = %q, %v; want nothing, no error", buf.String(), err)
	}
}

func TestContentType(t *testing.T) {
	if want := "text/plain; version=0.0.4; charset=utf-8"; ContentType != want {
		t.Errorf("ContentType = %q, want %q", ContentType, want)
	}
}

func TestRegisterDuplicate(t *testing.T) {
	tests := []struct {
		desc   string
		first  func(r *Registry) error
		second func(r *Registry) error
	}{
		{
			desc:   "the same name",
			first:  func(r *Registry) error { _, err := r.Gauge("weir_x", "X."); return err },
			second: func(r *Registry) error { _, err := r.Gauge("weir_x", "X."); return err },
		},
		{
			desc:   "a gauge where a histogram writes its count",
			first:  func(r *Registry) error { _, err := r.Histogram("weir_x", "X.", nil); return err },
			second: func(r *Registry) error { _, err := r.Gauge("weir_x_count", "X."); return err },
		},
		{
			desc:   "a histogram whose sum a gauge writes",
			first:  func(r *Registry) error { _, err := r.Gauge("weir_x_sum", "X."); return err },
			second: func(r *Registry) error { _, err := r.Histogram("weir_x", "X.", nil); return err },
		},
		{
			desc:  "a collected family after a fixed one",
			first: func(r *Registry) error { _, err := r.Counter("weir_x_total", "X."); return err },
			second: func(r *Registry) error {
				return r.Collect(Collected{Name: "weir_x_total", Help: "X.", Kind: KindCounter, Collect: func() []Sample { return nil }})
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			var r Registry
			if err := tt.first(&r); err != nil {
				t.Fatal(err)
			}
			if err := tt.second(&r); !errors.Is(err, ErrDuplicate) {
				t.Errorf("second registration: error = %v, want ErrDuplicate", err)
			}
		})
	}
}

func TestRegisterInvalid(t *testing.T) {
	tests := []struct {
		desc     string
		register func(r *Registry) error
		wantErr  string
	}{
		{desc: "counter name", register: func(r *Registry) error { _, err := r.Counter("weir_x", "X."); return err }, wantErr: "_total"},
		{desc: "empty help", register: func(r *Registry) error { _, err := r.Gauge("weir_x", ""); return err }, wantErr: "help"},
		{desc: "help not UTF-8", register: func(r *Registry) error { _, err := r.FloatGauge("weir_x", "\xff"); return err }, wantErr: "help"},
		{desc: "label name", register: func(r *Registry) error {
			_, err := r.GaugeFamily("weir_x", "X.", []string{"a-b"}, [][]string{{"v"}})
			return err
		}, wantErr: "label name"},
		{desc: "label values", register: func(r *Registry) error {
			_, err := r.CounterFamily("weir_x_total", "X.", []string{"a"}, [][]string{{"v", "w"}})
			return err
		}, wantErr: "want one for each"},
		{desc: "histogram le", register: func(r *Registry) error {
			_, err := r.HistogramFamily("weir_x", "X.", []string{"le"}, [][]string{{"v"}}, nil)
			return err
		}, wantErr: "le"},
		{desc: "histogram bounds", register: func(r *Registry) error { _, err := r.Histogram("weir_x", "X.", []float64{2, 1}); return err }, wantErr: "increase"},
		{desc: "collected histogram", register: func(r *Registry) error {
			return r.Collect(Collected{Name: "weir_x", Help: "X.", Kind: KindHistogram, Collect: func() []Sample { return nil }})
		}, wantErr: "counter or a gauge"},
		{desc: "collected without a function", register: func(r *Registry) error {
			return r.Collect(Collected{Name: "weir_x", Help: "X.", Kind: KindGauge})
		}, wantErr: "Collect function"},
		{desc: "collected with a negative limit", register: func(r *Registry) error {
			return r.Collect(Collected{Name: "weir_x", Help: "X.", Kind: KindGauge, Limit: -1, Collect: func() []Sample { return nil }})
		}, wantErr: "limit -1"},
		{desc: "collected counter name", register: func(r *Registry) error {
			return r.Collect(Collected{Name: "weir_x", Help: "X.", Kind: KindCounter, Collect: func() []Sample { return nil }})
		}, wantErr: "_total"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			var r Registry
			checkErr(t, tt.register(&r), tt.wantErr)
			var buf bytes.Buffer
			if err := r.WriteText(&buf); err != nil || buf.Len() != 0 {
				t.Errorf("after a refused registration WriteText wrote %q, %v; want nothing", buf.String(), err)
			}
		})
	}
}

// TestCollectWithoutLock registers a family from within a collect function: it would
// deadlock if WriteText held the registry's lock while calling it.
func TestCollectWithoutLock(t *testing.T) {
	var r Registry
	calls := 0
	err := r.Collect(Collected{Name: "weir_x", Help: "X.", Kind: KindGauge, Collect: func() []Sample {
		calls++
		if calls > 1 {
			return []Sample{{Value: 1}}
		}
		if _, err := r.Gauge("weir_y", "Y."); err != nil {
			t.Error(err)
		}
		return []Sample{{Value: 1}}
	}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	var buf bytes.Buffer
	go func() { done <- r.WriteText(&buf) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WriteText hangs calling a collect function that registers")
	}
	if calls != 1 {
		t.Errorf("collect called %d times, want 1", calls)
	}
	// The family registered during the write is written from the next write on.
	buf.Reset()
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "weir_y 0\n") {
		t.Errorf("second write lacks weir_y:\n%s", buf.String())
	}
}

func TestCollectPanics(t *testing.T) {
	var r Registry
	err := r.Collect(Collected{Name: "weir_x", Help: "X.", Kind: KindGauge, Collect: func() []Sample { panic("broken") }})
	if err != nil {
		t.Fatal(err)
	}
	g, err := r.Gauge("weir_y", "Y.")
	if err != nil {
		t.Fatal(err)
	}
	g.Set(4)
	var buf bytes.Buffer
	err = r.WriteText(&buf)
	if !errors.Is(err, ErrCollect) || !strings.Contains(err.Error(), `"weir_x"`) {
		t.Errorf("error = %v, want ErrCollect naming weir_x", err)
	}
	want := "# HELP weir_x X.\n# TYPE weir_x gauge\n# HELP weir_y Y.\n# TYPE weir_y gauge\nweir_y 4\n"
	if got := buf.String(); got != want {
		t.Errorf("WriteText wrote\n%s\nwant\n%s", got, want)
	}
}

// failWriter refuses every write.
type failWriter struct{}

var errWrite = errors.New("connection reset")

func (failWriter) Write([]byte) (int, error) { return 0, errWrite }

func TestWriteTextWriterError(t *testing.T) {
	r := benchRegistry(t)
	if err := r.WriteText(failWriter{}); !errors.Is(err, errWrite) {
		t.Errorf("error = %v, want the writer's", err)
	}
}

func TestFamilyReturnsCopies(t *testing.T) {
	var r Registry
	cs, err := r.CounterFamily("weir_x_total", "X.", []string{"a"}, [][]string{{"1"}, {"2"}})
	if err != nil {
		t.Fatal(err)
	}
	Inc(cs[1])
	cs[0] = cs[1] // the caller's slice is its own
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if want := "weir_x_total{a=\"1\"} 0\nweir_x_total{a=\"2\"} 1\n"; !strings.HasSuffix(buf.String(), want) {
		t.Errorf("WriteText wrote\n%s\nwant it to end with\n%s", buf.String(), want)
	}
}
