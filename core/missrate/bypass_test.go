package missrate

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

func TestBypass(t *testing.T) {
	const p = "https://shop.example/search"
	key := func(i int) string { return p + "?q=" + strconv.Itoa(i) }
	tests := []struct {
		desc string
		s    Settings
		// flood says whether the partition is flooded up to its anomaly first.
		flood bool
		// want is Bypass's answer to a key never asked for, then to the same key again.
		want []bool
	}{
		{desc: "no flood", s: Settings{MinMisses: 10}, want: []bool{false, false}},
		{desc: "flood: a key's first miss bypasses, its second does not", s: Settings{MinMisses: 10}, flood: true, want: []bool{true, false}},
		{desc: "flood, bypass off", s: Settings{MinMisses: 10, NoBypass: true}, flood: true, want: []bool{false, false}},
		{desc: "flood, throttle on", s: Settings{MinMisses: 10, Throttle: true}, flood: true, want: []bool{false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			r := newDriver(t, tt.s)
			if tt.flood {
				r.flood(p, 10, time.Millisecond, cacheBuster)
				if len(r.anomalies) != 1 {
					t.Fatalf("got %d anomalies, want 1", len(r.anomalies))
				}
				if got, want := r.anomalies[0].Bypassed, tt.want[0]; got != want {
					t.Errorf("Anomaly.Bypassed = %v, want %v", got, want)
				}
			}
			if got, want := atomic.LoadInt32(Flags(r.d)) != 0, tt.want[0]; got != want {
				t.Errorf("Flags reads other than zero: %v, want %v", got, want)
			}
			for i, want := range tt.want {
				if got := Bypass(r.d, p, key(1), r.now); got != want {
					t.Errorf("Bypass, asked %d times before = %v, want %v", i, got, want)
				}
			}
		})
	}
}

func TestBypassOnlyTheFlaggedPartition(t *testing.T) {
	const p = "https://shop.example/search"
	r := newDriver(t, Settings{MinMisses: 10})
	quiet := collidingPartition(t, r.d, p)
	r.flood(p, 10, time.Millisecond, cacheBuster)
	if got := Bypass(r.d, quiet, quiet+"?q=1", r.now); got {
		t.Errorf("Bypass(quiet partition sharing the flooded slot) = true, want false")
	}
	if got := Bypass(r.d, p, p+"?q=1", r.now); !got {
		t.Errorf("Bypass(flooded partition) = false, want true")
	}
}

func TestBypassEndsWithTheFlood(t *testing.T) {
	const p = "https://shop.example/search"
	r := newDriver(t, Settings{MinMisses: 10, Window: time.Second})
	r.flood(p, 10, time.Millisecond, cacheBuster)
	if !Bypass(r.d, p, p+"?q=a", r.now) {
		t.Fatalf("Bypass during the flood = false, want true")
	}
	// Two windows without a miss: the flood stopped.
	r.now = r.now.Add(2 * time.Second)
	if Bypass(r.d, p, p+"?q=b", r.now) {
		t.Errorf("Bypass after the flood stopped = true, want false")
	}
	if n := *Flags(r.d); n != 0 {
		t.Errorf("Flags = %d after the flood stopped, want 0", n)
	}
}

func TestDoorkeeper(t *testing.T) {
	k := newDoorkeeper()
	if !firstAsked(k, "a") {
		t.Fatalf("first firstAsked(a) = false, want true")
	}
	if firstAsked(k, "a") {
		t.Fatalf("second firstAsked(a) = true, want false")
	}
	// Filled: keys never asked for may pass as asked, a few in a hundred at most.
	for i := 1; i < doorKeys; i++ {
		firstAsked(k, "k"+strconv.Itoa(i))
	}
	full := append([]uint64(nil), k.bits...)
	seen := 0
	const probes = 2000
	for i := 0; i < probes; i++ {
		if !firstAsked(k, "never"+strconv.Itoa(i)) {
			seen++
		}
		// As full as it was for the next probe.
		copy(k.bits, full)
		k.keys = doorKeys - 1
	}
	if seen > probes*3/100 {
		t.Errorf("%d of %d keys never asked for passed as asked, want at most 3%%", seen, probes)
	}
	// Full, it starts over: "a" is new again.
	k.keys = doorKeys
	firstAsked(k, "b")
	if k.keys != 1 {
		t.Errorf("keys = %d after starting over, want 1", k.keys)
	}
	if !firstAsked(k, "a") {
		t.Errorf("firstAsked(a) after the filter started over = false, want true")
	}
}
