package breaker

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirproxy/weir/internal/await"
)

func TestOverrideValidate(t *testing.T) {
	tests := []struct {
		desc  string
		group Settings
		o     Override
		want  string // substring of SetOverride's error; "" for none
	}{
		{desc: "zero declares", o: Override{}},
		{desc: "all set", o: Override{Window: time.Second, MinRequests: 1, FailureRatio: 1, OpenFor: time.Second, MaxOpenFor: time.Minute}},
		{desc: "tiny window", o: Override{Window: time.Millisecond}, want: `override of "a": breaker.window: 1ms must be at least 10ms`},
		{desc: "negative min requests", o: Override{MinRequests: -3}, want: "breaker.minRequests: -3 must not be negative"},
		{desc: "ratio above one", o: Override{FailureRatio: 1.01}, want: "breaker.failureRatio: 1.01 must be between 0 and 1"},
		{desc: "negative open for", o: Override{OpenFor: -time.Second}, want: "breaker.openFor: -1s"},
		{desc: "negative max open for", o: Override{MaxOpenFor: -time.Second}, want: "breaker.maxOpenFor: -1s"},
		{desc: "max below open, both set", o: Override{OpenFor: time.Minute, MaxOpenFor: time.Second},
			want: "breaker.maxOpenFor: 1s must not be less than breaker.openFor (1m0s)"},
		{desc: "open above the group's max", o: Override{OpenFor: 2 * time.Minute},
			want: "breaker.maxOpenFor: 1m0s must not be less than breaker.openFor (2m0s)"},
		{desc: "open within the group's larger max", group: Settings{MaxOpenFor: time.Hour}, o: Override{OpenFor: 2 * time.Minute}},
		{desc: "max below the group's open", group: Settings{OpenFor: 30 * time.Second}, o: Override{MaxOpenFor: 10 * time.Second},
			want: "breaker.maxOpenFor: 10s must not be less than breaker.openFor (30s)"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			g := newTestGroup(t, tc.group)
			err := g.SetOverride("a", tc.o)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("SetOverride() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("SetOverride() = %v, want an error containing %q", err, tc.want)
			}
			if !errors.Is(err, ErrInvalidSetting) {
				t.Errorf("SetOverride() = %v, want it to wrap ErrInvalidSetting", err)
			}
			if len(g.Overrides()) != 0 || g.Len() != 0 {
				t.Errorf("a refused override left %v, %d breakers; want nothing", g.Overrides(), g.Len())
			}
		})
	}
}

// wantParams fails the test unless st carries the parameters of s in force and ov as the
// key's own.
func wantParams(t *testing.T, st Status, s Settings, ov Override) {
	t.Helper()
	if st.Params != s.Params() || st.Override != ov {
		t.Errorf("Status() parameters = %+v, override %+v; want %+v, override %+v", st.Params, st.Override, s.Params(), ov)
	}
}

// An override takes effect at once on the key's breaker and on one made later, and leaves
// the group's defaults for the fields it does not set.
func TestOverrideAppliesAtOnceAndLater(t *testing.T) {
	g := newTestGroup(t, Settings{})
	def := g.s
	b := g.Get("a", t0)
	feed(t, b, 4, true, t0)
	ov := Override{MinRequests: 5, OpenFor: 20 * time.Second}
	if err := g.SetOverride("a", ov); err != nil {
		t.Fatalf("SetOverride(a) = %v", err)
	}
	st := b.Status(t0)
	wantParams(t, st, ov.over(def), ov)
	if st.Failures != 4 {
		t.Errorf("Status().Failures = %d, want 4: the same window keeps its counts", st.Failures)
	}
	feed(t, b, 1, true, t0)
	wantOpen(t, b, t0, t0.Add(20*time.Second), OpenedAuto, 1)

	// A key not seen yet: its breaker has the override from the first request.
	if err := g.SetOverride("later.example", Override{MinRequests: 2}); err != nil {
		t.Fatalf("SetOverride(later.example) = %v", err)
	}
	later := g.Get("later.example", t0)
	feed(t, later, 2, true, t0)
	wantState(t, later, t0, StateOpen)

	// Another key keeps the group's defaults.
	wantParams(t, g.Get("other", t0).Status(t0), def, Override{})
}

// A new window length starts the window again; the same length keeps its counts.
func TestOverrideOfTheWindowRestartsIt(t *testing.T) {
	g := newTestGroup(t, Settings{})
	b := g.Get("a", t0)
	feed(t, b, 3, true, t0)
	if err := g.SetOverride("a", Override{Window: DefaultWindow}); err != nil {
		t.Fatalf("SetOverride() = %v", err)
	}
	if st := b.Status(t0); st.Failures != 3 {
		t.Errorf("Status().Failures after an override of the same window = %d, want 3", st.Failures)
	}
	if err := g.SetOverride("a", Override{Window: time.Minute}); err != nil {
		t.Fatalf("SetOverride() = %v", err)
	}
	if st := b.Status(t0); st.Failures != 0 || st.Params.Window != time.Minute {
		t.Errorf("Status() after a longer window = %d failures, window %v; want 0, 1m", st.Failures, st.Params.Window)
	}
	// The new window is the one counted in: a result 50s old still counts.
	feed(t, b, 1, true, t0)
	if st := b.Status(t0.Add(50 * time.Second)); st.Failures != 1 {
		t.Errorf("Status().Failures 50s on, in a 1m window = %d, want 1", st.Failures)
	}
}

func TestRemoveOverrideRestoresDefaults(t *testing.T) {
	g := newTestGroup(t, Settings{MaxBreakers: 2})
	if g.RemoveOverride("a") {
		t.Errorf("RemoveOverride(a) with none = true, want false")
	}
	if err := g.SetOverride("a", Override{MinRequests: 3, Window: time.Minute}); err != nil {
		t.Fatalf("SetOverride() = %v", err)
	}
	b := g.Get("a", t0)
	b.ForceOpen(t0, time.Minute)
	if !g.RemoveOverride("a") {
		t.Errorf("RemoveOverride(a) = false, want true")
	}
	st := b.Status(t0)
	wantParams(t, st, g.s, Override{})
	if st.State != StateOpen || len(g.Overrides()) != 0 {
		t.Errorf("after RemoveOverride: state %s, overrides %v; want still open, none", StateName(st.State), g.Overrides())
	}
	if snap := g.Snapshot(t0); len(snap) != 1 || snap[0].Declared {
		t.Errorf("Snapshot() = %+v, want one breaker, no longer declared", snap)
	}
	// Back among the others, it may be evicted, and the list keeps its bound.
	b.ForceClose(t0)
	g.Get("b", t0)
	g.Get("c", t0)
	wantKeys(t, g, "b", "c")
}

// A declared key has its breaker, closed, before any request, and is never evicted.
func TestDeclaredKeysStay(t *testing.T) {
	g := newTestGroup(t, Settings{MaxBreakers: 2})
	if err := g.Declare("quiet.example"); err != nil {
		t.Fatalf("Declare() = %v", err)
	}
	if err := g.SetOverride("tuned.example", Override{FailureRatio: 0.2}); err != nil {
		t.Fatalf("SetOverride() = %v", err)
	}
	snap := g.Snapshot(t0)
	if len(snap) != 2 || snap[0].Key != "quiet.example" || !snap[0].Declared || snap[0].State != StateClosed ||
		snap[1].Key != "tuned.example" || !snap[1].Declared || snap[1].Override.FailureRatio != 0.2 {
		t.Fatalf("Snapshot() = %+v, want quiet.example and tuned.example, declared and closed", snap)
	}
	for i := 0; i < 50; i++ {
		g.Get("h"+strconv.Itoa(i), t0)
	}
	wantKeys(t, g, "quiet.example", "tuned.example", "h48", "h49")

	// Declaring again, or declaring a key with an override, changes nothing.
	if err := g.Declare("tuned.example"); err != nil {
		t.Fatalf("Declare(tuned.example) = %v", err)
	}
	want := []KeyOverride{{Key: "quiet.example"}, {Key: "tuned.example", Override: Override{FailureRatio: 0.2}}}
	if got := g.Overrides(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("Overrides() = %+v, want %+v", got, want)
	}

	// MaxBreakers keys declared: a third is refused, an existing one is not.
	err := g.Declare("third.example")
	if !errors.Is(err, ErrTooManyKeys) || !strings.Contains(err.Error(), `declaring "third.example": 2 keys`) {
		t.Errorf("Declare(third) = %v, want ErrTooManyKeys naming the key", err)
	}
	if err := g.SetOverride("h49", Override{MinRequests: 1}); !errors.Is(err, ErrTooManyKeys) {
		t.Errorf("SetOverride(h49) = %v, want ErrTooManyKeys", err)
	}
	if err := g.SetOverride("quiet.example", Override{MinRequests: 1}); err != nil {
		t.Errorf("SetOverride(quiet.example) = %v, want nil", err)
	}
	wantKeys(t, g, "quiet.example", "tuned.example", "h48", "h49")
}

// A declared key already in the recency list leaves it: the list's ends stay right.
func TestDeclareAKeyInUse(t *testing.T) {
	g := newTestGroup(t, Settings{MaxBreakers: 3})
	for _, k := range []string{"a", "b", "c"} {
		g.Get(k, t0)
	}
	for _, k := range []string{"c", "a", "b"} {
		if err := g.Declare(k); err != nil {
			t.Fatalf("Declare(%s) = %v", k, err)
		}
	}
	if g.recent.Len() != 0 {
		t.Fatalf("recency list not empty with every key declared")
	}
	g.Get("a", t0)
	g.Get("d", t0)
	wantKeys(t, g, "a", "b", "c", "d")
}

// The group reduces a key to its scope's, the one requests find their breaker by.
func TestOverrideKeysFollowTheScope(t *testing.T) {
	tests := []struct {
		scope string
		key   string
		want  string
	}{
		{scope: ScopeHost, key: "API.Example.com:8443", want: "api.example.com"},
		{scope: ScopeDomain, key: "api.example.com", want: "example.com"},
		{scope: ScopeEngine, key: "api.example.com", want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.scope, func(t *testing.T) {
			g := newTestGroup(t, Settings{Scope: tc.scope})
			if err := g.SetOverride(tc.key, Override{MinRequests: 1}); err != nil {
				t.Fatalf("SetOverride() = %v", err)
			}
			b := g.Get(ScopeKey(tc.scope, "api.example.com"), t0)
			if got := b.Status(t0); got.Key != tc.want || got.Params.MinRequests != 1 {
				t.Errorf("breaker %q with MinRequests %d, want %q with 1", got.Key, got.Params.MinRequests, tc.want)
			}
			if !g.RemoveOverride(tc.key) {
				t.Errorf("RemoveOverride(%q) = false, want true", tc.key)
			}
		})
	}
}

func TestOverrideString(t *testing.T) {
	tests := []struct {
		desc string
		o    Override
		want string
	}{
		{desc: "zero", o: Override{}, want: ""},
		{desc: "some", o: Override{FailureRatio: 0.3, Window: 30 * time.Second}, want: "window=30s failureRatio=0.3"},
		{desc: "all", o: Override{Window: time.Minute, MinRequests: 50, FailureRatio: 1, MaxFailures: 3, OpenFor: 10 * time.Second,
			MaxOpenFor: 2 * time.Minute, SlowCall: 2 * time.Second, SlowCallRatio: 0.4, Probes: 3, ProbeInterval: 500 * time.Millisecond},
			want: "window=1m0s minRequests=50 failureRatio=1 maxFailures=3 openFor=10s maxOpenFor=2m0s slowCall=2s slowCallRatio=0.4 probes=3 probeInterval=500ms"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if got := tc.o.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}

// Overrides set and removed while requests record results: the race detector checks that
// setOverride writes only what Record reads under the lock.
func TestOverrideWhileRecording(t *testing.T) {
	g := newTestGroup(t, Settings{})
	b := g.Get("a", t0)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			<-start
			for i := 0; i < 200; i++ {
				now := t0.Add(time.Duration(i) * time.Millisecond)
				b.Record(b.Allow(now), 503, (w+i)%3 == 0, now)
				b.Status(now)
			}
		}(w)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-start
		for i := 0; i < 100; i++ {
			if err := g.SetOverride("a", Override{Window: time.Duration(1+i%3) * time.Second, MinRequests: 1 + i%5}); err != nil {
				t.Errorf("SetOverride() = %v", err)
				return
			}
			g.Snapshot(t0)
			g.RemoveOverride("a")
		}
	}()
	close(start)
	await.Group(t, &wg, 10*time.Second, "overrides while recording")
}
