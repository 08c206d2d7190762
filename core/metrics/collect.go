package metrics

import (
	"fmt"
	"sort"
)

// DefaultLimit is how many distinct values of its first label a collected family writes when
// Collected.Limit is zero.
const DefaultLimit = 100

// Other is the label value under which a collected family sums the samples of the first
// label's values past its limit.
const Other = "other"

// Sample is one value of a collected family.
type Sample struct {
	// Values holds one label value for each of the family's label names, in their order.
	Values []string
	Value  float64
}

// Collected describes a family whose samples a function returns when the registry writes.
type Collected struct {
	// Name and Help are the family's name and help text, checked as for every family.
	Name string
	Help string
	// Kind is KindCounter or KindGauge.
	Kind Kind
	// Labels are the label names; nil for a family of one series. The first is the one
	// whose values Limit bounds (a scope key, say); every other label's values must come
	// from a small set the collect function knows.
	Labels []string
	// Collect returns the family's samples. It is called by WriteText with no lock of the
	// registry held, so it may take the engine's locks (package comment). Samples with the
	// same label values are summed; a sample without one value per label is left out and
	// reported with ErrCollect.
	Collect func() []Sample
	// Limit is how many distinct values of the first label are written: those seen first in
	// what Collect returns. The samples of every other value are summed under Other (so a
	// counter under Other may go down when the values kept change). Zero: DefaultLimit.
	Limit int
}

// Collect registers the collected family c.
func (r *Registry) Collect(c Collected) error {
	if c.Kind != KindCounter && c.Kind != KindGauge {
		return fmt.Errorf("metric %q: a collected family is a counter or a gauge: %w", c.Name, ErrInvalid)
	}
	if c.Collect == nil {
		return fmt.Errorf("metric %q: a collected family needs its Collect function: %w", c.Name, ErrInvalid)
	}
	if c.Limit < 0 {
		return fmt.Errorf("metric %q: limit %d must not be negative: %w", c.Name, c.Limit, ErrInvalid)
	}
	f, err := newFamily(c.Name, c.Help, c.Kind, c.Labels)
	if err != nil {
		return err
	}
	f.collect = c.Collect
	f.limit = c.Limit
	if f.limit == 0 {
		f.limit = DefaultLimit
	}
	return r.add(f, []string{c.Name})
}

// collection is one call of a collect function, with what it returned or panicked with.
type collection struct {
	samples  []Sample
	panicked interface{}
}

func (c *collection) run(collect func() []Sample) {
	defer c.recovered()
	c.samples = collect()
}

// recovered keeps a panic of the collect function: the registry's caller serves the
// exposition from a Traefik handler, which a panic must not reach.
func (c *collection) recovered() {
	if p := recover(); p != nil {
		c.panicked = p
	}
}

// appendCollected calls f's collect function and appends its series, sorted by label values.
func (f *family) appendCollected(b []byte) ([]byte, error) {
	c := &collection{}
	c.run(f.collect)
	if c.panicked != nil {
		return b, fmt.Errorf("metric %q: collect panicked: %v: %w", f.name, c.panicked, ErrCollect)
	}
	series, bad := fold(f.labels, c.samples, f.limit)
	for _, s := range series {
		b = append(b, f.name...)
		if s.labels != "" {
			b = append(b, '{')
			b = append(b, s.labels...)
			b = append(b, '}')
		}
		b = append(b, ' ')
		b = appendFloat(b, s.value)
		b = append(b, '\n')
	}
	if bad > 0 {
		return b, fmt.Errorf("metric %q: %d sample(s) without one value for each label of %q: %w", f.name, bad, f.labels, ErrCollect)
	}
	return b, nil
}

// collected is one series of a collected family: its labels, written out, and its value.
type collected struct {
	labels string
	value  float64
}

// fold returns the series of samples: those of the first limit distinct values of the first
// label as they are, the others with that value replaced by Other, samples of the same labels
// summed, sorted by labels. It also returns how many samples it left out for not having one
// value per label.
func fold(labels []string, samples []Sample, limit int) ([]collected, int) {
	var keys []string
	sums := make(map[string]float64)
	bad := 0
	kept := make(map[string]bool)
	for _, s := range samples {
		if len(s.Values) != len(labels) {
			bad++
			continue
		}
		values := s.Values
		if len(values) > 0 && !kept[values[0]] {
			if len(kept) < limit {
				kept[values[0]] = true
			} else {
				values = append([]string{Other}, values[1:]...)
			}
		}
		k := string(appendLabels(nil, labels, values))
		if _, ok := sums[k]; !ok {
			keys = append(keys, k)
		}
		sums[k] += s.Value
	}
	// sort.Strings runs compiled; sort.Slice would call an interpreted function back for
	// every comparison.
	sort.Strings(keys)
	series := make([]collected, len(keys))
	for i, k := range keys {
		series[i] = collected{labels: k, value: sums[k]}
	}
	return series, bad
}
