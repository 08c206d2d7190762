package events

import (
	"strconv"
	"sync"
	"testing"
	"time"
)

// shedStep is one step of a summary test: sheds to add, then the clock moved and the timer
// fired or not.
type shedStep struct {
	add     []string
	advance time.Duration
	fire    bool
	// lines are the lines expected after the step.
	lines []string
}

func TestSummary(t *testing.T) {
	tests := []struct {
		desc  string
		steps []shedStep
	}{
		{
			desc: "one shed is reported a second later",
			steps: []shedStep{
				{add: []string{"queue-full"}, advance: time.Second, fire: true,
					lines: []string{`time=2025-03-01T12:00:01.250Z level=warn event=shed middleware=shop count=1 interval=1s reasons=queue-full:1`}},
			},
		},
		{
			desc: "a burst is one line, reasons by falling count",
			steps: []shedStep{
				{add: []string{"miss-rate", "queue-full", "queue-full", "circuit-open", "queue-full", "miss-rate"}, advance: 1001 * time.Millisecond, fire: true,
					lines: []string{`time=2025-03-01T12:00:01.251Z level=warn event=shed middleware=shop count=6 interval=1.001s reasons="queue-full:3 miss-rate:2 circuit-open:1"`}},
			},
		},
		{
			desc: "ExampleSummary's burst",
			steps: []shedStep{
				{add: append(repeat("queue-full", 12), repeat("miss-rate", 3)...), advance: ShedEvery, fire: true,
					lines: []string{`time=2025-03-01T12:00:01.250Z level=warn event=shed middleware=shop count=15 interval=1s reasons="queue-full:12 miss-rate:3"`}},
			},
		},
		{
			desc: "nothing is written before the timer fires",
			steps: []shedStep{
				{add: []string{"queue-full", "queue-full"}, advance: 500 * time.Millisecond},
				{add: []string{"queue-full"}, advance: 500 * time.Millisecond, fire: true,
					lines: []string{`time=2025-03-01T12:00:01.250Z level=warn event=shed middleware=shop count=3 interval=1s reasons=queue-full:3`}},
			},
		},
		{
			desc: "a quiet second writes nothing, and the next shed starts a new line",
			steps: []shedStep{
				{add: []string{"queue-full"}, advance: time.Second, fire: true,
					lines: []string{`time=2025-03-01T12:00:01.250Z level=warn event=shed middleware=shop count=1 interval=1s reasons=queue-full:1`}},
				{advance: 5 * time.Second, fire: true},
				{add: []string{"miss-rate"}, advance: time.Second, fire: true,
					lines: []string{`time=2025-03-01T12:00:07.250Z level=warn event=shed middleware=shop count=1 interval=1s reasons=miss-rate:1`}},
			},
		},
		{
			desc: "reasons past MaxReasons count as other",
			steps: []shedStep{
				{add: []string{"r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r1", "r10"}, advance: time.Second, fire: true,
					lines: []string{`time=2025-03-01T12:00:01.250Z level=warn event=shed middleware=shop count=12 interval=1s reasons="other:3 r1:2 r2:1 r3:1 r4:1 r5:1 r6:1 r7:1 r8:1"`}},
			},
		},
		{
			desc: "reasons are counted afresh in each line",
			steps: []shedStep{
				{add: []string{"r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8"}, advance: time.Second, fire: true,
					lines: []string{`time=2025-03-01T12:00:01.250Z level=warn event=shed middleware=shop count=8 interval=1s reasons="r1:1 r2:1 r3:1 r4:1 r5:1 r6:1 r7:1 r8:1"`}},
				{add: []string{"r9"}, advance: time.Second, fire: true,
					lines: []string{`time=2025-03-01T12:00:02.250Z level=warn event=shed middleware=shop count=1 interval=1s reasons=r9:1`}},
			},
		},
		{
			desc: "a reason that needs quoting",
			steps: []shedStep{
				{add: []string{"no \"slot\""}, advance: time.Second, fire: true,
					lines: []string{`time=2025-03-01T12:00:01.250Z level=warn event=shed middleware=shop count=1 interval=1s reasons="no \"slot\":1"`}},
			},
		},
	}
	for _, tc := range tests {
		r := newRig(t, "", "shop")
		s := NewSummary(r.log)
		for i, st := range tc.steps {
			for _, reason := range st.add {
				CountShed(s, reason)
			}
			r.clock.Add(st.advance)
			if st.fire {
				r.fire()
			}
			if got := r.take(); !equalLines(got, st.lines) {
				t.Errorf("%s, step %d:\n got %q\nwant %q", tc.desc, i, got, st.lines)
			}
		}
		if r.most > 1 {
			t.Errorf("%s: %d timers pending at once, want at most 1", tc.desc, r.most)
		}
		for _, d := range r.delays {
			if d != ShedEvery {
				t.Errorf("%s: timer armed for %v, want %v", tc.desc, d, ShedEvery)
			}
		}
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func TestSummaryJSON(t *testing.T) {
	r := newRig(t, FormatJSON, "shop")
	s := NewSummary(r.log)
	CountShed(s, "queue-full")
	CountShed(s, "miss-rate")
	CountShed(s, "queue-full")
	r.clock.Add(time.Second)
	r.fire()
	want := []string{`{"time":"2025-03-01T12:00:01.250Z","level":"warn","event":"shed","middleware":"shop","count":3,"interval":"1s","reasons":"queue-full:2 miss-rate:1"}`}
	if got := r.take(); !equalLines(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// TestSummaryArmsOnce checks that a line's sheds arm one timer, and that the next shed after
// the line arms the next.
func TestSummaryArmsOnce(t *testing.T) {
	r := newRig(t, "", "shop")
	s := NewSummary(r.log)
	for i := 0; i < 100; i++ {
		CountShed(s, "queue-full")
	}
	if got := len(r.delays); got != 1 {
		t.Fatalf("100 sheds armed %d timers, want 1", got)
	}
	r.fire()
	CountShed(s, "queue-full")
	if got := len(r.delays); got != 2 {
		t.Fatalf("a shed after the line armed %d timers in all, want 2", got)
	}
}

func TestSummarySinkPanics(t *testing.T) {
	l, err := New(Settings{
		Sink:      func(line string) { panic("sink") },
		AfterFunc: func(d time.Duration, f func()) { f() },
	})
	if err != nil {
		t.Fatalf("New error = %v", err)
	}
	s := NewSummary(l)
	CountShed(s, "queue-full") // the timer fires at once, the sink panics, the report recovers
	CountShed(s, "queue-full")
}

// TestSummaryConcurrent adds sheds from many goroutines while the timer fires, and checks
// that every shed is reported once and one timer at most is pending (run with -race).
func TestSummaryConcurrent(t *testing.T) {
	const workers, each = 8, 200
	r := newRig(t, "", "shop")
	s := NewSummary(r.log)
	start := make(chan struct{})
	done := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			<-start
			reason := "reason-" + strconv.Itoa(w%3)
			for i := 0; i < each; i++ {
				CountShed(s, reason)
			}
		}(w)
	}
	go func() {
		wg.Wait()
		close(done)
	}()
	close(start)
	finished := false
	timeout := time.After(time.Minute)
	for !finished {
		select {
		case <-done:
			finished = true
		case <-timeout:
			t.Fatal("hangs: the adding goroutines never finished")
		default:
			r.clock.Add(time.Millisecond)
			r.fire()
		}
	}
	r.fire()

	total := 0
	for _, line := range r.take() {
		kv, err := parseLogfmt(line)
		if err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		n, err := strconv.Atoi(valueOf(kv, "count"))
		if err != nil {
			t.Fatalf("line %q: count: %v", line, err)
		}
		total += n
	}
	if total != workers*each {
		t.Errorf("lines count %d sheds, want %d", total, workers*each)
	}
	if r.most > 1 {
		t.Errorf("%d timers pending at once, want at most 1", r.most)
	}
}

func TestReasonList(t *testing.T) {
	tests := []struct {
		desc   string
		counts map[string]int
		want   string
	}{
		{"none", map[string]int{}, ""},
		{"one", map[string]int{"queue-full": 4}, "queue-full:4"},
		{"by count then name", map[string]int{"b": 2, "a": 2, "c": 5, "d": 1}, "c:5 a:2 b:2 d:1"},
	}
	for _, tc := range tests {
		if got := reasonList(tc.counts); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.desc, got, tc.want)
		}
	}
}

// TestDefaultAfterFunc runs the default timer with no delay: under Yaegi it hands an
// interpreted func to the compiled time.AfterFunc, which calls it on its own goroutine.
func TestDefaultAfterFunc(t *testing.T) {
	l, err := New(Settings{})
	if err != nil {
		t.Fatalf("New error = %v", err)
	}
	fired := make(chan struct{})
	l.after(0, func() { close(fired) })
	select {
	case <-fired:
	case <-time.After(time.Minute):
		t.Fatal("hangs: the default timer never fired")
	}
}
