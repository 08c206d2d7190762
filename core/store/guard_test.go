package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

var errBoom = errors.New("boom")

// fakeStore answers each call with the next error in results (nil once they run out) and
// counts its calls. during, when set, runs inside the next call, once.
type fakeStore struct {
	results []error
	calls   int
	during  func()
	// block makes calls wait for their context to end and return its error.
	block bool
	// deadline is how long the last call had before its context's deadline; -1 for none.
	deadline time.Duration
	// purged names the last purge and its argument.
	purged string
}

func (f *fakeStore) call(ctx context.Context) error {
	f.calls++
	f.deadline = -1
	if dl, ok := ctx.Deadline(); ok {
		f.deadline = time.Until(dl)
	}
	if d := f.during; d != nil {
		f.during = nil
		d()
	}
	if f.block {
		<-ctx.Done()
		return ctx.Err()
	}
	if len(f.results) == 0 {
		return nil
	}
	err := f.results[0]
	f.results = f.results[1:]
	return err
}

func (f *fakeStore) Get(ctx context.Context, key string) (*Entry, error) {
	if err := f.call(ctx); err != nil {
		return nil, err
	}
	if key == "hit" {
		return &Entry{Status: 200}, nil
	}
	return nil, nil
}

func (f *fakeStore) Set(ctx context.Context, key string, e *Entry) error { return f.call(ctx) }
func (f *fakeStore) Delete(ctx context.Context, key string) error        { return f.call(ctx) }

// The purges record what they were asked and report 7 entries dropped.
func (f *fakeStore) PurgeKey(ctx context.Context, key string) (int, error) {
	f.purged = "key " + key
	return 7, f.call(ctx)
}

func (f *fakeStore) PurgePrefix(ctx context.Context, prefix string) (int, error) {
	f.purged = "prefix " + prefix
	return 7, f.call(ctx)
}

func (f *fakeStore) PurgeTag(ctx context.Context, tag string) (int, error) {
	f.purged = "tag " + tag
	return 7, f.call(ctx)
}

// guardHarness is a Guard over a fakeStore with a hand-moved clock and a log of its state
// changes.
type guardHarness struct {
	g       *Guard
	inner   *fakeStore
	now     time.Time
	changes []string
}

func newGuardHarness(s GuardSettings) *guardHarness {
	h := &guardHarness{inner: &fakeStore{}, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s.Now = func() time.Time { return h.now }
	s.OnStateChange = func(open bool, err error) {
		h.changes = append(h.changes, fmt.Sprintf("open=%v err=%v", open, err))
	}
	h.g = NewGuard(h.inner, s)
	return h
}

// fail makes n calls that the store fails.
func (h *guardHarness) fail(t *testing.T, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		h.inner.results = []error{errBoom}
		if _, err := h.g.Get(context.Background(), "k"); !errors.Is(err, errBoom) {
			t.Fatalf("failing call %d: err = %v, want %v", i, err, errBoom)
		}
	}
}

// wantRefused checks that a Get is refused without reaching the store.
func (h *guardHarness) wantRefused(t *testing.T) {
	t.Helper()
	calls := h.inner.calls
	e, err := h.g.Get(context.Background(), "hit")
	if e != nil || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Get = %v, %v; want nil, ErrUnavailable", e, err)
	}
	if h.inner.calls != calls {
		t.Fatalf("a refused Get reached the store")
	}
}

// wantThrough checks that a Get reaches the store.
func (h *guardHarness) wantThrough(t *testing.T) {
	t.Helper()
	calls := h.inner.calls
	if _, err := h.g.Get(context.Background(), "hit"); err != nil {
		t.Fatalf("Get error: %v", err)
	}
	if h.inner.calls != calls+1 {
		t.Fatalf("Get did not reach the store")
	}
}

func (h *guardHarness) wantChanges(t *testing.T, want ...string) {
	t.Helper()
	if fmt.Sprint(h.changes) != fmt.Sprint(want) {
		t.Fatalf("state changes = %q, want %q", h.changes, want)
	}
}

func TestGuardPassesResultsThrough(t *testing.T) {
	h := newGuardHarness(GuardSettings{})
	e, err := h.g.Get(context.Background(), "hit")
	if err != nil || e == nil || e.Status != 200 {
		t.Fatalf("Get(hit) = %v, %v; want the entry", e, err)
	}
	if h.inner.deadline <= 0 || h.inner.deadline > DefaultGuardTimeout {
		t.Errorf("store call had %v before its deadline, want at most %v", h.inner.deadline, DefaultGuardTimeout)
	}
	if e, err := h.g.Get(context.Background(), "miss"); e != nil || err != nil {
		t.Errorf("Get(miss) = %v, %v; want nil, nil", e, err)
	}
	if err := h.g.Set(context.Background(), "k", &Entry{}); err != nil {
		t.Errorf("Set error: %v", err)
	}
	if err := h.g.Delete(context.Background(), "k"); err != nil {
		t.Errorf("Delete error: %v", err)
	}
	h.wantChanges(t)
}

func TestGuardKeepsAnEarlierDeadline(t *testing.T) {
	h := newGuardHarness(GuardSettings{Timeout: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h.g.Get(ctx, "k")
	if h.inner.deadline > time.Minute {
		t.Errorf("store call had %v before its deadline, want at most the caller's minute", h.inner.deadline)
	}
}

func TestGuardOpensAfterFailuresInARow(t *testing.T) {
	h := newGuardHarness(GuardSettings{})
	h.fail(t, DefaultGuardFailures-1)
	// A miss is a success: it breaks the run of failures.
	if e, err := h.g.Get(context.Background(), "miss"); e != nil || err != nil {
		t.Fatalf("Get(miss) = %v, %v; want nil, nil", e, err)
	}
	h.fail(t, DefaultGuardFailures-1)
	h.wantChanges(t)
	if h.g.Open() {
		t.Fatalf("open after %d failures in a row, want closed", DefaultGuardFailures-1)
	}
	h.fail(t, 1)
	h.wantChanges(t, "open=true err=boom")
	if !h.g.Open() {
		t.Fatalf("closed after %d failures in a row, want open", DefaultGuardFailures)
	}
	h.wantRefused(t)
	calls := h.inner.calls
	if err := h.g.Set(context.Background(), "k", &Entry{}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Set while open: err = %v, want ErrUnavailable", err)
	}
	if err := h.g.Delete(context.Background(), "k"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Delete while open: err = %v, want ErrUnavailable", err)
	}
	if h.inner.calls != calls {
		t.Errorf("Set or Delete reached the store while open")
	}
	h.wantChanges(t, "open=true err=boom")
}

func TestGuardTrialCallClosesIt(t *testing.T) {
	h := newGuardHarness(GuardSettings{})
	h.fail(t, DefaultGuardFailures)
	h.now = h.now.Add(DefaultGuardOpenFor - time.Nanosecond)
	h.wantRefused(t)
	h.now = h.now.Add(time.Nanosecond)
	// While the trial call is out, other calls are refused.
	h.inner.during = func() { h.wantRefused(t) }
	h.wantThrough(t)
	h.wantChanges(t, "open=true err=boom", "open=false err=<nil>")
	h.wantThrough(t)

	// The open period starts over at OpenFor.
	h.fail(t, DefaultGuardFailures)
	h.now = h.now.Add(DefaultGuardOpenFor)
	h.wantThrough(t)
}

func TestGuardOpenPeriodDoublesUpToTheCap(t *testing.T) {
	h := newGuardHarness(GuardSettings{})
	h.fail(t, DefaultGuardFailures)
	want := []time.Duration{1, 2, 4, 8, 16, 30, 30}
	for i, secs := range want {
		period := secs * time.Second
		if i > 0 {
			// The trial call after the previous period failed.
			h.fail(t, 1)
		}
		h.now = h.now.Add(period - time.Nanosecond)
		h.wantRefused(t)
		h.now = h.now.Add(time.Nanosecond)
	}
	h.wantThrough(t)
	h.wantChanges(t, "open=true err=boom", "open=false err=<nil>")
}

func TestGuardCustomSettings(t *testing.T) {
	h := newGuardHarness(GuardSettings{Failures: 2, OpenFor: time.Minute, MaxOpenFor: time.Second})
	h.fail(t, 2)
	h.now = h.now.Add(time.Minute - time.Nanosecond)
	h.wantRefused(t)
	h.now = h.now.Add(time.Nanosecond)
	h.fail(t, 1)
	// MaxOpenFor below OpenFor is raised to it.
	h.now = h.now.Add(time.Minute)
	h.wantThrough(t)
}

// Whatever a Guard is given, the breaker under it gets settings it accepts: NewGuard has no
// error to return.
func TestGuardBreakerSettings(t *testing.T) {
	tests := []struct {
		desc string
		s    GuardSettings
	}{
		{desc: "zero"},
		{desc: "negative", s: GuardSettings{Timeout: -1, Failures: -1, OpenFor: -1, MaxOpenFor: -1}},
		{desc: "cap below the first period", s: GuardSettings{OpenFor: time.Hour, MaxOpenFor: time.Second}},
		{desc: "tiny", s: GuardSettings{Timeout: 1, Failures: 1, OpenFor: 1, MaxOpenFor: 1}},
		{desc: "huge", s: GuardSettings{Timeout: 1 << 62, Failures: 1 << 30, OpenFor: 1 << 62, MaxOpenFor: 1 << 62}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if err := tc.s.withDefaults().breakerSettings().Validate(); err != nil {
				t.Errorf("breaker settings of %+v: %v, want none", tc.s, err)
			}
		})
	}
}

func TestGuardIgnoresResultsFromBeforeAChange(t *testing.T) {
	h := newGuardHarness(GuardSettings{})
	// A call that started while closed ends after the breaker opened: its success must not
	// close the breaker.
	h.inner.during = func() { h.fail(t, DefaultGuardFailures) }
	h.g.Get(context.Background(), "hit")
	if !h.g.Open() {
		t.Fatalf("a success from before the breaker opened closed it")
	}
	h.wantChanges(t, "open=true err=boom")

	// A call that started while open (the trial) ends after a newer trial replaced it.
	h.now = h.now.Add(DefaultGuardOpenFor)
	h.inner.during = func() {
		h.now = h.now.Add(DefaultGuardTimeout + time.Nanosecond)
		h.wantThrough(t) // the trial outlived its timeout: another one goes
		h.inner.results = []error{errBoom}
	}
	if _, err := h.g.Get(context.Background(), "k"); !errors.Is(err, errBoom) {
		t.Fatalf("first trial: err = %v, want %v", err, errBoom)
	}
	if h.g.Open() {
		t.Fatalf("the late failure of a replaced trial reopened the breaker")
	}
	h.wantChanges(t, "open=true err=boom", "open=false err=<nil>")
}

func TestGuardNeutralResults(t *testing.T) {
	tests := []struct {
		desc   string
		err    error
		cancel bool
	}{
		{desc: "entry too large", err: fmt.Errorf("set: %w", ErrTooLarge)},
		{desc: "caller gave up", err: context.Canceled, cancel: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			h := newGuardHarness(GuardSettings{})
			ctx, cancel := context.WithCancel(context.Background())
			if tc.cancel {
				cancel()
			} else {
				defer cancel()
			}
			for i := 0; i < 2*DefaultGuardFailures; i++ {
				h.inner.results = []error{tc.err}
				h.g.Set(ctx, "k", &Entry{})
			}
			if h.g.Open() {
				t.Fatalf("opened on results that say nothing of the store")
			}
			// Neither do they break a run of failures.
			h.fail(t, DefaultGuardFailures-1)
			h.inner.results = []error{tc.err}
			h.g.Set(ctx, "k", &Entry{})
			h.fail(t, 1)
			if !h.g.Open() {
				t.Fatalf("still closed after %d failures in a row", DefaultGuardFailures)
			}
			// A neutral trial leaves the breaker open but lets the next call try.
			h.now = h.now.Add(DefaultGuardOpenFor)
			h.inner.results = []error{tc.err}
			h.g.Set(ctx, "k", &Entry{})
			if !h.g.Open() {
				t.Fatalf("a neutral trial closed the breaker")
			}
			h.wantThrough(t)
			h.wantChanges(t, "open=true err=boom", "open=false err=<nil>")
		})
	}
}

func TestGuardBoundsASlowStore(t *testing.T) {
	h := newGuardHarness(GuardSettings{Timeout: 5 * time.Millisecond})
	h.inner.block = true
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("panic: %v", r)
			}
		}()
		_, err := h.g.Get(context.Background(), "k")
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want context.DeadlineExceeded", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("Get on a store that never answers hangs")
	}
}

func ExampleGuard() {
	inner := &fakeStore{results: []error{errBoom, errBoom}}
	g := NewGuard(inner, GuardSettings{
		Failures: 2,
		OnStateChange: func(open bool, err error) {
			fmt.Println("store breaker open:", open, err)
		},
	})
	for i := 0; i < 3; i++ {
		_, err := g.Get(context.Background(), "k")
		fmt.Println(err)
	}
	// Output:
	// boom
	// store breaker open: true boom
	// boom
	// store unavailable
}

// nopStore answers every call at once with a miss, so that a benchmark measures the guard.
type nopStore struct{}

func (nopStore) Get(ctx context.Context, key string) (*Entry, error) { return nil, nil }
func (nopStore) Set(ctx context.Context, key string, e *Entry) error { return nil }
func (nopStore) Delete(ctx context.Context, key string) error        { return nil }

// BenchmarkGuardGet measures what the guard adds to every call on a healthy store.
func BenchmarkGuardGet(b *testing.B) {
	g := NewGuard(nopStore{}, GuardSettings{})
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		g.Get(ctx, "k")
	}
}

// timedMemory is memory read as a TimedGetter, as a Guard reads the Redis store; it records
// the last timeout it was given in last, when not nil.
type timedMemory struct {
	*Memory
	last *time.Duration
}

func (m timedMemory) GetWithin(_ context.Context, key string, timeout time.Duration) (*Entry, error) {
	if m.last != nil {
		*m.last = timeout
	}
	return Lookup(m.Memory, key), nil
}

// TestGuardTimedGetter: a Guard over a TimedGetter hands it its timeout instead of a context
// made for it; over any other store, Get's context carries the timeout.
func TestGuardTimedGetter(t *testing.T) {
	ctx := context.Background()
	m := NewMemory(MemorySettings{})
	e := &Entry{Status: 200}
	if err := m.Set(ctx, "k", e); err != nil {
		t.Fatal(err)
	}
	var given time.Duration
	g := NewGuard(timedMemory{Memory: m, last: &given}, GuardSettings{Timeout: 7 * time.Millisecond})
	if got, err := g.Get(ctx, "k"); got != e || err != nil {
		t.Fatalf("Get = %v, %v; want the entry", got, err)
	}
	f := NewFallback(g, NewMemory(MemorySettings{}), func() bool { return false })
	if got, err := ReadShared(f, ctx, "k"); got != e || err != nil {
		t.Fatalf("ReadShared = %v, %v; want the entry", got, err)
	}
	if given != 7*time.Millisecond {
		t.Errorf("timeout given = %v, want 7ms", given)
	}

	d := &deadlineStore{}
	if _, err := NewGuard(d, GuardSettings{Timeout: 7 * time.Millisecond}).Get(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if !d.had {
		t.Error("Get of a store without GetWithin had no deadline in its context")
	}
}

// deadlineStore tells whether its Get's context had a deadline.
type deadlineStore struct{ had bool }

func (d *deadlineStore) Get(ctx context.Context, key string) (*Entry, error) {
	_, d.had = ctx.Deadline()
	return nil, nil
}
func (d *deadlineStore) Set(ctx context.Context, key string, e *Entry) error { return nil }
func (d *deadlineStore) Delete(ctx context.Context, key string) error        { return nil }
