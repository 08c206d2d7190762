// Package budget is Weir's request budgets: token buckets that bound how many requests a
// key (a client, a host) may send per period, with a burst saved up while it is quiet.
//
// Each bucket is one integer, its theoretical arrival time (the generic cell rate
// algorithm, ITU-T I.371): a request is allowed while the time its bucket is booked up to,
// after it, stays within the burst of now. A bucket booked up to no later than now is full,
// the same as no bucket at all, so a bucket idle for its burst is dropped without changing
// any answer.
//
// Buckets live in a Table bounded in entries: two generations of maps, the current one and
// the one before. A bucket used is moved to the current generation; the generations turn
// when the current one is full or when a burst has passed, and the one before is dropped.
// Whatever a flood of distinct keys sends, a Table holds at most MaxBuckets buckets. A
// turn forced by a full generation drops buckets that were not yet full: under such a
// flood a key idle for a whole generation starts again with its burst.
//
// The package knows nothing of HTTP: the engine decides what a key is and what to answer.
package budget

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Errors of ParseRate and New.
var (
	// ErrRate: a rate that is not N/10s, N/1s or N/1m with N at least 1.
	ErrRate = errors.New("not a rate such as \"200/10s\"")
	// ErrSettings: a setting no default can stand for.
	ErrSettings = errors.New("invalid budget setting")
)

// DefaultMaxBuckets bounds a Table's buckets when Settings.MaxBuckets is zero: about 10MB
// of keys and integers with IPv6 /64 keys.
const DefaultMaxBuckets = 100000

// Rate is N requests per Per.
type Rate struct {
	N   int
	Per time.Duration
}

// String writes r as ParseRate reads it.
func (r Rate) String() string {
	switch r.Per {
	case time.Minute:
		return strconv.Itoa(r.N) + "/1m"
	case time.Second:
		return strconv.Itoa(r.N) + "/1s"
	}
	return strconv.Itoa(r.N) + "/" + r.Per.String()
}

// Interval is the time one request of r takes from its bucket: Per/N.
func (r Rate) Interval() time.Duration {
	if r.N <= 0 {
		return 0
	}
	return r.Per / time.Duration(r.N)
}

// ParseRate reads "N/10s", "N/1s" or "N/1m" (also "N/s", "N/m"), N a whole number of at
// least 1.
func ParseRate(s string) (Rate, error) {
	v := strings.TrimSpace(s)
	i := strings.IndexByte(v, '/')
	if i < 0 {
		return Rate{}, ErrRate
	}
	n, err := strconv.Atoi(strings.TrimSpace(v[:i]))
	if err != nil || n < 1 || n > 1000000000 {
		return Rate{}, ErrRate
	}
	var per time.Duration
	switch strings.TrimSpace(v[i+1:]) {
	case "10s":
		per = 10 * time.Second
	case "1s", "s":
		per = time.Second
	case "1m", "m", "60s":
		per = time.Minute
	default:
		return Rate{}, ErrRate
	}
	return Rate{N: n, Per: per}, nil
}

// Settings configures a Table.
type Settings struct {
	// Rate is what each bucket allows. Required: a Table without a rate is an error.
	Rate Rate
	// Burst is how much of its rate a bucket saves up while quiet: 2s of 200/10s is 40
	// requests at once. Zero: one request's interval, no burst.
	Burst time.Duration
	// MaxBuckets bounds the buckets held. Zero: DefaultMaxBuckets.
	MaxBuckets int
	// MaxAhead is how far past its burst Reserve may book a bucket: a request booked ahead
	// waits for its turn. Zero: Reserve books nothing that Take would refuse.
	MaxAhead time.Duration
	// MaxPending is how many keys' allowed requests a Table counts for Drain between two
	// drains, for a budget shared with other instances; the requests of further keys are
	// not counted. Zero: none are counted.
	MaxPending int
}

// Validate names the first setting that is wrong.
func (s Settings) Validate() error {
	if s.Rate.N < 1 || s.Rate.Per <= 0 {
		return fmt.Errorf("%w: rate %d/%s", ErrSettings, s.Rate.N, s.Rate.Per)
	}
	if s.Burst < 0 {
		return fmt.Errorf("%w: burst %s must not be negative", ErrSettings, s.Burst)
	}
	if s.MaxAhead < 0 {
		return fmt.Errorf("%w: maxAhead %s must not be negative", ErrSettings, s.MaxAhead)
	}
	if s.MaxPending < 0 {
		return fmt.Errorf("%w: maxPending %d must not be negative", ErrSettings, s.MaxPending)
	}
	if s.MaxBuckets < 0 {
		return fmt.Errorf("%w: maxBuckets %d must not be negative", ErrSettings, s.MaxBuckets)
	}
	return nil
}

// Table holds the buckets of one budget. It is safe for concurrent use.
type Table struct {
	// interval and limit are nanoseconds: a request's cost, and how far past now a bucket
	// may be booked (the burst, at least one interval).
	interval int64
	limit    int64
	ahead    int64
	half     int

	// mu guards the generations and turnAt.
	mu   sync.Mutex
	cur  map[string]int64
	prev map[string]int64
	// turnAt is when the generations turn unless the current one fills first, in Unix
	// nanoseconds.
	turnAt int64
	// pending counts the requests allowed per key since the last Drain, at most maxPending
	// keys; nil when nothing is counted.
	pending    map[string]int64
	maxPending int
}

// New returns a Table with settings s, or the error of s.Validate.
func New(s Settings) (*Table, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if s.MaxBuckets == 0 {
		s.MaxBuckets = DefaultMaxBuckets
	}
	t := &Table{interval: int64(s.Rate.Interval()), limit: int64(s.Burst), ahead: int64(s.MaxAhead)}
	if t.interval < 1 {
		t.interval = 1
	}
	if t.limit < t.interval {
		t.limit = t.interval
	}
	t.half = s.MaxBuckets / 2
	if t.half < 1 {
		t.half = 1
	}
	t.cur = make(map[string]int64)
	t.prev = make(map[string]int64)
	if s.MaxPending > 0 {
		t.maxPending = s.MaxPending
		t.pending = make(map[string]int64)
	}
	return t, nil
}

// Take spends one request of key's bucket at now: 0 when it is allowed, else how long until
// it would be. A refused request spends nothing. A function rather than a method: in Yaegi a
// method call goes through a reflective wrapper that a function call does not, and every
// request makes this one.
func Take(t *Table, key string, now time.Time) time.Duration {
	at := now.UnixNano()
	t.mu.Lock()
	tat, ok := findLocked(t, key, at)
	next := tat + t.interval
	if over := next - at - t.limit; over > 0 {
		if ok {
			// Used: it stays in the current generation.
			t.cur[key] = tat
		}
		t.mu.Unlock()
		return time.Duration(over)
	}
	t.cur[key] = next
	if t.pending != nil {
		countLocked(t, key)
	}
	t.mu.Unlock()
	return 0
}

// countLocked counts one allowed request of key for Drain, within maxPending keys.
func countLocked(t *Table, key string) {
	n, ok := t.pending[key]
	if ok || len(t.pending) < t.maxPending {
		t.pending[key] = n + 1
	}
}

// Drain returns the requests allowed per key since the last Drain (with MaxPending set) and
// starts counting afresh, so that a caller can add them to a budget shared with others.
func Drain(t *Table) (keys []string, counts []int64) {
	t.mu.Lock()
	pending := t.pending
	if len(pending) > 0 {
		t.pending = make(map[string]int64)
	}
	t.mu.Unlock()
	if len(pending) == 0 {
		return nil, nil
	}
	keys = make([]string, 0, len(pending))
	counts = make([]int64, 0, len(pending))
	for k, n := range pending {
		keys = append(keys, k)
		counts = append(counts, n)
	}
	return keys, counts
}

// Raise books key's bucket at least ahead past now: what the requests of every instance
// sharing the budget booked, as the shared count says. A bucket booked further already keeps
// its booking.
func Raise(t *Table, key string, ahead time.Duration, now time.Time) {
	at := now.UnixNano()
	until := at + int64(ahead)
	t.mu.Lock()
	tat, _ := findLocked(t, key, at)
	if until > tat {
		tat = until
	}
	if tat > at {
		t.cur[key] = tat
	}
	t.mu.Unlock()
}

// Horizon is how far past now a bucket of t may be booked before its key is refused: its
// burst, and what Reserve books ahead of it.
func Horizon(t *Table) time.Duration {
	return time.Duration(t.limit + t.ahead)
}

// Interval is one request's cost in t's buckets.
func Interval(t *Table) time.Duration {
	return time.Duration(t.interval)
}

// Reserve books key's next turn at now, at most MaxAhead past what Take would allow: it
// returns how long the request waits for its turn (0: at once) and true, or how long until
// a turn could be booked and false, booking nothing. With no burst, the turns of one key
// are evenly spaced, one every interval, never a burst at the start of a period.
func Reserve(t *Table, key string, now time.Time) (time.Duration, bool) {
	at := now.UnixNano()
	t.mu.Lock()
	tat, _ := findLocked(t, key, at)
	next := tat + t.interval
	if over := next - at - t.limit - t.ahead; over > 0 {
		t.cur[key] = tat
		t.mu.Unlock()
		return time.Duration(over), false
	}
	t.cur[key] = next
	t.mu.Unlock()
	wait := next - at - t.limit
	if wait < 0 {
		wait = 0
	}
	return time.Duration(wait), true
}

// findLocked turns the generations when they are due at at, and returns key's bucket (the
// time its booked requests run out, no earlier than at: a bucket is never fuller than full)
// and whether it has one, moving it from the generation before into the current one's reach
// (the caller stores it there).
func findLocked(t *Table, key string, at int64) (int64, bool) {
	if at >= t.turnAt || len(t.cur) >= t.half {
		turnLocked(t, at)
	}
	tat, ok := t.cur[key]
	if !ok {
		if tat, ok = t.prev[key]; ok {
			delete(t.prev, key)
		}
	}
	if tat < at {
		tat = at
	}
	return tat, ok
}

// turnLocked drops the generation before and starts a new current one. Every bucket in the
// generation dropped on time was last used a burst (and MaxAhead) ago or more, so was full
// again.
func turnLocked(t *Table, at int64) {
	t.prev = t.cur
	t.cur = make(map[string]int64)
	t.turnAt = at + t.limit + t.ahead
}

// Len is how many buckets t holds.
func (t *Table) Len() int {
	t.mu.Lock()
	n := len(t.cur) + len(t.prev)
	t.mu.Unlock()
	return n
}
