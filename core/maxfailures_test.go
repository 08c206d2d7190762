package core

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/admin"
)

// TestMaxFailuresOpenTheBreaker: with breaker.maxFailures 3 over a 60s window, three failed
// fetches among successes open the breaker for breaker.openFor (an hour), long before
// minRequests' ratio could; the event names the count and the window, and the admin's state
// lists maxFailures among the breaker's parameters.
func TestMaxFailuresOpenTheBreaker(t *testing.T) {
	clock := newFakeClock()
	logs := &testLog{}
	s := adminSettings(protectSettings(clock, logs))
	s.Breaker.Window = time.Minute
	s.Breaker.MaxFailures = 3
	s.Breaker.OpenFor = time.Hour
	s.Breaker.MaxOpenFor = time.Hour
	down := new(int32)
	o := stopOrigin(t, clock, down)
	h := newTestHandler(t, s, o)
	n := 0
	// Fetches 4s apart: the thirteen span 48s, within the nine tenths of the window that
	// always count (the window is counted in tenths).
	send := func(failing bool) {
		if failing {
			atomic.StoreInt32(down, 1)
		} else {
			atomic.StoreInt32(down, 0)
		}
		n++
		do(t, h, "GET", "http://example.com/all/"+itoa(int64(n)))
		clock.Add(4 * time.Second)
	}
	for _, failing := range []bool{false, false, false, false, true, false, false, false, true, false, false} {
		send(failing)
	}
	wantCode(t, "two failures in the window", do(t, h, "GET", "http://example.com/all/ok"), 200)
	send(true)
	w := do(t, h, "GET", "http://example.com/all/next")
	// An hour, less the 4s the clock moved since the trip.
	wantRefused(t, "after the third failure", w, w.Code, "example.com", "3596")
	wantCalls(t, o, n+1)
	want := "scope=example.com reason=max-failures failures=3 requests=13 window=1m0s open_for=1h0m0s"
	if got := logs.with("event=breaker_opened "); len(got) != 1 || !strings.Contains(got[0], want) {
		t.Errorf("breaker_opened lines %q, want one with %q", got, want)
	}

	w = adminDo(t, h, "GET", "http://example.com/_weir/api/state", "", adminToken)
	var st admin.State
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
		t.Fatalf("state is not JSON: %v", err)
	}
	if len(st.Breakers) != 1 || st.Breakers[0].Reason != "max-failures" {
		t.Fatalf("breakers %+v, want example.com opened by max-failures", st.Breakers)
	}
	found := false
	for _, p := range st.Breakers[0].Params {
		if p.Name == "maxFailures" {
			found = true
			if p.Value != "3" || p.Override {
				t.Errorf("param %+v, want maxFailures 3, the configuration's", p)
			}
		}
	}
	if !found {
		t.Errorf("params %+v, want maxFailures among them", st.Breakers[0].Params)
	}
}

// TestMaxFailuresByOverride: the admin's override action gives one host maxFailures, which
// opens its breaker at the second failure; another host, on the group's ratio alone, stays
// closed with as many.
func TestMaxFailuresByOverride(t *testing.T) {
	clock := newFakeClock()
	logs := &testLog{}
	s := adminSettings(protectSettings(clock, logs))
	down := new(int32)
	o := stopOrigin(t, clock, down)
	h := newTestHandler(t, s, o)
	wantCode(t, "override", adminDo(t, h, "POST", "http://strict.example/_weir/api/breakers/override",
		`{"key":"strict.example","params":"maxFailures=2"}`, adminToken), 200)
	atomic.StoreInt32(down, 1)
	for i := 0; i < 2; i++ {
		for _, host := range []string{"strict.example", "lenient.example"} {
			do(t, h, "GET", "http://"+host+"/all/"+itoa(int64(i)))
		}
	}
	atomic.StoreInt32(down, 0)
	w := do(t, h, "GET", "http://strict.example/all/next")
	wantRefused(t, "strict.example after 2 failures", w, w.Code, "strict.example", "5")
	wantCode(t, "lenient.example after 2 failures", do(t, h, "GET", "http://lenient.example/all/next"), 200)
	if got := logs.with("reason=max-failures"); len(got) != 1 || !strings.Contains(got[0], "scope=strict.example") {
		t.Errorf("max-failures lines %q, want one for strict.example", got)
	}
}
