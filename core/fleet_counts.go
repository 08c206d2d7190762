package core

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"time"

	"github.com/weirproxy/weir/core/breaker"
	"github.com/weirproxy/weir/core/store"
)

// Breakers judge the fleet's counts, not only their own: with a shared store, each instance
// publishes its breakers' window counts on the fleet's loop (fleetEvery, never on the request
// path, all keys in one write) into one record per middleware, and hands each breaker the sum
// of the other instances' (breaker.Group.SetFleetCounts), so that a fleet whose instances each
// see a part of the failures opens at the fleet's ratio. Writing the record is a read, a
// change and a write: two instances writing in the same instant may drop one's counts for a
// round, which the next round puts back. A store that fails, or a record that cannot be read,
// leaves every breaker with its own counts: never closed for lack of the fleet.

const (
	// fleetCountsPrefix keeps the counts record apart from cache keys, the control record
	// and shared deadlines.
	fleetCountsPrefix = "\x00counts:"
	// fleetCountsFresh is how long an instance's counts count after it wrote them: an
	// instance that stopped writing (stopped, idle, cut off) drops out within it.
	fleetCountsFresh = 2 * time.Second
	// fleetInstancesMax bounds the instances whose counts are added: a record naming more
	// is no record. fleetCountMax caps one count of one instance (a breaker's window holds
	// far fewer results); a negative count is none.
	fleetInstancesMax = 256
	fleetCountMax     = 1 << 24
)

// fleetCountsRecord is the counts record: each instance's counts by breaker key, as
// [ok, failures, slow], and when it wrote them.
type fleetCountsRecord struct {
	Instances map[string]fleetInstanceCounts `json:"instances"`
}

type fleetInstanceCounts struct {
	At     time.Time         `json:"at"`
	Scopes map[string][3]int `json:"scopes"`
}

// newInstanceID names this instance in the counts and presence records: random, so that it
// tells nothing of the host, its addresses or its configuration to whoever reads the store.
func newInstanceID() string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return time.Now().Format(time.RFC3339Nano)
	}
	return hex.EncodeToString(b)
}

// shareCounts publishes this instance's counts and hands the breakers the others'. An
// instance whose windows are empty, and that has nothing published, reads and writes
// nothing: it has no result the fleet's counts could trip a breaker on.
func (f *fleet) shareCounts(st store.Store) {
	now := f.now()
	own := f.group.WindowCounts(now)
	f.mu.Lock()
	published := f.countsPublished
	f.mu.Unlock()
	if len(own) == 0 && !published {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), fleetTimeout)
	defer cancel()
	rec, err := f.readCounts(ctx, st)
	if err != nil {
		// Local counts only, until the store answers again.
		f.group.SetFleetCounts(nil)
		return
	}
	others := fleetOthers(rec, f.id, now)
	f.group.SetFleetCounts(others)
	if len(own) > 0 {
		scopes := make(map[string][3]int, len(own))
		for key, c := range own {
			scopes[key] = [3]int{c.OK, c.Failures, c.Slow}
		}
		rec.Instances[f.id] = fleetInstanceCounts{At: now, Scopes: scopes}
	}
	body, err := json.Marshal(rec)
	if err != nil {
		return
	}
	ent := &store.Entry{Status: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Body: body,
		Born: now, FreshUntil: now.Add(fleetCountsFresh), KeepUntil: now.Add(2 * fleetCountsFresh)}
	ent.Prepare()
	err = st.Set(ctx, f.countsKey, ent)
	f.mu.Lock()
	f.countsPublished = err == nil && len(own) > 0
	f.mu.Unlock()
	if err == nil {
		markSeen(f.presence, now)
	}
}

// fleetOthers sums the counts of the instances in rec but self, as they stand at now, each
// count within fleetCount's bounds; it drops from rec the instances it does not count
// (self's own, stale, from the future, past fleetEntriesMax scopes).
func fleetOthers(rec *fleetCountsRecord, self string, now time.Time) map[string]breaker.Counts {
	others := map[string]breaker.Counts{}
	for id, inst := range rec.Instances {
		if id == self || now.Sub(inst.At) > fleetCountsFresh || inst.At.After(now.Add(fleetCountsFresh)) {
			delete(rec.Instances, id)
			continue
		}
		if len(inst.Scopes) > fleetEntriesMax {
			delete(rec.Instances, id)
			continue
		}
		for key, c := range inst.Scopes {
			others[key] = others[key].Add(breaker.Counts{OK: fleetCount(c[0]), Failures: fleetCount(c[1]), Slow: fleetCount(c[2])})
		}
	}
	return others
}

// fleetCount is one count read from the counts record, within 0 and fleetCountMax.
func fleetCount(n int) int {
	if n < 0 {
		return 0
	}
	if n > fleetCountMax {
		return fleetCountMax
	}
	return n
}

// readCounts returns the counts record, empty when there is none or it cannot be read.
func (f *fleet) readCounts(ctx context.Context, st store.Store) (*fleetCountsRecord, error) {
	rec := &fleetCountsRecord{}
	ent, err := st.Get(ctx, f.countsKey)
	if err != nil {
		return nil, err
	}
	if ent != nil && ent.Status == http.StatusOK {
		// Untrusted input: a record nobody can read, or past the bounds, is an empty one,
		// which the write replaces.
		if len(ent.Body) > fleetRecordMax || json.Unmarshal(ent.Body, rec) != nil || len(rec.Instances) > fleetInstancesMax {
			rec = &fleetCountsRecord{}
		}
	}
	if rec.Instances == nil {
		rec.Instances = map[string]fleetInstanceCounts{}
	}
	return rec, nil
}
