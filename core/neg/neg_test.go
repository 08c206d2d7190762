package neg

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirproxy/weir/internal/await"
)

// t0 is the start of every test's clock.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func newTestCache(t *testing.T, s Settings) *Cache {
	t.Helper()
	c, err := New(s)
	if err != nil {
		t.Fatalf("New() error = %v", err)
	}
	return c
}

// wantEntry fails t unless c serves an entry for key at now with status (0: no entry).
func wantEntry(t *testing.T, c *Cache, key string, now time.Time, status int) {
	t.Helper()
	e, ok := c.Lookup(key, now)
	if status == 0 {
		if ok {
			t.Errorf("Lookup(%q) = %+v, want nothing", key, e)
		}
		return
	}
	if !ok || e.Status != status {
		t.Errorf("Lookup(%q) = %+v, %v, want status %d", key, e, ok, status)
	}
}

func TestSettings(t *testing.T) {
	tests := []struct {
		desc string
		s    Settings
		want string // substring of the error; "" for none
	}{
		{desc: "zero is valid", s: Settings{}},
		{desc: "set", s: Settings{TTL: time.Second, MaxEntries: 5}},
		{desc: "negative ttl", s: Settings{TTL: -time.Second}, want: "negative.ttl: -1s must not be negative"},
		{desc: "negative max entries", s: Settings{MaxEntries: -3}, want: "negative.maxEntries: -3 must not be negative"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			c, err := New(tc.s)
			if tc.want == "" {
				if err != nil || c == nil {
					t.Fatalf("New() = %v, %v, want a cache", c, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalidSetting) {
				t.Fatalf("New() error = %v, want ErrInvalidSetting containing %q", err, tc.want)
			}
		})
	}
	d := Settings{}.withDefaults()
	if d.TTL != 2*time.Second || d.MaxEntries != 10000 {
		t.Errorf("withDefaults() = %+v, want TTL 2s and MaxEntries 10000", d)
	}
}

func TestRecordAndLookup(t *testing.T) {
	c := newTestCache(t, Settings{})
	if !c.Record("k", Failure{Status: 503, RetryAfter: 30 * time.Second}, t0) {
		t.Fatalf("Record(503) = false, want true")
	}
	e, ok := c.Lookup("k", t0.Add(time.Second))
	want := Entry{Status: 503, RetryAfter: 30 * time.Second, At: t0, Until: t0.Add(2 * time.Second)}
	if !ok || e != want {
		t.Errorf("Lookup() = %+v, %v, want %+v, true", e, ok, want)
	}
	wantEntry(t, c, "other", t0, 0)
}

func TestExpiry(t *testing.T) {
	c := newTestCache(t, Settings{TTL: 2 * time.Second})
	c.Record("k", Failure{Status: 504}, t0)
	wantEntry(t, c, "k", t0.Add(2*time.Second-time.Nanosecond), 504)
	wantEntry(t, c, "k", t0.Add(2*time.Second), 0)
	if c.Len() != 0 {
		t.Errorf("Len() after an expired lookup = %d, want 0: expired entries are dropped", c.Len())
	}

	// Record drops expired entries too, without a lookup.
	c.Record("a", Failure{Status: 502}, t0)
	c.Record("b", Failure{Status: 502}, t0.Add(time.Second))
	c.Record("c", Failure{Status: 502}, t0.Add(2*time.Second))
	if c.Len() != 2 {
		t.Errorf("Len() = %d, want 2: a expired when c was recorded", c.Len())
	}
}

func TestRecordRefuses(t *testing.T) {
	tests := []struct {
		desc string
		f    Failure
		want bool
	}{
		{desc: "502", f: Failure{Status: 502}, want: true},
		{desc: "503", f: Failure{Status: 503}, want: true},
		{desc: "504", f: Failure{Status: 504}, want: true},
		{desc: "500 speaks of the request", f: Failure{Status: 500}},
		{desc: "501", f: Failure{Status: 501}},
		{desc: "404", f: Failure{Status: 404}},
		{desc: "429", f: Failure{Status: 429}},
		{desc: "200", f: Failure{Status: 200}},
		{desc: "zero", f: Failure{}},
		{desc: "credentialed 503", f: Failure{Status: 503, Credentialed: true}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			c := newTestCache(t, Settings{})
			if got := c.Record("k", tc.f, t0); got != tc.want {
				t.Errorf("Record(%+v) = %v, want %v", tc.f, got, tc.want)
			}
			if _, ok := c.Lookup("k", t0); ok != tc.want {
				t.Errorf("Lookup() found %v, want %v", ok, tc.want)
			}
			if got := Cacheable(tc.f); got != tc.want {
				t.Errorf("Cacheable(%+v) = %v, want %v", tc.f, got, tc.want)
			}
		})
	}
}

func TestNegativeRetryAfterIsNone(t *testing.T) {
	c := newTestCache(t, Settings{})
	c.Record("k", Failure{Status: 503, RetryAfter: -time.Second}, t0)
	if e, _ := c.Lookup("k", t0); e.RetryAfter != 0 {
		t.Errorf("RetryAfter = %v, want 0", e.RetryAfter)
	}
}

func TestEvictsOldestWhenFull(t *testing.T) {
	c := newTestCache(t, Settings{MaxEntries: 3, TTL: time.Minute})
	for i, k := range []string{"a", "b", "c"} {
		c.Record(k, Failure{Status: 503}, t0.Add(time.Duration(i)*time.Second))
	}
	// Recording a again makes it the newest, so b is now the oldest.
	c.Record("a", Failure{Status: 502}, t0.Add(3*time.Second))
	c.Record("d", Failure{Status: 504}, t0.Add(4*time.Second))
	now := t0.Add(5 * time.Second)
	wantEntry(t, c, "a", now, 502)
	wantEntry(t, c, "b", now, 0)
	wantEntry(t, c, "c", now, 503)
	wantEntry(t, c, "d", now, 504)

	for i := 0; i < 100; i++ {
		c.Record("k"+strconv.Itoa(i), Failure{Status: 503}, now)
	}
	if c.Len() != 3 {
		t.Errorf("Len() after a flood = %d, want 3", c.Len())
	}
	wantEntry(t, c, "k99", now, 503)
	wantEntry(t, c, "k96", now, 0)
}

// Expiry drops from the oldest end and stops at the first entry still in force: an entry
// recorded again has moved to the newest end, behind one recorded after it the first time.
func TestExpiryFollowsRecordAgain(t *testing.T) {
	c := newTestCache(t, Settings{TTL: 10 * time.Second})
	c.Record("a", Failure{Status: 503}, t0)
	c.Record("b", Failure{Status: 503}, t0.Add(time.Second))
	c.Record("c", Failure{Status: 503}, t0.Add(2*time.Second))
	c.Record("a", Failure{Status: 502}, t0.Add(3*time.Second)) // b, c, a
	now := t0.Add(12 * time.Second)                            // b and c have expired, a has not
	c.Record("d", Failure{Status: 504}, now)
	if c.Len() != 2 {
		t.Errorf("Len() = %d, want 2: b and c dropped when d was recorded", c.Len())
	}
	wantEntry(t, c, "a", now, 502)
	wantEntry(t, c, "d", now, 504)
}

func TestRecordAgainRestartsTTL(t *testing.T) {
	c := newTestCache(t, Settings{})
	c.Record("k", Failure{Status: 503}, t0)
	c.Record("k", Failure{Status: 502, RetryAfter: time.Second}, t0.Add(time.Second))
	e, ok := c.Lookup("k", t0.Add(2500*time.Millisecond))
	if !ok || e.Status != 502 || e.RetryAfter != time.Second || !e.Until.Equal(t0.Add(3*time.Second)) {
		t.Errorf("Lookup() = %+v, %v, want the second failure until t0+3s", e, ok)
	}
}

func TestForget(t *testing.T) {
	c := newTestCache(t, Settings{})
	c.Record("a", Failure{Status: 503}, t0)
	c.Record("b", Failure{Status: 503}, t0)
	c.Record("c", Failure{Status: 503}, t0)
	c.Forget("b")
	c.Forget("missing")
	wantEntry(t, c, "b", t0, 0)
	c.Forget("c")
	c.Forget("a")
	if c.Len() != 0 {
		t.Errorf("Len() = %d, want 0", c.Len())
	}
	// The age list is whole again: recording works after emptying it.
	c.Record("d", Failure{Status: 503}, t0)
	wantEntry(t, c, "d", t0, 503)
}

func TestConcurrentUse(t *testing.T) {
	c := newTestCache(t, Settings{MaxEntries: 16})
	await.Goroutines(t, 8, 10*time.Second, "concurrent Record, Lookup and Forget", func(g int) {
		for i := 0; i < 300; i++ {
			k := strconv.Itoa((g * i) % 40)
			now := t0.Add(time.Duration(i) * 10 * time.Millisecond)
			switch i % 3 {
			case 0:
				c.Record(k, Failure{Status: 503}, now)
			case 1:
				c.Lookup(k, now)
			default:
				c.Forget(k)
			}
		}
	})
	if c.Len() > 16 {
		t.Errorf("Len() = %d, want at most 16", c.Len())
	}
}

// BenchmarkLookupMiss measures the check a cache miss makes before going to the origin.
func BenchmarkLookupMiss(b *testing.B) {
	c, err := New(Settings{})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		c.Lookup("k", t0)
	}
}

// cacheKeys returns n keys and a cache of at most max entries holding a failure for each of
// them, recorded in order.
func cacheKeys(b *testing.B, n, max int) (*Cache, []string) {
	c, err := New(Settings{MaxEntries: max})
	if err != nil {
		b.Fatal(err)
	}
	keys := make([]string, n)
	for i := 0; i < n; i++ {
		keys[i] = "k" + strconv.Itoa(i)
		c.Record(keys[i], Failure{Status: 503}, t0)
	}
	return c, keys
}

// BenchmarkRecordLookup measures recording a failure again, which makes the oldest entry the
// newest, and finding it: 256 keys round robin.
func BenchmarkRecordLookup(b *testing.B) {
	c, keys := cacheKeys(b, 256, 0)
	f := Failure{Status: 503}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := keys[i%256]
		c.Record(k, f, t0)
		c.Lookup(k, t0)
	}
}

// BenchmarkRecordEvict measures recording a new failure in a full cache, which evicts the
// oldest: 512 keys round robin through a cache of 256.
func BenchmarkRecordEvict(b *testing.B) {
	c, keys := cacheKeys(b, 512, 256)
	f := Failure{Status: 503}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.Record(keys[i%512], f, t0)
	}
}
