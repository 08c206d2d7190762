package core

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/breaker"
	"github.com/weirproxy/weir/core/budget"
	"github.com/weirproxy/weir/core/store"
	"github.com/weirproxy/weir/internal/redistest"
)

// Whoever can write the shared store writes what the instances read from it: each time and
// count read is capped, each record bounded (fleet_control.go, fleet_counts.go,
// fleet_budgets.go).

// writeRecord stores body under key as the fleet's records are stored.
func writeRecord(t *testing.T, st store.Store, key string, now time.Time, body []byte) {
	t.Helper()
	ent := &store.Entry{Status: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Body: body,
		Born: now, FreshUntil: now.Add(time.Hour), KeepUntil: now.Add(time.Hour)}
	ent.Prepare()
	if err := st.Set(context.Background(), key, ent); err != nil {
		t.Fatal(err)
	}
}

// controlJSON and countsJSON are the records as JSON. Typed, not one function of an
// interface{}: under Yaegi v0.16.1, json.Marshal of an interpreted struct passed on as an
// interface{} argument wrote "{}".
func controlJSON(t *testing.T, rec *fleetRecord) []byte {
	t.Helper()
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func countsJSON(t *testing.T, rec *fleetCountsRecord) []byte {
	t.Helper()
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFleetControlHostile: an open by hand until the year 3000 opens the breaker for
// fleetOpenMax; a record past its bounds (a sequence number that would stop every later
// action, too many actions or overrides, an action numbered past the record, too many
// bytes) is no record, and the next action written replaces it.
func TestFleetControlHostile(t *testing.T) {
	clock := newFakeClock()
	now := clock.Now()
	year3000 := time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)

	shared := store.NewMemory(store.MemorySettings{})
	f, g := newTestFleet(t, clock, breaker.Settings{}, nil, shared)
	writeRecord(t, shared, f.key, now, controlJSON(t, &fleetRecord{Seq: 1, Overrides: map[string]string{},
		Actions: []fleetAction{{Seq: 1, Op: "open", Key: "api.example.com", Until: year3000}}}))
	f.pollOnce()
	st := g.Get("api.example.com", now).Status(now)
	if st.State != breaker.StateOpen || st.OpenUntil.After(now.Add(fleetOpenMax)) {
		t.Errorf("open until the year 3000: state %d until %s, want open until %s at most", st.State, st.OpenUntil, now.Add(fleetOpenMax))
	}

	manyOverrides := map[string]string{}
	for i := 0; i <= fleetEntriesMax; i++ {
		manyOverrides["h"+strconv.Itoa(i)+".example.com"] = ""
	}
	manyActions := make([]fleetAction, fleetActionsKept+1)
	for i := range manyActions {
		manyActions[i] = fleetAction{Seq: 1, Op: "close", Key: "x.example.com"}
	}
	tests := []struct {
		desc string
		body []byte
	}{
		{desc: "a sequence number of math.MaxInt64", body: controlJSON(t, &fleetRecord{Seq: math.MaxInt64,
			Actions: []fleetAction{{Seq: math.MaxInt64, Op: "open", Key: "b.example.com", Until: now.Add(time.Minute)}}})},
		{desc: "a negative sequence number", body: controlJSON(t, &fleetRecord{Seq: -5})},
		{desc: "an action numbered past the record", body: controlJSON(t, &fleetRecord{Seq: 2,
			Actions: []fleetAction{{Seq: 3, Op: "open", Key: "b.example.com", Until: now.Add(time.Minute)}}})},
		{desc: "more actions than fleetActionsKept", body: controlJSON(t, &fleetRecord{Seq: 1, Actions: manyActions})},
		{desc: "more overrides than fleetEntriesMax", body: controlJSON(t, &fleetRecord{Seq: 1, Overrides: manyOverrides})},
		{desc: "more bytes than fleetRecordMax", body: []byte(`{"seq":1,"pacing":{"a.example.com":"` + strings.Repeat("1", fleetRecordMax) + `"}}`)},
	}
	for _, tc := range tests {
		shared := store.NewMemory(store.MemorySettings{MaxEntrySize: 4 << 20})
		a, ga := newTestFleet(t, clock, breaker.Settings{}, nil, shared)
		b, gb := newTestFleet(t, clock, breaker.Settings{}, nil, shared)
		writeRecord(t, shared, a.key, now, tc.body)
		if rec, err := a.read(shared); err != nil || rec != nil {
			t.Errorf("%s: read %+v, %v; want no record", tc.desc, rec, err)
		}
		a.pollOnce()
		if got := ga.Get("b.example.com", now).State(now); got != breaker.StateClosed {
			t.Errorf("%s: b.example.com state %d, want closed", tc.desc, got)
		}
		if n := len(ga.Overrides()); n != 0 {
			t.Errorf("%s: %d overrides applied, want none", tc.desc, n)
		}
		// The next action replaces the record, and reaches the others.
		ga.Get("c.example.com", now).ForceOpen(now, time.Minute)
		if err := a.publishAction("open", "c.example.com", now.Add(time.Minute)); err != nil {
			t.Fatalf("%s: %v", tc.desc, err)
		}
		b.pollOnce()
		if got := gb.Get("c.example.com", now).State(now); got != breaker.StateOpen {
			t.Errorf("%s: after an action replaced the record: state %d, want open", tc.desc, got)
		}
	}
}

// TestFleetCountsHostile: negative counts count as none and absurd ones as fleetCountMax;
// an instance with more scopes than fleetEntriesMax, and a record of more instances than
// fleetInstancesMax or bytes than fleetRecordMax, count for nothing.
func TestFleetCountsHostile(t *testing.T) {
	clock := newFakeClock()
	now := clock.Now()
	rec := &fleetCountsRecord{Instances: map[string]fleetInstanceCounts{
		"neg":  {At: now, Scopes: map[string][3]int{"a": {-1000000, 5, -3}}},
		"huge": {At: now, Scopes: map[string][3]int{"a": {math.MaxInt64, math.MaxInt64, 1}}},
	}}
	wide := map[string][3]int{}
	for i := 0; i <= fleetEntriesMax; i++ {
		wide["w"+strconv.Itoa(i)] = [3]int{0, 1, 0}
	}
	rec.Instances["wide"] = fleetInstanceCounts{At: now, Scopes: wide}
	got := fleetOthers(rec, "self", now)
	want := breaker.Counts{OK: fleetCountMax, Failures: fleetCountMax + 5, Slow: 1}
	if len(got) != 1 || got["a"] != want {
		t.Errorf("counts %+v, want only a: %+v", got, want)
	}

	shared := store.NewMemory(store.MemorySettings{MaxEntrySize: 4 << 20})
	f, _ := newTestFleet(t, clock, breaker.Settings{}, nil, shared)
	many := &fleetCountsRecord{Instances: map[string]fleetInstanceCounts{}}
	for i := 0; i <= fleetInstancesMax; i++ {
		many.Instances["i"+strconv.Itoa(i)] = fleetInstanceCounts{At: now, Scopes: map[string][3]int{"a": {0, 1, 0}}}
	}
	bodies := []struct {
		desc string
		body []byte
	}{
		{desc: "more instances than fleetInstancesMax", body: countsJSON(t, many)},
		{desc: "more bytes than fleetRecordMax", body: []byte(`{"instances":{"x":{"at":"` + now.Format(time.RFC3339) + `","scopes":{"` + strings.Repeat("a", fleetRecordMax) + `":[0,1,0]}}}}`)},
	}
	for _, tc := range bodies {
		writeRecord(t, shared, f.countsKey, now, tc.body)
		rec, err := f.readCounts(context.Background(), shared)
		if err != nil || len(rec.Instances) != 0 {
			t.Errorf("%s: read %d instances, %v; want an empty record", tc.desc, len(rec.Instances), err)
		}
	}
}

// TestBudgetBookingHostile: a shared bucket booked a year ahead in the store (a value
// written by hand) is read as no booking and replaced; a booking read far past a bucket's
// horizon raises it by budget.Horizon plus budgetBookedBeyond at most, so a client is
// refused with a Retry-After within that.
func TestBudgetBookingHostile(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	clock := newFakeClock()
	s := budgetSettings(clock)
	s.Budgets.Shared = true
	s.StoreURL = "redis://" + srv.Addr
	o := countingOrigin(t, []string{"Cache-Control", "no-store"})
	h := mustNew(t, uniqueEngineName(t), s, o)
	sh := h.budgets.share

	// The server's clock, in microseconds, a year ahead.
	reply := srv.MustDo("TIME")
	parts, ok := reply.([]interface{})
	if !ok || len(parts) != 2 {
		t.Fatalf("TIME answered %v", reply)
	}
	secs, _ := strconv.ParseInt(toString(parts[0]), 10, 64)
	yearAhead := strconv.FormatInt((secs+365*24*3600)*1000000, 10)
	key := "weir:" + sh.prefix + "client\x00192.0.2.7"
	srv.MustDo("SET", key, yearAhead)

	wantCode(t, "the client's first request", doFront(t, h, "GET", "http://example.com/a", "X-Real-IP", "192.0.2.7"), 200)
	// A request may start a share on a goroutine of its own (shareBudgets), which drains the
	// counts before flushBudgets here does, and a share may time out on a loaded machine:
	// share again, after any running share ends, until one has reached the store.
	deadline := time.Now().Add(testWait)
	for {
		awaitShare(t, sh)
		flushBudgets(h.budgets)
		after, err := strconv.ParseInt(toString(srv.MustDo("GET", key)), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		ahead := time.Duration(after-secs*1000000) * time.Microsecond
		if ahead <= time.Hour {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bucket is booked %s ahead after a share, want the year-ahead value replaced", ahead)
		}
		// A request for the next share to send, once the client's bucket has refilled.
		clock.Add(s.Budgets.Burst)
		wantCode(t, "the client's request", doFront(t, h, "GET", "http://example.com/a", "X-Real-IP", "192.0.2.7"), 200)
		clock.Add(s.Budgets.Burst)
	}
	wantCode(t, "the client's request once shared", doFront(t, h, "GET", "http://example.com/a", "X-Real-IP", "192.0.2.7"), 200)

	// A booking far past the horizon, as a store's reply: the local bucket is raised to
	// the cap, and the client's Retry-After stays within it.
	most := budget.Horizon(h.budgets.client) + budgetBookedBeyond
	ip := "192.0.2.8"
	farStore := bookerFunc(func(keys []string) []time.Duration {
		out := make([]time.Duration, len(keys))
		for i := range out {
			out[i] = 365 * 24 * time.Hour
		}
		return out
	})
	sh.setStore(farStore, nil, discardLog)
	wantCode(t, "another client's first request", doFront(t, h, "GET", "http://example.com/a", "X-Real-IP", ip), 200)
	flushBudgets(h.budgets)
	w := doFront(t, h, "GET", "http://example.com/a", "X-Real-IP", ip)
	wantCode(t, "after a year's booking read", w, 429)
	ra, err := strconv.Atoi(w.Header().Get("Retry-After"))
	if err != nil || time.Duration(ra)*time.Second > most+time.Second {
		t.Errorf("Retry-After %q, want at most %s", w.Header().Get("Retry-After"), most)
	}
}

// bookerFunc is a store.Booker answering every booking with what it returns for the keys.
type bookerFunc func(keys []string) []time.Duration

func (f bookerFunc) Book(ctx context.Context, keys []string, counts []int64, interval time.Duration) ([]time.Duration, error) {
	return f(keys), nil
}

func toString(v interface{}) string {
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	if s, ok := v.(string); ok {
		return s
	}
	return ""
}

// awaitShare waits for a share of sh's counts started by a request to end.
func awaitShare(t *testing.T, sh *budgetShare) {
	t.Helper()
	deadline := time.Now().Add(testWait)
	for atomic.LoadInt32(&sh.sharing) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("a share of the budgets hangs")
		}
		runtime.Gosched()
	}
}
