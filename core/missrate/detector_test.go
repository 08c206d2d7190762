package missrate

import (
	"hash/maphash"
	"strconv"
	"testing"
	"time"

	"github.com/weirproxy/weir/internal/await"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// driver plays the engine: it observes lookups on an injected clock and keeps the anomalies.
type driver struct {
	d         *Detector
	now       time.Time
	anomalies []*Anomaly
}

func newDriver(t *testing.T, s Settings) *driver {
	t.Helper()
	d, err := New(s)
	if err != nil {
		t.Fatalf("New(%+v) error = %v", s, err)
	}
	return &driver{d: d, now: t0}
}

func (r *driver) observe(partition string, miss bool, query string) {
	if !miss {
		Hit(r.d, partition)
		return
	}
	if a := Miss(r.d, partition, query, r.now); a != nil {
		r.anomalies = append(r.anomalies, a)
	}
}

// flood observes n misses on partition, one every step, with the queries query(i) makes.
func (r *driver) flood(partition string, n int, step time.Duration, query func(i int) string) {
	for i := 0; i < n; i++ {
		r.observe(partition, true, query(i))
		r.now = r.now.Add(step)
	}
}

func cacheBuster(i int) string { return "cb=" + strconv.Itoa(i) + "&lang=en" }

func slotOf(d *Detector, partition string) *slot {
	return d.slots[maphash.String(d.seed, partition)&slotMask]
}

// collidingPartition finds a partition other than p that shares p's slot.
func collidingPartition(t *testing.T, d *Detector, p string) string {
	t.Helper()
	want := slotOf(d, p)
	for i := 0; i < 100000; i++ {
		q := "https://shop.example/quiet/" + strconv.Itoa(i)
		if q != p && slotOf(d, q) == want {
			return q
		}
	}
	t.Fatalf("no partition shares the slot of %q", p)
	return ""
}

func TestFloodRaisesOneAnomaly(t *testing.T) {
	const p = "https://shop.example/search"
	r := newDriver(t, Settings{})
	r.flood(p, 2000, 4*time.Millisecond, cacheBuster)
	if len(r.anomalies) != 1 {
		t.Fatalf("got %d anomalies after 2000 misses, want 1", len(r.anomalies))
	}
	a := r.anomalies[0]
	if a.Partition != p {
		t.Errorf("Partition = %q, want %q", a.Partition, p)
	}
	if a.Requests != 500 || a.Misses != 500 {
		t.Errorf("Requests, Misses = %d, %d, want 500, 500", a.Requests, a.Misses)
	}
	if a.Window != DefaultWindow {
		t.Errorf("Window = %v, want %v", a.Window, DefaultWindow)
	}
	if !a.Since.Equal(t0) {
		t.Errorf("Since = %v, want %v", a.Since, t0)
	}
	if want := t0.Add(499 * 4 * time.Millisecond); !a.At.Equal(want) {
		t.Errorf("At = %v, want %v", a.At, want)
	}
	if len(a.Varying) != 1 || a.Varying[0] != "cb" {
		t.Errorf("Varying = %q, want [cb]", a.Varying)
	}
	if a.Throttled {
		t.Errorf("Throttled = true, want false by default")
	}

	// The flood goes on for four more windows: still the same anomaly.
	r.flood(p, 10000, 4*time.Millisecond, cacheBuster)
	if len(r.anomalies) != 1 {
		t.Errorf("got %d anomalies while the flood lasts, want 1", len(r.anomalies))
	}
}

func TestFloodThatStopsAndReturnsIsTwoAnomalies(t *testing.T) {
	const p = "https://shop.example/search"
	r := newDriver(t, Settings{})
	r.flood(p, 3000, 4*time.Millisecond, cacheBuster)
	// Quiet for 40 s: a hit and a miss a second.
	for i := 0; i < 40; i++ {
		r.observe(p, false, "")
		r.observe(p, true, "cb=quiet")
		r.now = r.now.Add(time.Second)
	}
	if len(r.anomalies) != 1 {
		t.Fatalf("got %d anomalies after the first flood, want 1", len(r.anomalies))
	}
	r.flood(p, 3000, 4*time.Millisecond, cacheBuster)
	if len(r.anomalies) != 2 {
		t.Errorf("got %d anomalies after the second flood, want 2", len(r.anomalies))
	}
}

func TestNormalLoadRaisesNone(t *testing.T) {
	tests := []struct {
		desc        string
		paths       int
		perSecond   int // lookups per path and second
		missPercent int
		seconds     int
	}{
		{desc: "busy paths, half missing", paths: 4, perSecond: 200, missPercent: 50, seconds: 30},
		{desc: "many paths, mostly hits", paths: 300, perSecond: 5, missPercent: 10, seconds: 30},
		{desc: "one path missing always, below MinMisses", paths: 1, perSecond: 45, missPercent: 100, seconds: 30},
		{desc: "one path missing at 85%", paths: 1, perSecond: 200, missPercent: 85, seconds: 30},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			r := newDriver(t, Settings{Throttle: true})
			paths := make([]string, tc.paths)
			for i := range paths {
				paths[i] = "https://shop.example/p/" + strconv.Itoa(i)
			}
			step := time.Second / time.Duration(tc.perSecond*tc.paths)
			for i := 0; i < tc.seconds*tc.perSecond; i++ {
				miss := i%100 < tc.missPercent
				for _, p := range paths {
					r.observe(p, miss, "page="+strconv.Itoa(i))
					if miss {
						if ok, _ := AllowFetch(r.d, p, r.now); !ok {
							t.Fatalf("AllowFetch(%q) refused under normal load", p)
						}
					}
					r.now = r.now.Add(step)
				}
			}
			if len(r.anomalies) != 0 {
				t.Errorf("got %d anomalies (first %+v), want none", len(r.anomalies), r.anomalies[0])
			}
		})
	}
}

func TestAnomalyAtMinMisses(t *testing.T) {
	tests := []struct {
		desc      string
		minMisses int
	}{
		{desc: "one", minMisses: 1},
		{desc: "small", minMisses: 7},
		{desc: "default", minMisses: 500},
		{desc: "judged every 20, not a multiple", minMisses: 1001},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			r := newDriver(t, Settings{MinMisses: tc.minMisses})
			r.flood("https://shop.example/search", tc.minMisses, time.Millisecond, cacheBuster)
			if len(r.anomalies) != 1 {
				t.Fatalf("got %d anomalies after %d misses, want 1", len(r.anomalies), tc.minMisses)
			}
			if got := r.anomalies[0].Misses; got != tc.minMisses {
				t.Errorf("Misses = %d, want %d: raised at the MinMisses-th miss", got, tc.minMisses)
			}
		})
	}
}

func TestVaryingParameters(t *testing.T) {
	tests := []struct {
		desc      string
		query     func(i int) string
		wantFirst string
		wantAlso  []string
		wantNot   []string
	}{
		{desc: "cache buster", query: cacheBuster, wantFirst: "cb", wantNot: []string{"lang"}},
		{
			desc:      "tracking id missing from queryDrop",
			query:     func(i int) string { return "q=shoes&gclid=" + strconv.Itoa(i*7919) + "&utm_source=news" },
			wantFirst: "gclid",
			wantNot:   []string{"q", "utm_source"},
		},
		{
			desc:      "escaped name",
			query:     func(i int) string { return "utm%5Fid=" + strconv.Itoa(i) + "&x=1" },
			wantFirst: "utm_id",
			wantNot:   []string{"x", "utm%5Fid"},
		},
		{
			desc:     "two varying",
			query:    func(i int) string { return "a=" + strconv.Itoa(i) + "&b=" + strconv.Itoa(i*31) + "&c=1" },
			wantAlso: []string{"a", "b"},
			wantNot:  []string{"c"},
		},
		{desc: "no query", query: func(i int) string { return "" }},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			r := newDriver(t, Settings{})
			r.flood("https://shop.example/search", 500, time.Millisecond, tc.query)
			if len(r.anomalies) != 1 {
				t.Fatalf("got %d anomalies, want 1", len(r.anomalies))
			}
			got := r.anomalies[0].Varying
			if len(got) > topVarying {
				t.Errorf("Varying = %q, want at most %d names", got, topVarying)
			}
			if tc.wantFirst != "" && (len(got) == 0 || got[0] != tc.wantFirst) {
				t.Errorf("Varying = %q, want %q first", got, tc.wantFirst)
			}
			if tc.wantFirst == "" && len(tc.wantAlso) == 0 && len(got) != 0 {
				t.Errorf("Varying = %q, want none", got)
			}
			for _, name := range tc.wantAlso {
				if !contains(got, name) {
					t.Errorf("Varying = %q, want it to name %q", got, name)
				}
			}
			for _, name := range tc.wantNot {
				if contains(got, name) {
					t.Errorf("Varying = %q, want it not to name %q", got, name)
				}
			}
		})
	}
}

func contains(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

func TestMemoryBounded(t *testing.T) {
	const p = "https://shop.example/search"
	// Ratio 1 and one hit: the path never qualifies, so its slot samples all window long.
	r := newDriver(t, Settings{MinMisses: 1000, Ratio: 1})
	// Many paths: the slots do not grow.
	for i := 0; i < 20000; i++ {
		n := strconv.Itoa(i)
		r.observe("https://shop.example/p/"+n, i%3 != 0, "cb="+n)
		r.now = r.now.Add(100 * time.Microsecond)
	}
	// Many parameter names on one path: its slot's sample does not grow.
	for i := 0; i < 5000; i++ {
		n := strconv.Itoa(i)
		r.observe(p, i != 1, "name"+n+"=v&other"+n+"=w&cb="+n)
		r.now = r.now.Add(100 * time.Microsecond)
	}
	if len(r.d.slots) != Slots {
		t.Fatalf("len(slots) = %d, want %d", len(r.d.slots), Slots)
	}
	if got := len(slotOf(r.d, p).params.entries); got != maxParams {
		t.Errorf("busy slot remembers %d parameter names, want the table full at %d", got, maxParams)
	}
	if got := slotOf(r.d, p).params.samples; got != maxSamples {
		t.Errorf("busy slot took %d samples, want %d", got, maxSamples)
	}
	for i, s := range r.d.slots {
		if len(s.params.entries) > maxParams || cap(s.params.entries) != maxParams {
			t.Errorf("slot %d: %d parameter names (capacity %d), want at most %d", i, len(s.params.entries), cap(s.params.entries), maxParams)
		}
		if len(s.params.index) != len(s.params.entries) {
			t.Errorf("slot %d: index holds %d names, entries %d", i, len(s.params.index), len(s.params.entries))
		}
	}
}

func TestClockGoingBackwards(t *testing.T) {
	const p = "https://shop.example/search"
	r := newDriver(t, Settings{Throttle: true})
	r.flood(p, 300, time.Millisecond, cacheBuster)
	r.now = r.now.Add(-time.Hour)
	r.flood(p, 300, time.Millisecond, cacheBuster)
	if len(r.anomalies) != 0 {
		t.Errorf("got %d anomalies, want none: the jump back starts a new window", len(r.anomalies))
	}
	r.flood(p, 300, time.Millisecond, cacheBuster)
	if len(r.anomalies) != 1 {
		t.Errorf("got %d anomalies, want 1", len(r.anomalies))
	}
}

func TestConcurrentUse(t *testing.T) {
	d, err := New(Settings{Throttle: true, MinMisses: 50, Ratio: 0.5})
	if err != nil {
		t.Fatalf("New() error = %v", err)
	}
	const workers = 4
	results := make(chan int, workers)
	await.Goroutines(t, workers, 10*time.Second, "concurrent Observe and AllowFetch", func(w int) {
		anomalies := 0
		// One instant for all: a clock that went backwards between workers would start new
		// windows.
		now := t0
		for i := 0; i < 500; i++ {
			p := "https://shop.example/p/" + strconv.Itoa(i%7)
			if i%5 == 0 {
				Hit(d, p)
			} else if Miss(d, p, "cb="+strconv.Itoa(i*w), now) != nil {
				anomalies++
			}
			AllowFetch(d, p, now)
		}
		results <- anomalies
	})
	close(results)
	total := 0
	for n := range results {
		total += n
	}
	// Seven partitions missing 80% of the time: each slot they use is flagged once.
	if total == 0 || total > 7 {
		t.Errorf("got %d anomalies, want between 1 and 7", total)
	}
}
