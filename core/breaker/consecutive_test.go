package breaker

import (
	"testing"
	"time"

	"github.com/weirproxy/weir/internal/await"
)

// record sends one fetch through b at now, asking Quiet first as the store guard does, and
// records it: 'x' a failure, 'o' a success.
func record(t *testing.T, b *Breaker, result byte, now time.Time) int {
	t.Helper()
	p := QuietPermit(Quiet(b))
	if !p.Allowed {
		if p = b.Allow(now); !p.Allowed {
			t.Fatalf("Allow() denied a fetch, want allowed")
		}
	}
	return b.Record(p, 0, result == 'x', now)
}

func TestConsecutiveFailuresOpen(t *testing.T) {
	tests := []struct {
		desc    string
		results string // 'x' a failure, 'o' a success, in order
		want    int
	}{
		{desc: "one short of the run stays closed", results: "xx", want: StateClosed},
		{desc: "three in a row open", results: "xxx", want: StateOpen},
		{desc: "a success starts the count again", results: "xxoxx", want: StateClosed},
		{desc: "no floor of requests", results: "xxx", want: StateOpen},
		{desc: "no ratio: many successes first", results: "oooooooooooooooooooooooooooooxxx", want: StateOpen},
		{desc: "a third failed, never in a row", results: "xxoxxoxxoxxoxxoxxoxxoxxoxxo", want: StateClosed},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			b := newTestBreaker(t, Settings{ConsecutiveFailures: 3})
			for i := 0; i < len(tc.results); i++ {
				record(t, b, tc.results[i], t0)
			}
			wantState(t, b, t0, tc.want)
		})
	}
}

func TestConsecutiveFailuresStatus(t *testing.T) {
	b := newTestBreaker(t, Settings{ConsecutiveFailures: 5})
	for i := 0; i < len("oxox"); i++ {
		record(t, b, "oxox"[i], t0)
	}
	record(t, b, 'x', t0)
	if st := b.Status(t0); st.OK != 0 || st.Failures != 2 {
		t.Errorf("Status() = %+v, want OK 0 and Failures 2, the run of failures", st)
	}
}

func TestRecordReportsChanges(t *testing.T) {
	b := newTestBreaker(t, Settings{ConsecutiveFailures: 2})
	late := b.Allow(t0)
	allow := func(at time.Time) Permit { return b.Allow(at) }
	steps := []struct {
		desc   string
		at     time.Duration // after t0
		permit func(at time.Time) Permit
		failed bool
		want   int
	}{
		{desc: "a failure short of the run", permit: allow, failed: true, want: Unchanged},
		{desc: "the failure that trips", permit: allow, failed: true, want: Tripped},
		{desc: "a late failure", permit: func(time.Time) Permit { return late }, failed: true, want: Unchanged},
		{desc: "a denied permit", at: time.Second, permit: allow, failed: true, want: Unchanged},
		{desc: "a failed probe", at: 5 * time.Second, permit: allow, failed: true, want: Reopened},
		{desc: "a probe that succeeds", at: 15 * time.Second, permit: allow, want: Recovered},
		{desc: "a success while closed", at: 15 * time.Second, permit: allow, want: Unchanged},
	}
	for _, st := range steps {
		at := t0.Add(st.at)
		if got := b.Record(st.permit(at), 0, st.failed, at); got != st.want {
			t.Errorf("%s: Record() = %d, want %d", st.desc, got, st.want)
		}
	}

	// The ratio rule reports its trip the same way.
	b = newTestBreaker(t, Settings{})
	feed(t, b, DefaultMinRequests-1, true, t0)
	if got := b.Record(b.Allow(t0), 503, true, t0); got != Tripped {
		t.Errorf("ratio rule: Record() of the failure that trips = %d, want %d", got, Tripped)
	}
}

func TestQuiet(t *testing.T) {
	t.Run("ratio rule is never quiet", func(t *testing.T) {
		b := newTestBreaker(t, Settings{})
		if gen := Quiet(b); gen != 0 {
			t.Errorf("Quiet() = %d under the ratio rule, want 0", gen)
		}
	})

	b := newTestBreaker(t, Settings{ConsecutiveFailures: 2})
	wantQuiet := func(desc string, want bool) {
		t.Helper()
		gen := Quiet(b)
		if (gen != 0) != want {
			t.Fatalf("%s: Quiet() = %d, want quiet %v", desc, gen, want)
		}
		if want && gen != b.Generation() {
			t.Fatalf("%s: Quiet() = %d, want the generation %d", desc, gen, b.Generation())
		}
		if p := QuietPermit(gen); p.Allowed != want || p.Probe {
			t.Fatalf("%s: QuietPermit(%d) = %+v, want allowed %v, no probe", desc, gen, p, want)
		}
	}
	wantQuiet("new", true)
	before := QuietPermit(Quiet(b))
	record(t, b, 'x', t0)
	wantQuiet("after a failure", false)
	if p := b.Allow(t0); !p.Allowed || p.Probe {
		t.Fatalf("Allow() after one failure = %+v, want an ordinary allowed permit", p)
	}
	// A success under a permit from before the failure starts the count again.
	b.Record(before, 200, false, t0)
	wantQuiet("after a success", true)
	// A failure under a quiet permit counts.
	record(t, b, 'x', t0)
	if st := b.Status(t0); st.Failures != 1 {
		t.Fatalf("Status().Failures = %d after a failure under a quiet permit, want 1", st.Failures)
	}
	b.Record(before, 200, false, t0)

	stale := QuietPermit(Quiet(b))
	record(t, b, 'x', t0)
	record(t, b, 'x', t0)
	wantQuiet("open", false)
	probe := b.Allow(t0.Add(5 * time.Second))
	wantQuiet("half-open", false)
	b.Record(probe, 200, false, t0.Add(5*time.Second))
	wantQuiet("closed by the probe", true)
	// A quiet permit from before the trip is late.
	b.Record(stale, 503, true, t0.Add(5*time.Second))
	if st := b.Status(t0.Add(5 * time.Second)); st.Failures != 0 {
		t.Errorf("Status().Failures = %d, want 0: a failure from before the trip counted", st.Failures)
	}
	wantQuiet("after a late failure", true)

	b.Observe(t0.Add(time.Minute), t0.Add(5*time.Second))
	wantQuiet("open by a deadline observed", false)
	b.ForceClose(t0.Add(5 * time.Second))
	wantQuiet("closed by an operator", true)
}

// Quiet reads without the lock what Record writes under it: run under -race. When the dust
// settles, a closed breaker is quiet exactly when it counts no failure.
func TestQuietConcurrentUse(t *testing.T) {
	b := newTestBreaker(t, Settings{ConsecutiveFailures: 4, ProbeTimeout: time.Nanosecond})
	await.Goroutines(t, 8, 10*time.Second, "concurrent Quiet, Allow and Record", func(g int) {
		for i := 0; i < 300; i++ {
			now := t0.Add(time.Duration(i) * time.Second)
			p := QuietPermit(Quiet(b))
			if !p.Allowed {
				p = b.Allow(now)
			}
			failed := (g+i)%3 != 0
			switch {
			case !p.Allowed:
			case !failed && Quiet(b) != 0:
			case (g+i)%7 == 0:
				b.Release(p, now)
			default:
				b.Record(p, 503, failed, now)
			}
		}
	})
	end := t0.Add(time.Hour)
	if st := b.Status(end); st.State == StateClosed && (st.Failures == 0) != (Quiet(b) != 0) {
		t.Errorf("closed with %d failures counted, Quiet() = %d; want quiet exactly when none", st.Failures, Quiet(b))
	}
}

// BenchmarkQuiet measures the breaker's part of a call to a healthy shared store: Quiet
// before and after.
func BenchmarkQuiet(b *testing.B) {
	br, err := New("k", Settings{ConsecutiveFailures: 5})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		if Quiet(br) == 0 || Quiet(br) == 0 {
			b.Fatal("not quiet")
		}
	}
}
