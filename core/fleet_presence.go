package core

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirproxy/weir/core/console"
	"github.com/weirproxy/weir/core/store"
)

// Which instances share the store, for the console's fleet list (operator_console.go,
// Fleet): an instance that writes one of the fleet's records (the control record, the
// breakers' counts, a breaker's deadline, the shared budgets) also writes its id and the
// time into the middleware's presence record, at most every fleetSeenEvery, on the same
// goroutine, after the write it joins. Nothing else writes it: an instance writing nothing
// runs no timer for it, and drops out of the list fleetSeenFor after its last write.
// Writing is a read, a change and a write, as the other records': two instances writing in
// the same instant may drop one's time, which its next write puts back.

const (
	// fleetSeenPrefix keeps the presence record apart from cache keys and the other
	// records.
	fleetSeenPrefix = "\x00seen:"
	// fleetSeenEvery is how often an instance writes its time at most: an instance writing
	// the counts record every fleetEvery adds one read and one write of the presence record
	// each fleetSeenEvery.
	fleetSeenEvery = 10 * time.Second
	// fleetSeenFor is how long an instance stays in the list after its last write: the
	// console's window.
	fleetSeenFor = console.WindowSeconds * time.Second
	// fleetIDMax bounds an id read from the record: the ids Weir writes are 16 hex digits.
	fleetIDMax = 64
)

// fleetSeenRecord is the presence record: when each instance last wrote a fleet record, on
// its own clock.
type fleetSeenRecord struct {
	Instances map[string]time.Time `json:"instances"`
}

// presence is a middleware's entry in the presence record. One lives as long as the engine,
// across reloads, so that a reload is not a new instance.
type presence struct {
	// key is the record's key; id names this instance in it and in the counts record: random,
	// nothing of the host or its configuration.
	key string
	id  string
	// last is the UnixNano of the last write started.
	last int64

	// mu guards st.
	mu sync.Mutex
	st store.Store // nil: process memory, no fleet
}

func newPresence(name string) *presence {
	return &presence{key: fleetSeenPrefix + name, id: newInstanceID()}
}

// setStore points p at the engine's shared store (nil: none).
func (p *presence) setStore(st store.Store) {
	p.mu.Lock()
	p.st = st
	p.mu.Unlock()
}

// markSeen writes p's time at now into the presence record unless it did within
// fleetSeenEvery: called after a write of a fleet record, never on the request path. p nil
// (a fleet built alone, in tests): nothing.
func markSeen(p *presence, now time.Time) {
	if p == nil {
		return
	}
	at := now.UnixNano()
	last := atomic.LoadInt64(&p.last)
	// A clock stepped back writes at once.
	if at >= last && at-last < int64(fleetSeenEvery) {
		return
	}
	if !atomic.CompareAndSwapInt64(&p.last, last, at) {
		return
	}
	p.mu.Lock()
	st := p.st
	p.mu.Unlock()
	if st == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), fleetTimeout)
	defer cancel()
	rec, err := readSeen(ctx, st, p.key)
	if err != nil {
		return
	}
	rec.Instances[p.id] = now
	pruneSeen(rec, now)
	body, err := json.Marshal(rec)
	if err != nil {
		return
	}
	ent := &store.Entry{Status: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Body: body,
		Born: now, FreshUntil: now.Add(fleetSeenFor), KeepUntil: now.Add(fleetSeenFor)}
	ent.Prepare()
	st.Set(ctx, p.key, ent)
}

// readSeen returns the presence record, empty when there is none or it cannot be read.
func readSeen(ctx context.Context, st store.Store, key string) (*fleetSeenRecord, error) {
	rec := &fleetSeenRecord{}
	ent, err := st.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	if ent != nil && ent.Status == http.StatusOK {
		// Untrusted input: a record nobody can read, or past the bounds, is an empty one,
		// which the next write replaces.
		if len(ent.Body) > fleetRecordMax || json.Unmarshal(ent.Body, rec) != nil || len(rec.Instances) > fleetInstancesMax {
			rec = &fleetSeenRecord{}
		}
	}
	if rec.Instances == nil {
		rec.Instances = map[string]time.Time{}
	}
	return rec, nil
}

// pruneSeen drops from rec the instances not seen within fleetSeenFor of now (their time
// further from now either way: a clock far ahead is no more believed than one behind), and
// ids longer than fleetIDMax; then the longest unseen past fleetInstancesMax.
func pruneSeen(rec *fleetSeenRecord, now time.Time) {
	for id, at := range rec.Instances {
		if len(id) > fleetIDMax || now.Sub(at) > fleetSeenFor || at.Sub(now) > fleetSeenFor {
			delete(rec.Instances, id)
		}
	}
	if len(rec.Instances) <= fleetInstancesMax {
		return
	}
	ids := make([]string, 0, len(rec.Instances))
	for id := range rec.Instances {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return rec.Instances[ids[i]].After(rec.Instances[ids[j]]) })
	for _, id := range ids[fleetInstancesMax:] {
		delete(rec.Instances, id)
	}
}
