package metrics

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// Errors returned by this package.
var (
	// ErrInvalid wraps every error about a name, a label, a help text or a bucket bound
	// refused at registration.
	ErrInvalid = errors.New("invalid metric")
	// ErrDuplicate: a family would write a name another family of the registry writes.
	ErrDuplicate = errors.New("metric name already registered")
	// ErrCollect: a collect function panicked or returned samples without one value for
	// each label; WriteText wrote the rest.
	ErrCollect = errors.New("collecting metrics failed")
)

// Kind is the type of a family, as its TYPE line says.
type Kind int

// The kinds of family. A collected family is a counter or a gauge. The values are written
// out: Yaegi v0.16.1 compares a constant of a named type set by an expression (iota + 1)
// unequal to every value, itself included (docs/yaegi.md).
const (
	KindCounter   Kind = 1
	KindGauge     Kind = 2
	KindHistogram Kind = 3
)

// kindName returns k as the TYPE line writes it.
func kindName(k Kind) string {
	switch k {
	case KindCounter:
		return "counter"
	case KindGauge:
		return "gauge"
	case KindHistogram:
		return "histogram"
	}
	return ""
}

// Registry holds families of metrics and writes them, sorted by name. The zero value is an
// empty registry. Its methods are safe for concurrent use.
type Registry struct {
	// mu guards families and taken, never anything a family holds (package comment).
	mu       sync.Mutex
	families []*family       // sorted by name
	taken    map[string]bool // every name a family writes: a histogram's _bucket, _sum and _count too
}

// family is one metric family: its HELP and TYPE lines and its series, either fixed (one of
// counters, gauges, floats, hists) or collected.
type family struct {
	name string
	head string // the HELP and TYPE lines
	// prefixes holds, per fixed counter or gauge, what precedes its value (seriesPrefix).
	prefixes []string
	counters []*Counter
	gauges   []*Gauge
	floats   []*FloatGauge
	hists    []histSeries
	// labels are the label names; collect and limit describe a collected family.
	labels  []string
	collect func() []Sample
	limit   int
}

// histSeries is one histogram of a family and what precedes its values on each line.
type histSeries struct {
	h *Histogram
	// bucket is `name_bucket{labels,` (or `name_bucket{` without labels), le and the value
	// to follow; sum and count are complete prefixes (seriesPrefix).
	bucket string
	sum    string
	count  string
}

// Counter registers a counter without labels.
func (r *Registry) Counter(name, help string) (*Counter, error) {
	cs, err := r.CounterFamily(name, help, nil, [][]string{nil})
	if err != nil {
		return nil, err
	}
	return cs[0], nil
}

// CounterFamily registers a counter family with the label names labels and, for each element
// of values (one value per label), a counter, returned in the order of values.
func (r *Registry) CounterFamily(name, help string, labels []string, values [][]string) ([]*Counter, error) {
	f, err := newFixed(name, help, KindCounter, labels, values)
	if err != nil {
		return nil, err
	}
	f.counters = make([]*Counter, len(values))
	for i := range values {
		f.counters[i] = &Counter{}
	}
	if err := r.add(f, []string{name}); err != nil {
		return nil, err
	}
	return append([]*Counter(nil), f.counters...), nil
}

// Gauge registers a gauge without labels.
func (r *Registry) Gauge(name, help string) (*Gauge, error) {
	gs, err := r.GaugeFamily(name, help, nil, [][]string{nil})
	if err != nil {
		return nil, err
	}
	return gs[0], nil
}

// GaugeFamily registers a gauge family as CounterFamily registers a counter family.
func (r *Registry) GaugeFamily(name, help string, labels []string, values [][]string) ([]*Gauge, error) {
	f, err := newFixed(name, help, KindGauge, labels, values)
	if err != nil {
		return nil, err
	}
	f.gauges = make([]*Gauge, len(values))
	for i := range values {
		f.gauges[i] = &Gauge{}
	}
	if err := r.add(f, []string{name}); err != nil {
		return nil, err
	}
	return append([]*Gauge(nil), f.gauges...), nil
}

// FloatGauge registers a gauge without labels whose value need not be a whole number.
func (r *Registry) FloatGauge(name, help string) (*FloatGauge, error) {
	f, err := newFixed(name, help, KindGauge, nil, [][]string{nil})
	if err != nil {
		return nil, err
	}
	g := &FloatGauge{}
	f.floats = []*FloatGauge{g}
	if err := r.add(f, []string{name}); err != nil {
		return nil, err
	}
	return g, nil
}

// Histogram registers a histogram without labels, with the bucket upper bounds upper
// (increasing; the +Inf bucket is always there). Bounds are seconds for ObserveDuration.
func (r *Registry) Histogram(name, help string, upper []float64) (*Histogram, error) {
	hs, err := r.HistogramFamily(name, help, nil, [][]string{nil}, upper)
	if err != nil {
		return nil, err
	}
	return hs[0], nil
}

// HistogramFamily registers a histogram family as CounterFamily registers a counter family,
// every histogram with the bucket upper bounds upper.
func (r *Registry) HistogramFamily(name, help string, labels []string, values [][]string, upper []float64) ([]*Histogram, error) {
	f, err := newFixed(name, help, KindHistogram, labels, values)
	if err != nil {
		return nil, err
	}
	b, err := newBounds(name, upper)
	if err != nil {
		return nil, err
	}
	hs := make([]*Histogram, len(values))
	f.hists = make([]histSeries, len(values))
	for i, vs := range values {
		hs[i] = &Histogram{counts: make([]int64, len(b.le)), upper: b.upper, nanos: b.nanos, b: b}
		bucket := append([]byte(name+"_bucket{"), appendLabels(nil, labels, vs)...)
		if len(labels) > 0 {
			bucket = append(bucket, ',')
		}
		f.hists[i] = histSeries{
			h:      hs[i],
			bucket: string(bucket),
			sum:    seriesPrefix(name+"_sum", labels, vs),
			count:  seriesPrefix(name+"_count", labels, vs),
		}
	}
	if err := r.add(f, []string{name, name + "_bucket", name + "_sum", name + "_count"}); err != nil {
		return nil, err
	}
	return hs, nil
}

// newFixed checks a fixed family's names and values and returns it with its HELP and TYPE
// lines and its series prefixes.
func newFixed(name, help string, k Kind, labels []string, values [][]string) (*family, error) {
	f, err := newFamily(name, help, k, labels)
	if err != nil {
		return nil, err
	}
	if err := checkValues(name, labels, values); err != nil {
		return nil, err
	}
	f.prefixes = make([]string, len(values))
	for i, vs := range values {
		f.prefixes[i] = seriesPrefix(name, labels, vs)
	}
	return f, nil
}

// newFamily checks what every family has, its name, kind, help and label names, and
// returns a family with its HELP and TYPE lines.
func newFamily(name, help string, k Kind, labels []string) (*family, error) {
	if err := checkName(name, k); err != nil {
		return nil, err
	}
	if help == "" || !utf8.ValidString(help) {
		return nil, fmt.Errorf("metric %q: help %q: want a text in UTF-8: %w", name, help, ErrInvalid)
	}
	if err := checkLabels(name, k, labels); err != nil {
		return nil, err
	}
	head := "# HELP " + name + " " + escapeHelp(help) + "\n# TYPE " + name + " " + kindName(k) + "\n"
	return &family{name: name, head: head, labels: append([]string(nil), labels...)}, nil
}

// add adds f, which writes the names written, unless another family writes one of them.
func (r *Registry) add(f *family, written []string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range written {
		if r.taken[n] {
			return fmt.Errorf("metric %q: %s is written by a family registered before: %w", f.name, n, ErrDuplicate)
		}
	}
	if r.taken == nil {
		r.taken = make(map[string]bool)
	}
	for _, n := range written {
		r.taken[n] = true
	}
	// Appended, then moved into place: `append(r.families, nil)` panics under Yaegi v0.16.1
	// when another package's code calls this (an untyped nil is not assignable to the
	// interpreted pointer type; docs/yaegi.md).
	r.families = append(r.families, f)
	for i := len(r.families) - 1; i > 0 && r.families[i-1].name > f.name; i-- {
		prev := r.families[i-1]
		r.families[i-1] = f
		r.families[i] = prev
	}
	return nil
}

// WriteText writes every family in the text exposition format 0.0.4 (ContentType), sorted by
// name, in one Write. It calls the collect functions with no lock held (package comment). An
// error of w's is returned; so is one wrapping ErrCollect, after everything else is written.
func (r *Registry) WriteText(w io.Writer) error {
	r.mu.Lock()
	families := append([]*family(nil), r.families...)
	r.mu.Unlock()

	var b []byte
	var collectErr error
	for _, f := range families {
		b = append(b, f.head...)
		b = f.appendFixed(b)
		if f.collect == nil {
			continue
		}
		var err error
		b, err = f.appendCollected(b)
		if err != nil && collectErr == nil {
			collectErr = err
		}
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("writing metrics: %w", err)
	}
	return collectErr
}

// appendFixed appends the lines of f's fixed series.
func (f *family) appendFixed(b []byte) []byte {
	for i, c := range f.counters {
		b = append(b, f.prefixes[i]...)
		b = strconv.AppendInt(b, c.Value(), 10)
		b = append(b, '\n')
	}
	for i, g := range f.gauges {
		b = append(b, f.prefixes[i]...)
		b = strconv.AppendInt(b, g.Value(), 10)
		b = append(b, '\n')
	}
	for i, g := range f.floats {
		b = append(b, f.prefixes[i]...)
		b = appendFloat(b, g.Value())
		b = append(b, '\n')
	}
	for _, s := range f.hists {
		b = appendHistogram(b, s)
	}
	return b
}

// appendHistogram appends the lines of one histogram: its buckets, cumulative, then _sum and
// _count, which is the +Inf bucket's count.
func appendHistogram(b []byte, s histSeries) []byte {
	var total int64
	for i, le := range s.h.b.le {
		total += atomic.LoadInt64(&s.h.counts[i])
		b = append(b, s.bucket...)
		b = append(b, le...)
		b = append(b, ' ')
		b = strconv.AppendInt(b, total, 10)
		b = append(b, '\n')
	}
	b = append(b, s.sum...)
	b = appendFloat(b, s.h.sum())
	b = append(b, '\n')
	b = append(b, s.count...)
	b = strconv.AppendInt(b, total, 10)
	return append(b, '\n')
}
