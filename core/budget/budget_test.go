package budget

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func mustNew(t *testing.T, s Settings) *Table {
	t.Helper()
	tb, err := New(s)
	if err != nil {
		t.Fatalf("New(%+v): %v", s, err)
	}
	return tb
}

func TestParseRate(t *testing.T) {
	cases := []struct {
		desc string
		in   string
		want Rate
		err  bool
	}{
		{desc: "per 10s", in: "200/10s", want: Rate{N: 200, Per: 10 * time.Second}},
		{desc: "per second", in: "5/1s", want: Rate{N: 5, Per: time.Second}},
		{desc: "per minute", in: " 60 / 1m ", want: Rate{N: 60, Per: time.Minute}},
		{desc: "bare unit", in: "3/s", want: Rate{N: 3, Per: time.Second}},
		{desc: "zero", in: "0/10s", err: true},
		{desc: "negative", in: "-1/10s", err: true},
		{desc: "no slash", in: "200", err: true},
		{desc: "other period", in: "200/5s", err: true},
		{desc: "not a number", in: "many/10s", err: true},
		{desc: "empty", in: "", err: true},
	}
	for _, c := range cases {
		got, err := ParseRate(c.in)
		if c.err {
			if !errors.Is(err, ErrRate) {
				t.Errorf("%s: ParseRate(%q) error = %v, want ErrRate", c.desc, c.in, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: ParseRate(%q) = %+v, %v; want %+v", c.desc, c.in, got, err, c.want)
		}
	}
}

func TestRateString(t *testing.T) {
	for _, in := range []string{"200/10s", "5/1s", "60/1m"} {
		r, err := ParseRate(in)
		if err != nil {
			t.Fatalf("ParseRate(%q): %v", in, err)
		}
		if got := r.String(); got != in {
			t.Errorf("ParseRate(%q).String() = %q, want it back", in, got)
		}
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		desc string
		s    Settings
	}{
		{desc: "no rate", s: Settings{}},
		{desc: "negative burst", s: Settings{Rate: Rate{N: 1, Per: time.Second}, Burst: -time.Second}},
		{desc: "negative bound", s: Settings{Rate: Rate{N: 1, Per: time.Second}, MaxBuckets: -1}},
	}
	for _, c := range cases {
		if _, err := New(c.s); !errors.Is(err, ErrSettings) {
			t.Errorf("%s: New error = %v, want ErrSettings", c.desc, err)
		}
	}
}

// TestBurstThenRate: 20/10s with a burst of 2s allows 4 at once, then one every 500ms.
func TestBurstThenRate(t *testing.T) {
	tb := mustNew(t, Settings{Rate: Rate{N: 20, Per: 10 * time.Second}, Burst: 2 * time.Second})
	for i := 0; i < 4; i++ {
		if wait := Take(tb, "a", t0); wait != 0 {
			t.Fatalf("request %d of the burst: waits %s, want allowed", i+1, wait)
		}
	}
	if wait := Take(tb, "a", t0); wait != 500*time.Millisecond {
		t.Fatalf("fifth request at once: waits %s, want 500ms", wait)
	}
	if wait := Take(tb, "b", t0); wait != 0 {
		t.Fatalf("another key: waits %s, want allowed", wait)
	}
	if wait := Take(tb, "a", t0.Add(499*time.Millisecond)); wait != time.Millisecond {
		t.Fatalf("at 499ms: waits %s, want 1ms", wait)
	}
	if wait := Take(tb, "a", t0.Add(500*time.Millisecond)); wait != 0 {
		t.Fatalf("at 500ms: waits %s, want allowed", wait)
	}
	if wait := Take(tb, "a", t0.Add(500*time.Millisecond)); wait == 0 {
		t.Fatal("second request at 500ms allowed, want it refused")
	}
	// Quiet for the burst: four at once again.
	later := t0.Add(3 * time.Second)
	for i := 0; i < 4; i++ {
		if wait := Take(tb, "a", later); wait != 0 {
			t.Fatalf("after a quiet burst, request %d: waits %s, want allowed", i+1, wait)
		}
	}
}

// TestNoBurst: a burst of zero allows one request per interval.
func TestNoBurst(t *testing.T) {
	tb := mustNew(t, Settings{Rate: Rate{N: 1, Per: time.Second}})
	if wait := Take(tb, "a", t0); wait != 0 {
		t.Fatalf("first: waits %s, want allowed", wait)
	}
	if wait := Take(tb, "a", t0.Add(100*time.Millisecond)); wait != 900*time.Millisecond {
		t.Fatalf("second at 100ms: waits %s, want 900ms", wait)
	}
}

// TestIdleDropped: a bucket idle for two bursts is dropped, and the key's next request
// finds its burst whole, as it would have.
func TestIdleDropped(t *testing.T) {
	tb := mustNew(t, Settings{Rate: Rate{N: 10, Per: 10 * time.Second}, Burst: time.Second})
	Take(tb, "a", t0)
	Take(tb, "b", t0)
	if got := tb.Len(); got != 2 {
		t.Fatalf("Len = %d, want 2", got)
	}
	Take(tb, "c", t0.Add(1500*time.Millisecond))
	Take(tb, "c", t0.Add(3*time.Second))
	if got := tb.Len(); got != 1 {
		t.Fatalf("Len after two bursts = %d, want 1 (a and b dropped)", got)
	}
	if wait := Take(tb, "a", t0.Add(3*time.Second)); wait != 0 {
		t.Fatalf("a after its drop: waits %s, want allowed", wait)
	}
}

// TestActiveKeptAcrossTurns: a key used in every generation keeps its bucket.
func TestActiveKeptAcrossTurns(t *testing.T) {
	tb := mustNew(t, Settings{Rate: Rate{N: 1, Per: 10 * time.Second}, MaxBuckets: 4})
	if wait := Take(tb, "busy", t0); wait != 0 {
		t.Fatalf("first: waits %s", wait)
	}
	for i := 0; i < 20; i++ {
		Take(tb, fmt.Sprintf("k%d", i), t0)
		if wait := Take(tb, "busy", t0); wait == 0 {
			t.Fatalf("busy allowed again after %d other keys: its bucket was dropped while in use", i+1)
		}
	}
}

// TestBoundedUnderFlood: a flood of a million distinct keys leaves at most MaxBuckets
// buckets, and reports the table's size and the heap it holds.
func TestBoundedUnderFlood(t *testing.T) {
	const flood = 1000000
	tb := mustNew(t, Settings{Rate: Rate{N: 200, Per: 10 * time.Second}, Burst: 2 * time.Second})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	maxLen := 0
	for i := 0; i < flood; i++ {
		// Distinct IPv4 addresses, all within one second.
		key := fmt.Sprintf("%d.%d.%d.%d", 10+i>>24&0xff, i>>16&0xff, i>>8&0xff, i&0xff)
		Take(tb, key, t0.Add(time.Duration(i)*time.Microsecond))
		if i%1000 == 0 {
			if n := tb.Len(); n > maxLen {
				maxLen = n
			}
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	n := tb.Len()
	if n > maxLen {
		maxLen = n
	}
	heap := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d distinct keys: table holds %d buckets at the end, %d at most (bound %d); heap held %.1f MiB",
		flood, n, maxLen, DefaultMaxBuckets, float64(heap)/(1<<20))
	if maxLen > DefaultMaxBuckets {
		t.Errorf("table held %d buckets, want at most %d", maxLen, DefaultMaxBuckets)
	}
	runtime.KeepAlive(tb)
}

func TestConcurrentTakes(t *testing.T) {
	tb := mustNew(t, Settings{Rate: Rate{N: 100, Per: time.Second}, Burst: time.Second})
	done := make(chan int)
	for g := 0; g < 4; g++ {
		go func() {
			n := 0
			for i := 0; i < 100; i++ {
				if Take(tb, "shared", t0) == 0 {
					n++
				}
			}
			done <- n
		}()
	}
	total := 0
	for g := 0; g < 4; g++ {
		select {
		case n := <-done:
			total += n
		case <-time.After(5 * time.Second):
			t.Fatal("hangs: concurrent takes never finished")
		}
	}
	if total != 100 {
		t.Errorf("allowed %d of 400 requests at once, want the burst of 100", total)
	}
}

// TestReserveSpaces: 3/10s without a burst books one turn every 3.33s, never two at once,
// booked up to MaxAhead ahead.
func TestReserveSpaces(t *testing.T) {
	tb := mustNew(t, Settings{Rate: Rate{N: 3, Per: 10 * time.Second}, MaxAhead: 7 * time.Second})
	step := 10 * time.Second / 3
	cases := []struct {
		desc string
		at   time.Duration
		wait time.Duration
		ok   bool
	}{
		{desc: "first, at once", at: 0, wait: 0, ok: true},
		{desc: "second waits one interval", at: 0, wait: step, ok: true},
		{desc: "third waits two", at: 0, wait: 2 * step, ok: true},
		{desc: "fourth would wait past MaxAhead", at: 0, wait: 3*step - 7*time.Second, ok: false},
		{desc: "3s later, the fourth's turn is within reach", at: 3 * time.Second, wait: 3*step - 3*time.Second, ok: true},
	}
	for _, c := range cases {
		wait, ok := Reserve(tb, "feeds", t0.Add(c.at))
		if wait != c.wait || ok != c.ok {
			t.Errorf("%s: Reserve = %s, %t; want %s, %t", c.desc, wait, ok, c.wait, c.ok)
		}
	}
	// Take asks for a turn now: none is free before the booked ones are spent.
	if wait := Take(tb, "feeds", t0.Add(2*time.Second)); wait == 0 {
		t.Error("Take while turns are booked ahead: allowed, want refused")
	}
}

// TestReserveKeptWhileBooked: a bucket booked ahead is not dropped by the generations'
// turns before its bookings are spent.
func TestReserveKeptWhileBooked(t *testing.T) {
	tb := mustNew(t, Settings{Rate: Rate{N: 1, Per: time.Second}, MaxAhead: 3 * time.Second})
	for i := 0; i < 4; i++ {
		if _, ok := Reserve(tb, "o", t0); !ok {
			t.Fatalf("booking %d refused", i+1)
		}
	}
	// Others' requests turn the generations on time.
	Take(tb, "x", t0.Add(2*time.Second))
	Take(tb, "x", t0.Add(3*time.Second))
	if wait, ok := Reserve(tb, "o", t0.Add(3*time.Second)); !ok || wait != time.Second {
		t.Errorf("at 3s with turns booked up to 4s: Reserve = %s, %t; want 1s, true", wait, ok)
	}
}

// TestDrainRaise: allowed requests are counted per key for Drain, within MaxPending keys,
// and Raise books a bucket as far ahead as the shared count says, never back.
func TestDrainRaise(t *testing.T) {
	tb := mustNew(t, Settings{Rate: Rate{N: 10, Per: 10 * time.Second}, Burst: 5 * time.Second, MaxPending: 2})
	Take(tb, "a", t0)
	Take(tb, "a", t0)
	Take(tb, "b", t0)
	Take(tb, "c", t0) // a third key: not counted
	keys, counts := Drain(tb)
	got := map[string]int64{}
	for i, k := range keys {
		got[k] = counts[i]
	}
	if len(got) != 2 || got["a"] != 2 || got["b"] != 1 {
		t.Fatalf("Drain = %v, want a:2 b:1", got)
	}
	if keys, _ := Drain(tb); keys != nil {
		t.Fatalf("second Drain = %v, want nothing", keys)
	}
	// Others spent b's burst: its bucket is booked 5s ahead, and the next request waits 1s.
	Raise(tb, "b", 5*time.Second, t0)
	if wait := Take(tb, "b", t0); wait != time.Second {
		t.Errorf("b after Raise: waits %s, want 1s", wait)
	}
	// A Raise behind what a bucket holds changes nothing.
	Raise(tb, "a", 0, t0)
	if wait := Take(tb, "a", t0); wait != 0 {
		t.Errorf("a after a Raise behind it: waits %s, want allowed", wait)
	}
	if got := Interval(tb); got != time.Second {
		t.Errorf("Interval = %s, want 1s", got)
	}
}
