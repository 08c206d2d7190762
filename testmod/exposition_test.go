package testmod

import (
	"bytes"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/weirproxy/weir/core/metrics"
)

// Label values a scrape must carry through unchanged: quotes, backslashes, line feeds, an
// escape already written out, Unicode, and nothing at all.
var awkward = []string{
	`say "hi"`,
	`C:\cache\`,
	"two\nlines",
	`\n is not a line feed`,
	"héllo, 世界 🙂",
	"",
}

// series is what a test expects of one series of a family: its labels and its value, or
// for a histogram its cumulative bucket counts (the +Inf bucket last), sum and count.
type series struct {
	labels  map[string]string
	value   float64
	buckets []uint64
	sum     float64
}

// family is what a test expects of a parsed family.
type family struct {
	help   string
	typ    dto.MetricType
	series []series
}

// TestExpositionParses builds a registry with a family of every kind and parses what
// WriteText writes with the Prometheus text parser, strict about names.
func TestExpositionParses(t *testing.T) {
	var r metrics.Registry
	want := map[string]family{}

	// A counter family with fixed label values, awkward ones among them.
	values := make([][]string, len(awkward))
	for i, v := range awkward {
		values[i] = []string{v, "GET"}
	}
	counters, err := r.CounterFamily("weir_requests_total", "Requests by outcome.\nHelp text may hold \\ and line feeds.",
		[]string{"outcome", "method"}, values)
	if err != nil {
		t.Fatal(err)
	}
	cf := family{help: "Requests by outcome.\nHelp text may hold \\ and line feeds.", typ: dto.MetricType_COUNTER}
	for i, c := range counters {
		c.Add(int64(i * 10))
		cf.series = append(cf.series, series{labels: map[string]string{"outcome": awkward[i], "method": "GET"}, value: float64(i * 10)})
	}
	want["weir_requests_total"] = cf

	c, err := r.Counter("weir_purges_total", "Purges.")
	if err != nil {
		t.Fatal(err)
	}
	c.Add(1 << 40)
	want["weir_purges_total"] = family{help: "Purges.", typ: dto.MetricType_COUNTER, series: []series{{value: 1 << 40}}}

	g, err := r.Gauge("weir_store_bytes", "Bytes stored.")
	if err != nil {
		t.Fatal(err)
	}
	g.Set(-12345)
	want["weir_store_bytes"] = family{help: "Bytes stored.", typ: dto.MetricType_GAUGE, series: []series{{value: -12345}}}

	gs, err := r.GaugeFamily("weir_waiting_requests", "Requests waiting, by pool.", []string{"pool"}, [][]string{{"fetch"}, {"upload"}})
	if err != nil {
		t.Fatal(err)
	}
	gs[1].Set(3)
	want["weir_waiting_requests"] = family{help: "Requests waiting, by pool.", typ: dto.MetricType_GAUGE, series: []series{
		{labels: map[string]string{"pool": "fetch"}, value: 0},
		{labels: map[string]string{"pool": "upload"}, value: 3},
	}}

	fg, err := r.FloatGauge("weir_hit_ratio", "Share of hits.")
	if err != nil {
		t.Fatal(err)
	}
	fg.Set(1.0 / 3)
	want["weir_hit_ratio"] = family{help: "Share of hits.", typ: dto.MetricType_GAUGE, series: []series{{value: 1.0 / 3}}}

	// A histogram without labels, with durations in and past every bucket.
	h, err := r.Histogram("weir_fetch_duration_seconds", "Time to fetch from the origin.", []float64{0.005, 0.1, 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{time.Millisecond, 5 * time.Millisecond, 50 * time.Millisecond, 500 * time.Millisecond, 5 * time.Second} {
		metrics.ObserveDuration(h, d)
	}
	want["weir_fetch_duration_seconds"] = family{help: "Time to fetch from the origin.", typ: dto.MetricType_HISTOGRAM, series: []series{
		{buckets: []uint64{2, 3, 4, 5}, sum: 5.556},
	}}

	// A histogram family with awkward label values and float observations.
	hs, err := r.HistogramFamily("weir_body_size_bytes", "Body sizes.", []string{"route"}, [][]string{{awkward[0]}, {awkward[2]}}, []float64{1024, 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	hs[0].Observe(100)
	hs[0].Observe(2048)
	hs[0].Observe(1 << 30)
	want["weir_body_size_bytes"] = family{help: "Body sizes.", typ: dto.MetricType_HISTOGRAM, series: []series{
		{labels: map[string]string{"route": awkward[0]}, buckets: []uint64{1, 2, 3}, sum: 100 + 2048 + 1<<30},
		{labels: map[string]string{"route": awkward[2]}, buckets: []uint64{0, 0, 0}, sum: 0},
	}}

	// A collected gauge past its limit: the keys after the first two are summed under other.
	keys := append([]string{}, awkward...)
	err = r.Collect(metrics.Collected{
		Name: "weir_breaker_open", Help: "Open breakers, by scope key.", Kind: metrics.KindGauge,
		Labels: []string{"key", "state"}, Limit: 2,
		Collect: func() []metrics.Sample {
			var out []metrics.Sample
			for _, k := range keys {
				out = append(out, metrics.Sample{Values: []string{k, "open"}, Value: 1})
			}
			return out
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	want["weir_breaker_open"] = family{help: "Open breakers, by scope key.", typ: dto.MetricType_GAUGE, series: []series{
		{labels: map[string]string{"key": awkward[0], "state": "open"}, value: 1},
		{labels: map[string]string{"key": awkward[1], "state": "open"}, value: 1},
		{labels: map[string]string{"key": metrics.Other, "state": "open"}, value: float64(len(awkward) - 2)},
	}}

	err = r.Collect(metrics.Collected{
		Name: "weir_store_evictions_total", Help: "Evictions.", Kind: metrics.KindCounter,
		Collect: func() []metrics.Sample { return []metrics.Sample{{Value: 7}} },
	})
	if err != nil {
		t.Fatal(err)
	}
	want["weir_store_evictions_total"] = family{help: "Evictions.", typ: dto.MetricType_COUNTER, series: []series{{value: 7}}}

	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	got, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parsing:\n%s\n%v", text, err)
	}
	if len(got) != len(want) {
		t.Errorf("parsed %d families, want %d:\n%s", len(got), len(want), text)
	}
	for name, wf := range want {
		checkFamily(t, name, got[name], wf)
	}
	checkOrder(t, text)
}

func checkFamily(t *testing.T, name string, mf *dto.MetricFamily, want family) {
	t.Helper()
	if mf == nil {
		t.Errorf("family %s not parsed", name)
		return
	}
	if mf.GetName() != name {
		t.Errorf("family %s parsed as %s", name, mf.GetName())
	}
	if mf.GetHelp() != want.help {
		t.Errorf("%s: help %q, want %q", name, mf.GetHelp(), want.help)
	}
	if mf.GetType() != want.typ {
		t.Errorf("%s: type %v, want %v", name, mf.GetType(), want.typ)
	}
	if len(mf.GetMetric()) != len(want.series) {
		t.Errorf("%s: %d series, want %d", name, len(mf.GetMetric()), len(want.series))
		return
	}
	seen := map[string]bool{}
	for _, m := range mf.GetMetric() {
		labels := map[string]string{}
		for _, lp := range m.GetLabel() {
			labels[lp.GetName()] = lp.GetValue()
		}
		key := labelKey(labels)
		if seen[key] {
			t.Errorf("%s: series %s written twice", name, key)
		}
		seen[key] = true
		ws, ok := findSeries(want.series, labels)
		if !ok {
			t.Errorf("%s: unexpected series %s", name, key)
			continue
		}
		switch want.typ {
		case dto.MetricType_COUNTER:
			if v := m.GetCounter().GetValue(); v != ws.value {
				t.Errorf("%s%s = %v, want %v", name, key, v, ws.value)
			}
		case dto.MetricType_GAUGE:
			if v := m.GetGauge().GetValue(); v != ws.value {
				t.Errorf("%s%s = %v, want %v", name, key, v, ws.value)
			}
		case dto.MetricType_HISTOGRAM:
			checkHistogram(t, name+key, m.GetHistogram(), ws)
		}
	}
}

// checkHistogram checks a parsed histogram: cumulative buckets as expected, the +Inf bucket
// (which the parser keeps as a bucket of its own) equal to the count, and the sum.
func checkHistogram(t *testing.T, name string, h *dto.Histogram, want series) {
	t.Helper()
	buckets := h.GetBucket()
	if len(buckets) != len(want.buckets) {
		t.Errorf("%s: %d buckets, want %d", name, len(buckets), len(want.buckets))
		return
	}
	var prev uint64
	for i, b := range buckets {
		n := b.GetCumulativeCount()
		if n < prev {
			t.Errorf("%s: bucket le=%v holds %d, fewer than the bucket before (%d): not cumulative", name, b.GetUpperBound(), n, prev)
		}
		prev = n
		if n != want.buckets[i] {
			t.Errorf("%s: bucket le=%v holds %d, want %d", name, b.GetUpperBound(), n, want.buckets[i])
		}
	}
	last := buckets[len(buckets)-1]
	if !math.IsInf(last.GetUpperBound(), 1) {
		t.Errorf("%s: last bucket le=%v, want +Inf", name, last.GetUpperBound())
	}
	if last.GetCumulativeCount() != h.GetSampleCount() {
		t.Errorf("%s: +Inf bucket %d, count %d: want them equal", name, last.GetCumulativeCount(), h.GetSampleCount())
	}
	if math.Abs(h.GetSampleSum()-want.sum) > 1e-9*math.Max(1, math.Abs(want.sum)) {
		t.Errorf("%s: sum %v, want %v", name, h.GetSampleSum(), want.sum)
	}
}

func findSeries(all []series, labels map[string]string) (series, bool) {
	for _, s := range all {
		if labelKey(s.labels) == labelKey(labels) {
			return s, true
		}
	}
	return series{}, false
}

// labelKey writes labels in a stable form for messages and comparisons.
func labelKey(labels map[string]string) string {
	names := make([]string, 0, len(labels))
	for n := range labels {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(n + "=" + `"` + labels[n] + `"`)
	}
	b.WriteByte('}')
	return b.String()
}

// checkOrder checks that the families come sorted by name, each introduced by its HELP line.
func checkOrder(t *testing.T, text string) {
	t.Helper()
	var names []string
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, "# HELP "); ok {
			names = append(names, strings.SplitN(rest, " ", 2)[0])
		}
	}
	if !sort.StringsAreSorted(names) {
		t.Errorf("families in the order %q, want sorted by name", names)
	}
}

// TestContentType checks metrics.ContentType against the parser's own name for the format.
func TestContentType(t *testing.T) {
	if want := string(expfmt.NewFormat(expfmt.TypeTextPlain)); metrics.ContentType != want {
		t.Errorf("ContentType = %q, want %q", metrics.ContentType, want)
	}
}
