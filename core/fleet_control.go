package core

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirproxy/weir/core/breaker"
	"github.com/weirproxy/weir/core/budget"
	"github.com/weirproxy/weir/core/store"
	"github.com/weirproxy/weir/core/wait"
)

// What an operator does to breakers and paces through one Traefik reaches every Traefik
// sharing the store within fleetEvery: each instance reads a control record of the
// middleware's from the store once a fleetEvery and applies what changed. The record holds
// the overrides and declared keys as they stand, the operator's paces as they stand, and the
// last fleetActionsKept opens and closes by hand, each with a sequence number. Writing it is
// a read, a change and a write: two operators acting on two instances in the same instant
// may lose one of the two actions (the page shows the outcome; act again). Instances that
// start later apply the overrides and paces and skip opens whose deadline has passed.
//
// While the store tells of every change under its prefix (its tracking connection, the
// near cache's: redisstore.Store.ChangeMark), a read is made only when something under the
// prefix changed since the last; and while nothing did and the breakers have no counts to
// share, the loop sleeps until the store signals a change (ChangeSignal) or a breaker records
// a result (wakeFleet): an idle fleet costs nothing, a busy one reads every fleetEvery.

const (
	// fleetEvery is how often an instance reads the control record: twice within the second
	// in which an action must reach every instance, so that a slow read still makes it.
	fleetEvery = 500 * time.Millisecond
	// fleetTimeout bounds one read or write of the control record.
	fleetTimeout = 2 * time.Second
	// fleetActionsKept bounds the opens and closes the record keeps.
	fleetActionsKept = 64
	// fleetKeyPrefix keeps the control record apart from cache keys, which start with a
	// scheme, and from shared breaker deadlines.
	fleetKeyPrefix = "\x00control:"
	// fleetRecordLife is how long the store keeps a control record nobody writes again.
	fleetRecordLife = 30 * 24 * time.Hour

	// What an instance believes of a record read from the store, which whoever can write
	// the store writes too: a record past a bound is no record (the next write replaces
	// it), a time past one is capped.
	//
	// fleetRecordMax bounds a control or counts record's bytes.
	fleetRecordMax = 1 << 20
	// fleetEntriesMax bounds the overrides and declared keys, the paces, and each
	// instance's scopes in the counts record.
	fleetEntriesMax = 4096
	// fleetSeqMax bounds the record's sequence number: one past it would stop every
	// instance applying actions (their numbers are compared), or wrap.
	fleetSeqMax = 1 << 40
	// fleetOpenMax caps an open by hand that another instance shared: a deadline in the
	// year 3000 opens the breaker here for a day at most. The instance the operator acted
	// on keeps the whole of it.
	fleetOpenMax = 24 * time.Hour
)

// fleetAction is an open or a close by hand.
type fleetAction struct {
	Seq int64  `json:"seq"`
	Op  string `json:"op"`
	Key string `json:"key"`
	// Until is an open's deadline: an instance that reads it late opens for what is left.
	Until time.Time `json:"until,omitempty"`
}

// fleetRecord is the control record.
type fleetRecord struct {
	Seq int64 `json:"seq"`
	// Overrides maps each overridden or declared key to its parameters as breaker.overrides
	// writes them after the key; "" for a key declared without any.
	Overrides map[string]string `json:"overrides"`
	// Pacing maps each name an operator paces to its rate as budget.ParseRate reads it.
	Pacing  map[string]string `json:"pacing,omitempty"`
	Actions []fleetAction     `json:"actions"`
}

// fleet shares one breaker group's operator actions and the operator's paces, and the
// group's window counts (fleetcounts.go). Its zero stop channel means no loop runs (process
// memory: nothing to share).
type fleet struct {
	key string
	// countsKey is the counts record's key, id this instance's name in it (fleetcounts.go).
	countsKey string
	id        string
	group     *breaker.Group
	// pacing is the middleware's, which lives longer than the group.
	pacing *pacing
	now    func() time.Time
	logger func(string)

	// mu guards the fields below.
	mu sync.Mutex
	st store.Store
	// changes tells st's changes (changesOf), nil for a store without: then the record is
	// read every fleetEvery. readMark is the mark taken before the last read that reached
	// st, readMarked whether there is one; setStore forgets it (epoch counts its calls).
	changes    *storeChanges
	readMark   int64
	readMarked bool
	epoch      int64
	// applied is the record's sequence number this instance has applied or written.
	applied int64
	// shared is the overrides as the record stood when last applied, sharedPacing the paces.
	shared       map[string]string
	sharedPacing map[string]string
	stop         chan struct{}
	// countsPublished says that the counts record holds this instance's counts.
	countsPublished bool
	// presence is the engine's entry in the presence record (fleet_presence.go), which
	// each write of a record of the fleet's marks; nil in a fleet built alone.
	presence *presence

	// asleep is 1 while the loop waits for a change rather than a tick; wakeup wakes it.
	asleep int32
	wakeup chan struct{}
}

func newFleet(name string, group *breaker.Group, p *pacing, now func() time.Time) *fleet {
	return &fleet{key: fleetKeyPrefix + name, countsKey: fleetCountsPrefix + name, id: newInstanceID(), group: group,
		pacing: p, now: now, shared: map[string]string{}, sharedPacing: map[string]string{}, wakeup: make(chan struct{}, 1)}
}

// setStore points the fleet at the shared store st (nil: none), whose changes ch tells (nil:
// none), starting or stopping its reading loop.
func (f *fleet) setStore(st store.Store, ch *storeChanges, log func(string)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	// A loop asleep on the store before wakes to poll this one.
	f.wake()
	// Another store's marks say nothing of this one (a reload that keeps the store only
	// costs one read).
	f.readMarked = false
	f.epoch++
	f.st = st
	f.changes = ch
	f.logger = log
	if st == nil && f.stop != nil {
		close(f.stop)
		f.stop = nil
	}
	if st != nil && f.stop == nil {
		f.stop = make(chan struct{})
		go f.loop(f.stop)
	}
}

// close stops the reading loop: the group it served is replaced.
func (f *fleet) close() {
	f.setStore(nil, nil, nil)
}

// loop polls every fleetEvery, or sleeps until the store's change signal or a wake. Its
// waits go through core/wait, not select statements: Yaegi v0.16.1 shares a select's cases
// between every goroutine running it, and each engine's loop runs this one (docs/yaegi.md):
// a loop could take another engine's tick or wake, or see another engine's closed stop and
// end.
func (f *fleet) loop(stop chan struct{}) {
	t := time.NewTicker(fleetEvery)
	defer t.Stop()
	for {
		if wait.Either(stop, t.C) == 0 {
			return
		}
		if signal := f.sleep(); signal != nil {
			woke := wait.Any(stop, signal, f.wakeup)
			atomic.StoreInt32(&f.asleep, 0)
			if woke == 0 {
				return
			}
		}
		f.pollOnce()
	}
}

// sleep returns the store's change signal when the loop has nothing to do until something
// changes: the store tracks changes, none came since the record was last read, and the
// breakers have no counts to share; else nil. With the signal, asleep is 1: a breaker that
// records a result from then on wakes the loop (wakeFleet), one recorded before is counted
// here.
func (f *fleet) sleep() <-chan struct{} {
	f.mu.Lock()
	ch, marked, readMark, published := f.changes, f.readMarked, f.readMark, f.countsPublished
	f.mu.Unlock()
	if ch == nil || ch.signal == nil || !marked || published {
		return nil
	}
	// The signal, then asleep, before the mark and the counts are read: a change or a
	// result after the reads wakes the loop.
	signal := ch.signal()
	atomic.StoreInt32(&f.asleep, 1)
	mark, tracked := ch.mark()
	if signal == nil || !tracked || mark != readMark || len(f.group.WindowCounts(f.now())) > 0 {
		atomic.StoreInt32(&f.asleep, 0)
		return nil
	}
	return signal
}

// wake wakes the loop if it sleeps (sleep).
func (f *fleet) wake() {
	wait.Poke(f.wakeup)
}

// wakeFleet wakes e's fleet loop if it sleeps: a breaker recorded a result, which its
// counts share. One atomic load when it does not. recordOutcome, which runs on every
// result, writes the same test out rather than call it.
func wakeFleet(e *engine) {
	if bs := e.breakerSync; bs != nil && bs.fleet != nil && atomic.LoadInt32(&bs.fleet.asleep) == 1 {
		bs.fleet.wake()
	}
}

func (f *fleet) current() (store.Store, func(string)) {
	f.mu.Lock()
	st, log := f.st, f.logger
	f.mu.Unlock()
	return st, log
}

// pollOnce reads the record, unless the store's change mark says it is as last read, and
// applies what changed since it was last applied.
func (f *fleet) pollOnce() {
	// The store and its marks together: a reload between would pair one's mark with the
	// other's read.
	f.mu.Lock()
	st, log, ch, epoch := f.st, f.logger, f.changes, f.epoch
	f.mu.Unlock()
	if st == nil {
		return
	}
	defer recoverTo(log, "reading the breakers' control record")
	f.shareCounts(st)
	var mark int64
	tracked := false
	if ch != nil {
		mark, tracked = ch.mark()
	}
	f.mu.Lock()
	unchanged := tracked && f.readMarked && f.readMark == mark && f.epoch == epoch
	f.mu.Unlock()
	if unchanged {
		return
	}
	rec, err := f.read(st)
	if err != nil {
		return
	}
	if rec != nil {
		f.apply(rec, log)
	}
	// The mark taken before the read: a change the read missed moved it since. Kept once
	// the record is applied, so that a record that failed to apply is read again.
	f.mu.Lock()
	f.readMark = mark
	f.readMarked = tracked && f.epoch == epoch
	f.mu.Unlock()
}

// apply applies what rec holds beyond what this instance applied or wrote.
func (f *fleet) apply(rec *fleetRecord, log func(string)) {
	f.mu.Lock()
	applied := f.applied
	shared := f.shared
	sharedPacing := f.sharedPacing
	f.mu.Unlock()
	if rec.Seq == applied {
		return
	}
	now := f.now()
	for _, a := range rec.Actions {
		if a.Seq <= applied {
			continue
		}
		b := f.group.Get(a.Key, now)
		switch a.Op {
		case "open":
			if a.Until.After(now) {
				d := a.Until.Sub(now)
				if d > fleetOpenMax {
					d = fleetOpenMax
				}
				b.ForceOpen(now, d)
			}
		case "close":
			b.ForceClose(now)
		}
	}
	for key, params := range rec.Overrides {
		if old, ok := shared[key]; !ok || old != params {
			f.applyOverride(key, params, log)
		}
	}
	for key := range shared {
		if _, ok := rec.Overrides[key]; !ok {
			f.group.RemoveOverride(key)
		}
	}
	f.applyPacing(rec.Pacing, sharedPacing, log)
	f.mu.Lock()
	f.applied = rec.Seq
	f.shared = rec.Overrides
	f.sharedPacing = rec.Pacing
	f.mu.Unlock()
}

// applyPacing applies the record's paces that changed since shared, the paces as the record
// stood when last applied.
func (f *fleet) applyPacing(paced, shared map[string]string, log func(string)) {
	if f.pacing == nil {
		return
	}
	for name, rate := range paced {
		if old, ok := shared[name]; ok && old == rate {
			continue
		}
		r, err := budget.ParseRate(rate)
		if err == nil {
			err = f.pacing.setOperator(name, r)
		}
		logRefused(log, "pacing", name, "rate", rate, err)
	}
	for name := range shared {
		if _, ok := paced[name]; !ok {
			f.pacing.clearOperator(name)
		}
	}
}

func (f *fleet) applyOverride(key, params string, log func(string)) {
	if params == "" {
		f.group.Declare(key)
		return
	}
	o, err := breaker.ParseOverrideParams(params)
	if err == nil {
		err = f.group.SetOverride(key, o)
	}
	logRefused(log, "breaker", key, "override", params, err)
}

// logRefused logs, when err is set, that this instance refuses the value the control record
// holds for name (what: a pace's rate, a breaker's override).
func logRefused(log func(string), kind, name, what, value string, err error) {
	if err != nil && log != nil {
		log(fmt.Sprintf("%s %q: the fleet's %s %q is refused here: %v", kind, name, what, value, err))
	}
}

// read returns the control record, or nil when there is none.
func (f *fleet) read(st store.Store) (*fleetRecord, error) {
	ctx, cancel := context.WithTimeout(context.Background(), fleetTimeout)
	defer cancel()
	ent, err := st.Get(ctx, f.key)
	if err != nil || ent == nil || ent.Status != http.StatusOK {
		return nil, err
	}
	rec := &fleetRecord{}
	if len(ent.Body) > fleetRecordMax || json.Unmarshal(ent.Body, rec) != nil || !rec.bounded() {
		// Untrusted input: a record nobody can read, or past the bounds, is no record,
		// and the next write replaces it.
		return nil, nil
	}
	if rec.Overrides == nil {
		rec.Overrides = map[string]string{}
	}
	if rec.Pacing == nil {
		rec.Pacing = map[string]string{}
	}
	return rec, nil
}

// bounded tells whether rec is within what Weir writes: a sequence number within
// fleetSeqMax, each action's no later than the record's, at most fleetActionsKept actions
// and fleetEntriesMax overrides and paces.
func (rec *fleetRecord) bounded() bool {
	if rec.Seq < 0 || rec.Seq > fleetSeqMax || len(rec.Actions) > fleetActionsKept ||
		len(rec.Overrides) > fleetEntriesMax || len(rec.Pacing) > fleetEntriesMax {
		return false
	}
	for _, a := range rec.Actions {
		if a.Seq < 0 || a.Seq > rec.Seq {
			return false
		}
	}
	return true
}

// publish records an operator's action for the other instances: change edits the record.
// Without a shared store it does nothing.
func (f *fleet) publish(change func(rec *fleetRecord)) error {
	st, log := f.current()
	if st == nil {
		return nil
	}
	rec, err := f.read(st)
	if err != nil {
		return err
	}
	if rec == nil {
		rec = &fleetRecord{Overrides: map[string]string{}, Pacing: map[string]string{}}
	}
	// What the others did first, so that moving past their sequence numbers skips nothing.
	f.apply(rec, log)
	rec.Seq++
	change(rec)
	if n := len(rec.Actions); n > fleetActionsKept {
		rec.Actions = append([]fleetAction(nil), rec.Actions[n-fleetActionsKept:]...)
	}
	body, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	now := f.now()
	ent := &store.Entry{Status: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Body: body,
		Born: now, FreshUntil: now.Add(fleetRecordLife), KeepUntil: now.Add(fleetRecordLife)}
	ent.Prepare()
	ctx, cancel := context.WithTimeout(context.Background(), fleetTimeout)
	defer cancel()
	if err := st.Set(ctx, f.key, ent); err != nil {
		return fmt.Errorf("sharing with the other instances: %w", err)
	}
	markSeen(f.presence, now)
	f.mu.Lock()
	if rec.Seq > f.applied {
		f.applied = rec.Seq
	}
	f.shared = rec.Overrides
	f.sharedPacing = rec.Pacing
	f.mu.Unlock()
	return nil
}

// publishAction records an open or a close by hand.
func (f *fleet) publishAction(op, key string, until time.Time) error {
	return f.publish(func(rec *fleetRecord) {
		rec.Actions = append(rec.Actions, fleetAction{Seq: rec.Seq, Op: op, Key: key, Until: until})
	})
}

// publishDeclare records key as declared, keeping an override it has.
func (f *fleet) publishDeclare(key string) error {
	return f.publish(func(rec *fleetRecord) {
		if _, ok := rec.Overrides[key]; !ok {
			rec.Overrides[key] = ""
		}
	})
}

// publishOverride records key's override ("" params: declared only); remove drops it.
func (f *fleet) publishOverride(key, params string, remove bool) error {
	return f.publish(func(rec *fleetRecord) {
		if remove {
			delete(rec.Overrides, key)
			return
		}
		rec.Overrides[key] = params
	})
}

// publishPace records name's pace at r; remove drops it. This instance applied it already,
// and applies it again once the record is read: the record may have held an older rate for
// name, which reading it put back.
func (f *fleet) publishPace(name string, r budget.Rate, remove bool) error {
	return f.publish(func(rec *fleetRecord) {
		if remove {
			delete(rec.Pacing, name)
			if f.pacing != nil {
				f.pacing.clearOperator(name)
			}
			return
		}
		rec.Pacing[name] = r.String()
		if f.pacing != nil {
			f.pacing.setOperator(name, r)
		}
	})
}
