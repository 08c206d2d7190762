package console

import "sync"

// The ring's shape: one sample a second for fifteen minutes.
const (
	// SeriesLength is how many samples a Series holds: 900, fifteen minutes of seconds.
	SeriesLength = 900
	// SeriesStep is the seconds between two samples.
	SeriesStep = 1
)

// Series is a fixed ring of samples, one a second, each a value per named column. Its
// memory is allocated by the first Add, once: SeriesLength times (8 bytes of time and 4 of
// each column), and never grows. Safe for concurrent use.
type Series struct {
	names []string
	// mu guards the ring.
	mu sync.Mutex
	// times holds each sample's second (Unix), cols each column's values (float32: four
	// bytes a value, precision enough for a chart); head is the next slot written, count
	// how many hold a sample.
	times []int64
	cols  [][]float32
	head  int
	count int
}

// NewSeries returns an empty Series with the columns names.
func NewSeries(names []string) *Series {
	return &Series{names: append([]string(nil), names...)}
}

// Names are the columns, in the order Add takes their values.
func (s *Series) Names() []string { return s.names }

// Add records the sample of second t (Unix), one value per column (missing ones are 0). A
// second not after the last recorded replaces the last sample's values: a clock stepping
// back never reorders the ring.
func (s *Series) Add(t int64, values []float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.times == nil {
		s.times = make([]int64, SeriesLength)
		s.cols = make([][]float32, len(s.names))
		for i := range s.cols {
			s.cols[i] = make([]float32, SeriesLength)
		}
	}
	at := s.head
	if s.count > 0 {
		last := (s.head + SeriesLength - 1) % SeriesLength
		if t <= s.times[last] {
			at = last
			t = s.times[last]
		}
	}
	s.times[at] = t
	for i := range s.cols {
		v := 0.0
		if i < len(values) {
			v = values[i]
		}
		s.cols[i][at] = float32(v)
	}
	if at == s.head {
		s.head = (s.head + 1) % SeriesLength
		if s.count < SeriesLength {
			s.count++
		}
	}
}

// Last is the second of the last sample, and whether there is one.
func (s *Series) Last() (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.count == 0 {
		return 0, false
	}
	return s.times[(s.head+SeriesLength-1)%SeriesLength], true
}

// View is a Series as the admin serves it: the samples oldest first, Values[i] being the
// column Names[i] at each of Times.
type View struct {
	Step   int         `json:"step"`
	Names  []string    `json:"names"`
	Times  []int64     `json:"times"`
	Values [][]float64 `json:"values"`
}

// View copies the samples from second since (Unix; 0: all) on.
func (s *Series) View(since int64) View {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := View{Step: SeriesStep, Names: s.names, Times: []int64{}, Values: make([][]float64, len(s.names))}
	for i := range v.Values {
		v.Values[i] = []float64{}
	}
	start := (s.head - s.count + SeriesLength) % SeriesLength
	for n := 0; n < s.count; n++ {
		at := (start + n) % SeriesLength
		if s.times[at] < since {
			continue
		}
		v.Times = append(v.Times, s.times[at])
		for i := range s.cols {
			v.Values[i] = append(v.Values[i], round4(float64(s.cols[i][at])))
		}
	}
	return v
}

// Bytes is the memory the ring holds once allocated, whether or not it is yet.
func (s *Series) Bytes() int {
	return SeriesLength * (8 + 4*len(s.names))
}

// Quantile estimates the q-th quantile (0 < q < 1) of observations counted in buckets
// (not cumulative) with upper bounds upper and an unbounded last one, interpolating within
// the bucket it falls in, as Prometheus's histogram_quantile does; zero when counts hold
// nothing, the last bound when it falls past it.
func Quantile(upper []float64, counts []int64, q float64) float64 {
	var n int64
	for _, c := range counts {
		n += c
	}
	if n == 0 || len(upper) == 0 {
		return 0
	}
	rank := q * float64(n)
	var seen int64
	for i, c := range counts {
		if c > 0 && float64(seen+c) >= rank {
			if i >= len(upper) {
				return upper[len(upper)-1]
			}
			lo := 0.0
			if i > 0 {
				lo = upper[i-1]
			}
			return lo + (upper[i]-lo)*(rank-float64(seen))/float64(c)
		}
		seen += c
	}
	return upper[len(upper)-1]
}

// round4 rounds v to four decimals, so that a float32 widened to float64 (0.775 read back
// as 0.7749999761581421) is written short: arithmetic, not math.Round, a call into compiled
// code that costs Yaegi far more.
func round4(v float64) float64 {
	if v < 0 {
		return -float64(int64(-v*1e4+0.5)) / 1e4
	}
	return float64(int64(v*1e4+0.5)) / 1e4
}
