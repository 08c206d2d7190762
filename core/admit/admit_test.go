package admit

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// lagOf returns a Lag func reading *l, which the test sets.
func lagOf(l *int64) func() time.Duration {
	return func() time.Duration { return time.Duration(atomic.LoadInt64(l)) }
}

func mustNew(t *testing.T, s Settings) *Controller {
	t.Helper()
	c, err := New(s)
	if err != nil {
		t.Fatalf("New(%+v): %v", s, err)
	}
	return c
}

func TestValidate(t *testing.T) {
	cases := []struct {
		desc string
		s    Settings
	}{
		{desc: "no knee", s: Settings{}},
		{desc: "negative host share", s: Settings{KneeInFlight: 4, HostKneeInFlight: -1}},
		{desc: "limit under the knee", s: Settings{KneeInFlight: 4, LimitInFlight: 2}},
		{desc: "lag limit under the knee", s: Settings{KneeInFlight: 4, LagKnee: time.Second, LagLimit: time.Millisecond}},
		{desc: "negative lag", s: Settings{KneeInFlight: 4, LagKnee: -time.Second}},
	}
	for _, c := range cases {
		if _, err := New(c.s); !errors.Is(err, ErrSettings) {
			t.Errorf("%s: New error = %v, want ErrSettings", c.desc, err)
		}
	}
}

// TestKnee: under the knee everything is taken and names are learned; past it, a host over
// its share and a name never seen are refused while another known host is taken; past the
// limit only protected paths are.
func TestKnee(t *testing.T) {
	c := mustNew(t, Settings{KneeInFlight: 4, HostKneeInFlight: 2, LimitInFlight: 6})
	// Names seen under the knee.
	for _, h := range []string{"flood.test", "calm.test"} {
		if v := Enter(c, h, false); v != Admitted {
			t.Fatalf("%s under the knee: verdict %d", h, v)
		}
		Leave(c, h)
	}
	for i := 0; i < 4; i++ {
		if v := Enter(c, "flood.test", false); v != Admitted {
			t.Fatalf("flood request %d under the knee: verdict %d, want admitted", i+1, v)
		}
	}
	steps := []struct {
		desc      string
		host      string
		protected bool
		want      int
	}{
		{desc: "flood host past the knee, over its share", host: "flood.test", want: ShedHost},
		{desc: "a name never seen", host: "random-1.test", want: ShedName},
		{desc: "another known host", host: "calm.test", want: Admitted},
		{desc: "a protected path of the flood host", host: "flood.test", protected: true, want: Admitted},
		{desc: "another known host, past the limit", host: "calm.test", want: ShedAll},
		{desc: "a protected path, past the limit", host: "random-2.test", protected: true, want: Admitted},
	}
	for _, s := range steps {
		if got := Enter(c, s.host, s.protected); got != s.want {
			t.Errorf("%s: verdict %d, want %d (in flight %d)", s.desc, got, s.want, c.InFlight())
		}
	}
	if got := c.InFlight(); got != 7 {
		t.Errorf("in flight %d, want 7 (4 flood, calm, 2 protected)", got)
	}
}

// TestLag: scheduler lag past LagKnee passes the knee with few requests in flight, and past
// LagLimit the limit.
func TestLag(t *testing.T) {
	var lag int64
	c := mustNew(t, Settings{KneeInFlight: 100, HostKneeInFlight: 1, Lag: lagOf(&lag)})
	Enter(c, "a.test", false)
	atomic.StoreInt64(&lag, int64(20*time.Millisecond))
	if v := Enter(c, "a.test", false); v != ShedHost {
		t.Errorf("20ms of lag, host at its share: verdict %d, want ShedHost", v)
	}
	if v := Enter(c, "b.test", false); v != ShedName {
		t.Errorf("20ms of lag, a new name: verdict %d, want ShedName", v)
	}
	atomic.StoreInt64(&lag, int64(60*time.Millisecond))
	if v := Enter(c, "a.test", true); v != Admitted {
		t.Errorf("60ms of lag, a protected path: verdict %d, want admitted", v)
	}
	Leave(c, "a.test")
	Leave(c, "a.test")
	atomic.StoreInt64(&lag, 0)
	if v := Enter(c, "b.test", false); v != Admitted {
		t.Errorf("no lag: verdict %d, want admitted", v)
	}
}

// TestNamesBounded: a flood of names under the knee is remembered up to MaxNames.
func TestNamesBounded(t *testing.T) {
	c := mustNew(t, Settings{KneeInFlight: 1, MaxNames: 3})
	for _, h := range []string{"a", "b", "c", "d"} {
		Enter(c, h, false)
		Leave(c, h)
	}
	if n := len(c.names); n != 3 {
		t.Errorf("names remembered %d, want 3", n)
	}
}

func TestDecay(t *testing.T) {
	cases := []struct {
		desc            string
		old, late, want int64
	}{
		{desc: "later", old: 4, late: 10, want: 10},
		{desc: "a quarter off", old: 100, late: 0, want: 75},
		{desc: "not under the tick's", old: 100, late: 90, want: 90},
	}
	for _, c := range cases {
		if got := decay(c.old, c.late); got != c.want {
			t.Errorf("%s: decay(%d, %d) = %d, want %d", c.desc, c.old, c.late, got, c.want)
		}
	}
}
