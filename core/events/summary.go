package events

import (
	"strconv"
	"sync"
	"time"
)

const (
	// ShedEvery is the least time between two shed lines of a Summary, and how long after
	// the first shed it holds a line is written.
	ShedEvery = time.Second
	// MaxReasons bounds the distinct reasons one shed line counts; sheds for further reasons
	// count under OtherReason.
	MaxReasons = 8
	// OtherReason is where the reasons past MaxReasons are counted.
	OtherReason = "other"
)

// Summary counts shed requests by reason and writes them as one Shed line at most every
// ShedEvery: a request path under overload must not write a line per request. It is safe for
// concurrent use.
type Summary struct {
	log *Log
	// fire is the timer's callback, made once so that arming a timer allocates no closure.
	fire func()

	// mu guards the fields below.
	mu sync.Mutex
	// total counts the sheds the pending line holds; a timer is armed while it is above zero.
	total int
	// counts holds at most MaxReasons reasons, and OtherReason beyond them.
	counts map[string]int
	// since is when the first shed of the pending line was counted.
	since time.Time
}

// NewSummary returns a Summary that writes to l.
func NewSummary(l *Log) *Summary {
	s := &Summary{log: l, counts: make(map[string]int)}
	s.fire = func() { report(s) }
	return s
}

// CountShed counts one shed request for reason (such as "queue-full" or "miss-rate", the
// reason its Cache-Status names). The first shed of a line arms the timer that writes it
// ShedEvery later.
//
// A function, not a method, and the first sight of a reason in a function of its own: under
// Yaegi a method call and every frame slot cost on each shed request (docs/yaegi.md).
func CountShed(s *Summary, reason string) {
	s.mu.Lock()
	if n, ok := s.counts[reason]; ok {
		s.counts[reason] = n + 1
	} else {
		countNew(s, reason)
	}
	s.total++
	total := s.total
	s.mu.Unlock()
	if total == 1 {
		arm(s)
	}
}

// countNew counts the first shed of a line for reason, or for OtherReason once the line holds
// MaxReasons reasons. Called with s.mu held.
func countNew(s *Summary, reason string) {
	if len(s.counts) >= MaxReasons {
		reason = OtherReason
	}
	s.counts[reason]++
}

// arm notes when the pending line began and arms its timer. Only the CountShed that took
// total from zero calls it, and total returns to zero only when the timer fires, so one timer
// at most is pending and two lines are at least ShedEvery apart.
func arm(s *Summary) {
	now := s.log.now()
	s.mu.Lock()
	s.since = now
	s.mu.Unlock()
	s.log.after(ShedEvery, s.fire)
}

// report writes the pending line, on the timer's goroutine.
func report(s *Summary) {
	// Nothing recovers a panic on a timer's goroutine: one there would end Traefik.
	defer func() { recover() }()
	now := s.log.now()
	s.mu.Lock()
	total := s.total
	counts := s.counts
	since := s.since
	s.total = 0
	s.counts = make(map[string]int)
	s.mu.Unlock()
	if total == 0 {
		return
	}
	s.log.Emit(Shed, Int("count", total), Dur("interval", now.Sub(since).Round(time.Millisecond)), Str("reasons", reasonList(counts)))
}

// pair is one reason and its count.
type pair struct {
	reason string
	n      int
}

// reasonList writes counts as "reason:count" pairs by falling count, then by reason.
func reasonList(counts map[string]int) string {
	pairs := make([]pair, 0, len(counts))
	for r, n := range counts {
		// Insertion sort: at most MaxReasons+1 pairs.
		i := len(pairs)
		pairs = append(pairs, pair{r, n})
		for i > 0 && (pairs[i-1].n < n || (pairs[i-1].n == n && pairs[i-1].reason > r)) {
			pairs[i] = pairs[i-1]
			i--
		}
		pairs[i] = pair{r, n}
	}
	b := make([]byte, 0, 24*len(pairs))
	for i, p := range pairs {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, p.reason...)
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(p.n), 10)
	}
	return string(b)
}
