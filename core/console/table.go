package console

import (
	"sort"
	"sync"
	"time"
)

// A Table's window: fifteen slots of a minute each.
const (
	// WindowSeconds is how far back a Table counts: fifteen minutes.
	WindowSeconds = 900
	slotSeconds   = 60
	slotCount     = WindowSeconds / slotSeconds
	// MaxKeyBytes bounds a key a Table holds: a longer one is cut, so that a flood of long
	// names cannot grow a row.
	MaxKeyBytes = 256
)

// victimSample is how many rows take looks at for the one a new key replaces.
const victimSample = 8

// latencyBounds are the upper bounds of a row's latency buckets (the last, unbounded, is
// implicit): enough to tell a p95 of 20ms from one of 2s.
var latencyBounds = []time.Duration{
	5 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second,
}

// Table counts events by key (a host, a partition) over the last fifteen minutes, in a fixed
// number of rows: a space-saving sketch. A key not held takes the row of one not seen within
// the window, else of the least counted of a few rows sampled, and inherits that row's weight (the sketch's
// bound: a key's weight overcounts it by at most the weight it inherited), so the busiest
// keys stay and a flood of distinct keys churns only the quietest row. What no row holds
// any longer is still in the totals, shown as "other". Safe for concurrent use.
type Table struct {
	fields   int
	capacity int
	// mu guards rows and all.
	mu   sync.Mutex
	rows map[string]*row
	all  *row
}

// row is one key's counts: per field and minute slot, and its latency buckets since it
// took the row.
type row struct {
	key string
	// last is the second (Unix) of the last count; weight is the sketch's count.
	last   int64
	weight int64
	// minute holds the minute (Unix seconds / 60) each slot counts (slotCount of them);
	// counts the slots' counts, slot by slot, fields within; latency the latency buckets'
	// counts (latencyBuckets). Slices, not arrays: under Yaegi `r.minute[s]` of an array
	// field takes a slot of the whole array on every call of Add, twice a row (docs/yaegi.md).
	minute  []int64
	counts  []int64
	latency []int64
}

// NewTable returns a Table of keys with fields counts each, holding at most capacity keys.
func NewTable(fields, capacity int) *Table {
	if capacity < 1 {
		capacity = 1
	}
	return &Table{fields: fields, capacity: capacity, rows: make(map[string]*row), all: newRow("", fields)}
}

// latencyBuckets is how many latency buckets a row counts: one per bound and one past them.
const latencyBuckets = 12

func newRow(key string, fields int) *row {
	return &row{key: key, minute: make([]int64, slotCount), counts: make([]int64, slotCount*fields), latency: make([]int64, latencyBuckets)}
}

// Bytes bounds the memory the table's rows hold, keys included, when full.
func (t *Table) Bytes() int {
	perRow := 8*slotCount*(1+t.fields) + 8*latencyBuckets + MaxKeyBytes + 64 + 3*24
	// A map entry per row: the key's header and the pointer, with the map's overhead.
	return (t.capacity+1)*perRow + t.capacity*64
}

// Len is how many keys the table holds.
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.rows)
}

// Note counts one event of field for key at second now (Unix), and the latency took when it
// is not negative. It is Add of one, as a method.
func (t *Table) Note(key string, now int64, field int, took time.Duration) {
	Add(t, key, now, field, 1, took)
}

// Add counts n events of field for key at second now (Unix) in t, and the latency took
// when it is not negative: one event, or one seen of every n and counted for all of them (a
// sampled count, whose latency, if any, counts once). A function written out, with no defer
// and no call but for a key not held or a slot to clear: every origin fetch and every
// refusal counts twice (its host's row and its partition's), the hit path's sampled hit
// once, and under Yaegi each call, method call and defer costs its frame (docs/yaegi.md;
// the figures in docs/benchmarks.md, "A cheaper miss").
func Add(t *Table, key string, now int64, field int, n int64, took time.Duration) {
	fields := t.fields
	if n < 1 || field < 0 || field >= fields {
		return
	}
	if len(key) > MaxKeyBytes {
		key = key[:MaxKeyBytes]
	}
	m := now / slotSeconds
	s := int(m % slotCount)
	i := s*fields + field
	// The latency's bucket (latencyBucket), found before the lock is taken.
	b := 0
	for b < len(latencyBounds) && took > latencyBounds[b] {
		b++
	}
	t.mu.Lock()
	r := t.rows[key]
	if r == nil {
		r = t.take(key, now)
	}
	if r.minute[s] != m {
		clearSlot(r, s, m, fields)
	}
	r.counts[i] += n
	r.last = now
	r.weight += n
	a := t.all
	if a.minute[s] != m {
		clearSlot(a, s, m, fields)
	}
	a.counts[i] += n
	a.last = now
	if took >= 0 {
		r.latency[b]++
		a.latency[b]++
	}
	t.mu.Unlock()
}

// take gives key a row: a new one while there is room, else the row of a key not seen in
// the window or, failing one, of the least weight.
func (t *Table) take(key string, now int64) *row {
	if len(t.rows) < t.capacity {
		r := newRow(key, t.fields)
		t.rows[key] = r
		return r
	}
	var victim *row
	seen := 0
	for _, r := range t.rows {
		if r.last <= now-WindowSeconds {
			victim = r
			break
		}
		if victim == nil || r.weight < victim.weight {
			victim = r
		}
		// Map iteration starts anywhere: the least of a few rows, not of all, keeps a flood
		// of distinct keys from costing a scan of the table each (the busiest rows, whose
		// weight is above most, are left all the same).
		seen++
		if seen == victimSample {
			break
		}
	}
	delete(t.rows, victim.key)
	weight := victim.weight
	if victim.last <= now-WindowSeconds {
		weight = 0
	}
	for i := range victim.counts {
		victim.counts[i] = 0
	}
	for i := range victim.minute {
		victim.minute[i] = 0
	}
	for i := range victim.latency {
		victim.latency[i] = 0
	}
	victim.key, victim.weight = key, weight
	t.rows[key] = victim
	return victim
}

// clearSlot gives r's slot s to minute m, its counts cleared.
func clearSlot(r *row, s int, m int64, fields int) {
	r.minute[s] = m
	for i := 0; i < fields; i++ {
		r.counts[s*fields+i] = 0
	}
}

// Row is one key's counts over the window, as Rows returns them.
type Row struct {
	Key string
	// Counts are per field, over the window.
	Counts []int64
	// P95 is the 95th percentile of the latencies noted, the upper bound of its bucket
	// (zero: none noted; 10s past the last bound).
	P95 time.Duration
	// Last is the second (Unix) of the key's last count.
	Last int64
}

// Rows returns up to n keys seen within the window before now (Unix seconds), by their
// counts of field (out of range: of every field together), most first (ties by key), and the sum of the others as other (Key "")
// with the totals' latency.
func (t *Table) Rows(now int64, field, n int) ([]Row, Row) {
	t.mu.Lock()
	var out []Row
	for _, r := range t.rows {
		if r.last <= now-WindowSeconds {
			continue
		}
		out = append(out, r.view(now, t.fields))
	}
	total := t.all.view(now, t.fields)
	t.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		a, b := weightOf(out[i], field), weightOf(out[j], field)
		if a != b {
			return a > b
		}
		return out[i].Key < out[j].Key
	})
	if len(out) > n {
		out = out[:n]
	}
	other := Row{Counts: total.Counts}
	for _, r := range out {
		for i, c := range r.Counts {
			other.Counts[i] -= c
		}
	}
	for i, c := range other.Counts {
		if c < 0 {
			other.Counts[i] = 0
		}
	}
	return out, other
}

// view sums r's slots within the window before now.
func (r *row) view(now int64, fields int) Row {
	v := Row{Key: r.key, Counts: make([]int64, fields), Last: r.last}
	m := now / slotSeconds
	for s := 0; s < slotCount; s++ {
		if r.minute[s] <= m-slotCount || r.minute[s] > m {
			continue
		}
		for i := 0; i < fields; i++ {
			v.Counts[i] += r.counts[s*fields+i]
		}
	}
	v.P95 = percentile(r.latency, 0.95)
	return v
}

// percentile is the upper bound of the bucket holding the q-th share of counts; zero when
// they hold nothing.
func percentile(counts []int64, q float64) time.Duration {
	var n int64
	for _, c := range counts {
		n += c
	}
	if n == 0 {
		return 0
	}
	want := int64(q*float64(n) + 0.5)
	if want < 1 {
		want = 1
	}
	var seen int64
	for i, c := range counts {
		seen += c
		if seen >= want {
			if i < len(latencyBounds) {
				return latencyBounds[i]
			}
			break
		}
	}
	return latencyBounds[len(latencyBounds)-1]
}

// weightOf is r's count of field, or of every field when field is out of range.
func weightOf(r Row, field int) int64 {
	if field >= 0 && field < len(r.Counts) {
		return r.Counts[field]
	}
	var n int64
	for _, c := range r.Counts {
		n += c
	}
	return n
}
