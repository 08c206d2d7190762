package missrate

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestCollisionFlagsOnlyTheFloodedPartition(t *testing.T) {
	const p = "https://shop.example/search"
	r := newDriver(t, Settings{Throttle: true})
	quiet := collidingPartition(t, r.d, p)

	// The quiet path's miss is the one that takes the slot over MinMisses.
	r.flood(p, 499, 4*time.Millisecond, cacheBuster)
	r.observe(quiet, true, "")
	if len(r.anomalies) != 1 {
		t.Fatalf("got %d anomalies, want 1", len(r.anomalies))
	}
	if got := r.anomalies[0].Partition; got != p {
		t.Errorf("Partition = %q, want the flooded %q, not the quiet %q", got, p, quiet)
	}

	// The flood goes on beside the quiet path's traffic: only the flooded path is throttled.
	for i := 0; i < 5000; i++ {
		r.observe(p, true, cacheBuster(i))
		if i%10 == 0 {
			r.observe(quiet, i%20 == 0, "")
			if ok, wait := AllowFetch(r.d, quiet, r.now); !ok {
				t.Fatalf("AllowFetch(quiet) = false, %v at miss %d, want true", wait, i)
			}
		}
		r.now = r.now.Add(4 * time.Millisecond)
	}
	if ok, wait := AllowFetch(r.d, p, r.now); !ok {
		t.Errorf("first AllowFetch(flooded) in a window = false, %v, want true", wait)
	}
	if ok, _ := AllowFetch(r.d, p, r.now); ok {
		t.Errorf("second AllowFetch(flooded) in a window = true, want false")
	}
	for _, a := range r.anomalies {
		if a.Partition == quiet {
			t.Errorf("quiet partition %q reported anomalous", quiet)
		}
	}
}

func TestThrottle(t *testing.T) {
	const p = "https://shop.example/search"
	const other = "https://shop.example/other"
	tests := []struct {
		desc     string
		throttle bool
		// wantPerWindow is how many fetches the flooded partition gets in each of the windows
		// from the anomaly on.
		wantPerWindow []int
	}{
		{desc: "reporting only", throttle: false, wantPerWindow: []int{2500, 2500, 1255, 10}},
		{desc: "throttling", throttle: true, wantPerWindow: []int{1, 1, 1, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			r := newDriver(t, Settings{Throttle: tc.throttle})
			r.flood(p, 500, 4*time.Millisecond, cacheBuster)
			if len(r.anomalies) != 1 {
				t.Fatalf("got %d anomalies, want 1", len(r.anomalies))
			}
			at := r.anomalies[0].At
			if r.anomalies[0].Throttled != tc.throttle {
				t.Errorf("Throttled = %v, want %v", r.anomalies[0].Throttled, tc.throttle)
			}
			r.now = at

			// The flood lasts 25 s from the anomaly, then one miss a second for 15 s: windows
			// 0 and 1 are flooded, window 2 half (still over MinMisses, so window 3 is still
			// throttled), window 3 quiet, which ends the flag.
			got := make([]int, 4)
			end := at.Add(40 * time.Second)
			for r.now.Before(end) {
				step := 4 * time.Millisecond
				if !r.now.Before(at.Add(25 * time.Second)) {
					step = time.Second
				}
				r.observe(p, true, "cb="+r.now.String())
				ok, wait := AllowFetch(r.d, p, r.now)
				w := int(r.now.Sub(at) / DefaultWindow)
				if ok {
					got[w]++
				} else if wait <= 0 || wait > DefaultWindow {
					t.Fatalf("retryAfter = %v at %v, want within (0, %v]", wait, r.now.Sub(at), DefaultWindow)
				}
				if ok, _ := AllowFetch(r.d, other, r.now); !ok {
					t.Fatalf("AllowFetch(%q) refused, want allowed", other)
				}
				r.now = r.now.Add(step)
			}
			for w := range got {
				if got[w] != tc.wantPerWindow[w] {
					t.Errorf("window %d: %d fetches allowed, want %d", w, got[w], tc.wantPerWindow[w])
				}
			}
			if len(r.anomalies) != 1 {
				t.Errorf("got %d anomalies, want 1 for the whole flood", len(r.anomalies))
			}
			// The quiet window ended the flag.
			for i := 0; i < 3; i++ {
				r.observe(p, true, "")
				if ok, wait := AllowFetch(r.d, p, r.now); !ok {
					t.Errorf("AllowFetch after the flood = false, %v, want true", wait)
				}
			}
			if n := atomic.LoadInt32(&r.d.flagged); n != 0 {
				t.Errorf("%d slots flagged after the flood, want 0", n)
			}
		})
	}
}

func TestRetryAfterIsTimeLeftInWindow(t *testing.T) {
	const p = "https://shop.example/search"
	r := newDriver(t, Settings{Throttle: true, MinMisses: 10, Window: 4 * time.Second})
	r.flood(p, 10, time.Millisecond, cacheBuster)
	if len(r.anomalies) != 1 {
		t.Fatalf("got %d anomalies, want 1", len(r.anomalies))
	}
	at := r.anomalies[0].At
	if ok, wait := AllowFetch(r.d, p, at); !ok {
		t.Fatalf("first AllowFetch = false, %v, want true", wait)
	}
	ok, wait := AllowFetch(r.d, p, at.Add(1500*time.Millisecond))
	if ok || wait != 2500*time.Millisecond {
		t.Errorf("second AllowFetch = %v, %v, want false, 2.5s", ok, wait)
	}
}

func TestAllowFetchEndsFlagWithoutMisses(t *testing.T) {
	const p = "https://shop.example/search"
	r := newDriver(t, Settings{Throttle: true})
	r.flood(p, 500, time.Millisecond, cacheBuster)
	if len(r.anomalies) != 1 {
		t.Fatalf("got %d anomalies, want 1", len(r.anomalies))
	}
	AllowFetch(r.d, p, r.now)
	if ok, _ := AllowFetch(r.d, p, r.now); ok {
		t.Fatalf("second AllowFetch in the window = true, want false")
	}
	// Two windows later, with no miss in between, the flood is over.
	later := r.now.Add(2 * DefaultWindow)
	for i := 0; i < 2; i++ {
		if ok, wait := AllowFetch(r.d, p, later); !ok {
			t.Errorf("AllowFetch after two quiet windows = false, %v, want true", wait)
		}
	}
}
