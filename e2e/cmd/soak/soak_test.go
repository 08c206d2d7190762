package main

import (
	"encoding/xml"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"time"
)

func TestScheduleMeetsEveryFault(t *testing.T) {
	for _, tt := range []struct {
		desc string
		d    time.Duration
	}{
		{desc: "the shortest run", d: minimumRunDuration},
		{desc: "CI's two minutes", d: 2 * time.Minute},
		{desc: "ten minutes", d: 10 * time.Minute},
		{desc: "the hour", d: time.Hour},
		{desc: "longer than the hour", d: 3 * time.Hour},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			s := newSchedule(tt.d)
			end := tt.d - quietTail
			if len(s.redisRestarts) == 0 {
				t.Errorf("no Redis restart:\n%s", s)
			}
			if s.redisStop.to <= s.redisStop.from || s.redisStop.to > end {
				t.Errorf("Redis stop %s, want one within 0:00-%s", s.redisStop, clock(end))
			}
			for _, r := range s.redisRestarts {
				if r >= s.redisStop.from && r <= s.redisStop.to {
					t.Errorf("Redis restart at %s inside its stop %s", clock(r), s.redisStop)
				}
				if r > end {
					t.Errorf("Redis restart at %s, after %s", clock(r), clock(end))
				}
			}
			if len(s.originFaults) == 0 || len(s.floods) == 0 {
				t.Errorf("origin faults %v, floods %v: want each at least once\n%s", s.originFaults, s.floods, s)
			}
			for _, w := range append(append([]window(nil), s.originFaults...), s.floods...) {
				if w.from <= 0 || w.to > end {
					t.Errorf("window %s outside 0:00-%s", w, clock(end))
				}
			}
		})
	}
}

func TestScheduleOfTheHourIsNominal(t *testing.T) {
	s := newSchedule(time.Hour)
	if got, want := len(s.redisRestarts), 10; got != want {
		t.Errorf("Redis restarts: got %d, want %d (every 5 minutes, one of the 11 a stop)\n%s", got, want, s)
	}
	if got, want := s.redisStop.to-s.redisStop.from, time.Minute; got != want {
		t.Errorf("Redis stop: got %v, want %v", got, want)
	}
	if got, want := len(s.originFaults), 6; got != want {
		t.Errorf("origin faults: got %d, want %d\n%s", got, want, s)
	}
	for _, w := range s.originFaults {
		if got, want := w.to-w.from, 30*time.Second; got != want {
			t.Errorf("origin fault %s lasts %v, want %v", w, got, want)
		}
	}
	if got, want := s.floods[1].from-s.floods[0].from, 3*time.Minute; got != want {
		t.Errorf("floods every %v, want %v", got, want)
	}
}

func TestClassify(t *testing.T) {
	s := schedule{duration: 2 * time.Minute, originFaults: []window{{from: 50 * time.Second, to: 60 * time.Second}}}
	at := func(sec int) (time.Duration, time.Duration) {
		return time.Duration(sec) * time.Second, time.Duration(sec)*time.Second + 10*time.Millisecond
	}
	ok := answer{status: 200, body: "hit k=1 xxxx", wantLead: "hit k=1 ", wantLen: 12}
	for _, tt := range []struct {
		desc string
		a    answer
		want string
	}{
		{desc: "an answer as asked", a: ok, want: kindOK},
		{desc: "another URL's body", a: answer{status: 200, body: "hit k=2 xxxx", wantLead: "hit k=1 ", wantLen: 12}, want: kindBody},
		{desc: "a short body", a: answer{status: 200, body: "hit k=1 x", wantLead: "hit k=1 ", wantLen: 12}, want: kindBody},
		{desc: "a hang-up reads no length", a: answer{status: 200, body: "big k=1 xx", wantLead: "big k=1 "}, want: kindOK},
		{desc: "a refusal", a: answer{status: 503, retryAfter: "1", cacheStatus: "Weir; fwd=uri-miss; detail=queue-full"}, want: "refused_queue-full"},
		{desc: "a breaker's refusal", a: answer{status: 503, retryAfter: "4", cacheStatus: "Weir; fwd=uri-miss; detail=circuit-open; key=127.0.0.1"}, want: "refused_circuit-open"},
		{desc: "a budget's 429", a: answer{status: 429, retryAfter: "2", cacheStatus: "Weir; detail=over-budget"}, want: "refused_over-budget"},
		{desc: "a refusal without Retry-After", a: answer{status: 503, cacheStatus: "Weir; fwd=uri-miss; detail=queue-full"}, want: kindRefusal},
		{desc: "a 429 of no registered reason", a: answer{status: 429, retryAfter: "1", cacheStatus: "Weir; detail=tired"}, want: kindRefusal},
		{desc: "a 503 of no registered reason, no fault", a: answer{status: 503, retryAfter: "1", cacheStatus: "Weir; detail=tired"}, want: kindStatus},
		{desc: "the origin's 503 passed on", a: func() answer {
			a := answer{status: 503, cacheStatus: "Weir; fwd=uri-miss; detail=origin-error"}
			a.from, a.to = at(51)
			return a
		}(), want: kindOrigin503},
		{desc: "a negative entry's 503 just after the fault", a: func() answer {
			a := answer{status: 503, retryAfter: "2", cacheStatus: "Weir; hit; ttl=2; detail=negative"}
			a.from, a.to = at(61)
			return a
		}(), want: kindOrigin503},
		{desc: "the failing origin's 503", a: func() answer { a := answer{status: 503}; a.from, a.to = at(52); return a }(), want: kindOrigin503},
		{desc: "a 502 while the origin drops connections", a: func() answer { a := answer{status: 502}; a.from, a.to = at(58); return a }(), want: kindOrigin502},
		{desc: "a 502 within the grace after the fault", a: func() answer { a := answer{status: 502}; a.from, a.to = at(65); return a }(), want: kindOrigin502},
		{desc: "a 502 long after the fault", a: func() answer { a := answer{status: 502}; a.from, a.to = at(90); return a }(), want: kindStatus},
		{desc: "a 503 with no fault", a: func() answer { a := answer{status: 503}; a.from, a.to = at(10); return a }(), want: kindStatus},
		{desc: "a 500 in the fault", a: func() answer { a := answer{status: 500}; a.from, a.to = at(52); return a }(), want: kindStatus},
		{desc: "a 404", a: answer{status: 404}, want: kindStatus},
		{desc: "a reset connection", a: answer{err: errors.New("read: connection reset by peer")}, want: kindTransport},
		{desc: "a timeout", a: answer{err: timeoutErr{}}, want: kindTimeout},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			if got := classify(tt.a, s); got != tt.want {
				t.Errorf("classify: got %q, want %q", got, tt.want)
			}
		})
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestTheilSenIgnoresOutliers(t *testing.T) {
	xs := []float64{0, 1, 2, 3, 4, 5, 6}
	ys := []float64{100, 102, 104, 400, 108, 110, 112} // a flood caught by one sample
	if got, want := theilSen(xs, ys), 2.0; math.Abs(got-want) > 1e-9 {
		t.Errorf("theilSen: got %v, want %v", got, want)
	}
}

func TestFitGrowth(t *testing.T) {
	mk := func(ys ...int64) []sample {
		var out []sample
		for i, y := range ys {
			out = append(out, sample{at: time.Duration(i) * time.Minute, goroutines: y})
		}
		return out
	}
	value := func(s sample) int64 { return s.goroutines }
	for _, tt := range []struct {
		desc    string
		samples []sample
		want    bool
	}{
		{desc: "flat with a spike", samples: mk(300, 300, 300, 310, 290, 700, 305, 300, 298), want: false},
		{desc: "a steady leak", samples: mk(300, 300, 300, 300, 400, 500, 600, 700, 800), want: true},
		{desc: "a small drift under the floor", samples: mk(300, 300, 300, 300, 310, 320, 330, 340, 350), want: false},
		{desc: "too few samples", samples: mk(300, 900), want: false},
		{desc: "unread samples left out", samples: mk(300, 300, 300, 300, -1, 301, -1, 300, 302), want: false},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			g := fitGrowth("goroutines", tt.samples, 4, value, goroutineFloor)
			if got := g.exceeded(); got != tt.want {
				t.Errorf("exceeded: got %v, want %v (%s)", got, tt.want, g)
			}
		})
	}
}

func TestChartIsWellFormed(t *testing.T) {
	c := chart{
		title: "a <title> & more", unit: "MiB", xs: []float64{0, 1, 2},
		lines:  []series{{name: "a", ys: []float64{1, math.NaN(), 3}}, {name: "b", ys: []float64{0, 0, 0}, dashed: true}},
		bands:  []band{{from: 0.5, to: 1, fill: "#ff7f0e"}},
		marks:  []mark{{at: 1.5, stroke: "#d62728"}},
		legend: faultLegend,
	}
	d := xml.NewDecoder(strings.NewReader(c.svg()))
	polylines := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			polylines++
		}
	}
	// Series a is broken in two by its gap; b is one line.
	if got, want := polylines, 3; got != want {
		t.Errorf("polylines: got %d, want %d", got, want)
	}
}

func TestParseMetrics(t *testing.T) {
	text := `# HELP weir_cache_bytes Bytes.
# TYPE weir_cache_bytes gauge
weir_cache_bytes 1048576
weir_shed_total{reason="queue-full"} 3
weir_shed_total{reason="circuit-open"} 4
weir_store_breaker_open 0
`
	m, err := parseMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{"weir_cache_bytes": 1 << 20, "weir_shed_total": 7, "weir_store_breaker_open": 0} {
		if got, ok := m[name]; !ok || got != want {
			t.Errorf("%s: got %v (present %v), want %v", name, got, ok, want)
		}
	}
}

func TestJudgeStoreBreaker(t *testing.T) {
	mk := func(open ...int64) []sample {
		var out []sample
		for i, o := range open {
			out = append(out, sample{at: time.Duration(i+1) * 10 * time.Second, storeOpen: o, heapInuse: 200 << 20, heapLive: 100 << 20})
		}
		return out
	}
	for _, tt := range []struct {
		desc    string
		samples []sample
		fails   bool
	}{
		{desc: "open around the restarts", samples: mk(0, 1, 0, 1, 0, 0, 1, 1, 0, 0, 0, 0), fails: false},
		{desc: "open throughout", samples: mk(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1), fails: true},
		{desc: "unread samples left out", samples: mk(-1, -1, 0, 0), fails: false},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			v := judge(tt.samples, 2, 8<<20, snapshot{counts: map[string]int64{}}, nil, nil)
			if got := len(v.failures) > 0; got != tt.fails {
				t.Errorf("fails: got %v, want %v (%v)", got, tt.fails, v.failures)
			}
		})
	}
}

func TestLiveHeap(t *testing.T) {
	for _, tt := range []struct {
		desc   string
		env    string
		nextGC int64
		want   int64
	}{
		{desc: "GOGC unset: half the goal", env: "", nextGC: 260 << 20, want: 130 << 20},
		{desc: "GOGC=50", env: "50", nextGC: 150 << 20, want: 100 << 20},
		{desc: "GOGC=200", env: "200", nextGC: 300 << 20, want: 100 << 20},
		{desc: "GOGC not a number: 100, as the runtime reads it", env: "x", nextGC: 200 << 20, want: 100 << 20},
		{desc: "GOGC=off: not told", env: "off", nextGC: 200 << 20, want: -1},
		{desc: "GOGC negative: off", env: "-1", nextGC: 200 << 20, want: -1},
		{desc: "goal unread", env: "", nextGC: 0, want: -1},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			if got := liveHeap(tt.nextGC, gogcOf(tt.env)); got != tt.want {
				t.Errorf("liveHeap(%d, gogcOf(%q)): got %d, want %d", tt.nextGC, tt.env, got, tt.want)
			}
		})
	}
}

func TestJudgeLiveHeap(t *testing.T) {
	// mk makes 60 samples of a 10-minute run, the live heap live(i) MiB, the heap in use
	// twice that (the garbage GOGC=100 lets pile up).
	mk := func(live func(i int) int64) []sample {
		var out []sample
		for i := 0; i < 60; i++ {
			l := live(i) << 20
			if live(i) < 0 {
				l = -1
			}
			out = append(out, sample{at: time.Duration(i+1) * 10 * time.Second, heapLive: l, heapInuse: 2 * l, goroutines: 50, fds: 20})
		}
		return out
	}
	for _, tt := range []struct {
		desc    string
		samples []sample
		fails   string
	}{
		{desc: "flat under the limit, in use over it", samples: mk(func(int) int64 { return 150 }), fails: ""},
		{desc: "a flood's peak under the limit", samples: mk(func(i int) int64 {
			if i == 40 {
				return 210
			}
			return 140
		}), fails: ""},
		{desc: "over the limit", samples: mk(func(int) int64 { return 230 }), fails: "over the limit"},
		{desc: "a slow leak under the limit", samples: mk(func(i int) int64 { return 60 + 2*int64(i) }), fails: "grows without bound"},
		{desc: "unread", samples: mk(func(int) int64 { return -1 }), fails: "could not be read"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			// The limit: 2 x 12 MiB + 192 MiB = 216 MiB.
			v := judge(tt.samples, 10, 12<<20, snapshot{counts: map[string]int64{}}, nil, nil)
			got := strings.Join(v.failures, "; ")
			if tt.fails == "" && got != "" || !strings.Contains(got, tt.fails) {
				t.Errorf("failures: got %q, want one saying %q", got, tt.fails)
			}
		})
	}
}

func TestPartLabel(t *testing.T) {
	for _, tt := range []struct {
		desc     string
		duration float64
		want     string
	}{
		{desc: "the hour", duration: 60, want: "10 minutes"},
		{desc: "two minutes", duration: 2, want: "20 s"},
		{desc: "a quarter of an hour", duration: 15, want: "2.5 minutes"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			if got := partLabel(tt.duration); got != tt.want {
				t.Errorf("partLabel(%v): got %q, want %q", tt.duration, got, tt.want)
			}
		})
	}
}
