package core

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/weirproxy/weir/core/admin"
	"github.com/weirproxy/weir/core/breaker"
	"github.com/weirproxy/weir/core/console"
	"github.com/weirproxy/weir/core/events"
	"github.com/weirproxy/weir/core/hostkey"
)

// The operator's console (admin.Console): the series, the events kept, the busiest hosts
// and partitions, a URL's entry and the fleet, each read when the admin asks.

// Series catches the ring up to now and wakes the sampler, so that a page being watched
// gets a sample a second.
func (o operator) Series(now time.Time, since int64) console.View {
	sampleConsole(o.e, now)
	wakeConsole()
	return o.e.metrics.console.series.View(since)
}

// Events lists the last n events kept, newest first, of kind and naming host.
func (o operator) Events(kind, host string, n int) []events.Record {
	if host != "" {
		host = hostkey.Canonical(host)
	}
	keep := func(r events.Record) bool {
		if kind != "" && r.Name != kind {
			return false
		}
		return host == "" || eventNames(r, host)
	}
	return o.e.events.kept().Newest(n, keep)
}

// eventHostFields are the fields of an event that name a host: a breaker's scope (a host,
// a domain, with a breaker.paths prefix), a partition or a URL, a pace's name.
var eventHostFields = []string{"scope", "partition", "url", "name", "value"}

// eventNames tells whether r names host (canonical) in one of eventHostFields.
func eventNames(r events.Record, host string) bool {
	for _, f := range r.Fields {
		for _, k := range eventHostFields {
			if f.Key == k && hostOfField(f.Value) == host {
				return true
			}
		}
	}
	return false
}

// hostOfField is the canonical host a field's value names: a URL's or a partition's host,
// or a scope key's before its path.
func hostOfField(v string) string {
	if i := strings.Index(v, "://"); i >= 0 {
		v = v[i+3:]
	}
	if i := strings.IndexByte(v, '/'); i >= 0 {
		v = v[:i]
	}
	return hostkey.Canonical(v)
}

// Tables lists the busiest hosts, with what the limiter and the breakers say of each now,
// and the partitions with the most fetches and refusals.
func (o operator) Tables(now time.Time) admin.Tables {
	e := o.e
	c := e.metrics.console
	sec := now.Unix()
	t := admin.Tables{Seconds: sec - c.started}
	if t.Seconds > console.WindowSeconds {
		t.Seconds = console.WindowSeconds
	}
	if t.Seconds < 1 {
		t.Seconds = 1
	}
	inFlight := map[string]int{}
	for _, p := range e.limiter.Busiest(-1) {
		host, _ := splitKey(p.Partition)
		inFlight[host] += p.InFlight
	}
	states := map[string]string{}
	for _, b := range e.breakers.Snapshot(now) {
		states[scopeLabel(b.Key)] = breaker.StateName(b.State)
	}
	rows, other := c.hosts.Rows(sec, -1, consoleShown)
	for _, r := range rows {
		row := hostRow(r, t.Seconds)
		// One assignment each: Yaegi drops one side of `a, b = f(x), y` (docs/yaegi.md).
		row.InFlight = inFlight[r.Key]
		row.P95 = r.P95.Seconds() * 1000
		row.Breaker = states[r.Key]
		t.Hosts = append(t.Hosts, row)
	}
	t.OtherHosts = hostRow(other, t.Seconds)
	t.OtherHosts.Host = "other"
	t.ByMisses = pathRows(c.paths, sec, pathFetches)
	t.ByRefusals = pathRows(c.paths, sec, pathRefused)
	return t
}

// hostRow is r's counts over seconds: the sampled answers as requests a second and the
// share of hits among them (zero with none sampled).
func hostRow(r console.Row, seconds int64) admin.HostRow {
	row := admin.HostRow{Host: r.Key, Fetches: r.Counts[hostFetches], Refused: r.Counts[hostRefused], Stale: r.Counts[hostStale]}
	hits := r.Counts[hostHits]
	answers := hits + r.Counts[hostOthers]
	if answers > 0 {
		row.Requests = float64(answers) / float64(seconds)
		row.HitRatio = float64(hits) / float64(answers)
	}
	return row
}

// pathRows are the partitions with the most of field, those with none left out.
func pathRows(tb *console.Table, sec int64, field int) []admin.PathRow {
	rows, _ := tb.Rows(sec, field, consoleShown)
	out := []admin.PathRow{}
	for _, r := range rows {
		if r.Counts[field] == 0 {
			break
		}
		out = append(out, admin.PathRow{Partition: r.Key, Fetches: r.Counts[pathFetches], Refused: r.Counts[pathRefused]})
	}
	return out
}

// Lookup reads what the store holds for raw's key, and the negative cache's entry.
func (o operator) Lookup(ctx context.Context, raw string, now time.Time) (admin.Entry, error) {
	key, err := o.keyOf(raw)
	if err != nil {
		return admin.Entry{}, err
	}
	v := admin.Entry{URL: strings.TrimSpace(raw), Key: key}
	if n, ok := o.e.neg.Lookup(key, now); ok {
		v.Negative, v.NegativeStatus = true, n.Status
	}
	ent, err := o.e.store.Get(ctx, key)
	if err != nil {
		return admin.Entry{}, err
	}
	if ent == nil {
		return v, nil
	}
	v.Found = true
	v.Status = ent.Status
	v.Age = now.Sub(ent.Born).Seconds()
	v.TTL = ent.FreshUntil.Sub(now).Seconds()
	v.StaleWhileRevalidate = secondsLeft(ent.StaleWhileRevalidateUntil, now)
	v.StaleIfError = secondsLeft(ent.StaleIfErrorUntil, now)
	v.Size = len(ent.Body)
	v.Vary = ent.Vary
	v.Variants = ent.VaryIndex
	v.Tags = ent.Tags
	v.HitForPass = ent.Pass
	return v, nil
}

// secondsLeft is how long from now until t, zero once past.
func secondsLeft(t, now time.Time) float64 {
	if d := t.Sub(now); d > 0 {
		return d.Seconds()
	}
	return 0
}

// Fleet lists the instances the presence record names (fleet_presence.go): those that
// wrote a record of the fleet's within fleetSeenFor, this one first, then the most recently
// seen. This instance is seen now, whether it wrote lately or not.
func (o operator) Fleet(ctx context.Context, now time.Time) (admin.Fleet, error) {
	p := o.e.presence
	p.mu.Lock()
	st := p.st
	p.mu.Unlock()
	if st == nil {
		return admin.Fleet{Instances: []admin.Instance{}}, nil
	}
	rec, err := readSeen(ctx, st, p.key)
	if err != nil {
		return admin.Fleet{}, err
	}
	pruneSeen(rec, now)
	others := []admin.Instance{}
	for id, at := range rec.Instances {
		if id != p.id {
			others = append(others, admin.Instance{ID: id, Seen: at})
		}
	}
	sort.Slice(others, func(i, j int) bool {
		if !others[i].Seen.Equal(others[j].Seen) {
			return others[i].Seen.After(others[j].Seen)
		}
		return others[i].ID < others[j].ID
	})
	out := admin.Fleet{Shared: true, Instances: []admin.Instance{{ID: p.id, Seen: now, Self: true}}}
	out.Instances = append(out.Instances, others...)
	return out, nil
}

// Purge drops what p names (admin.Engine) and tells the event log, whose feed the page
// shows: a purge is an operator's action.
func (o operator) Purge(ctx context.Context, p admin.Purge) (int, error) {
	n, err := o.purgeNamed(ctx, p)
	if err != nil {
		return n, err
	}
	what, value := "all", ""
	switch {
	case p.User != "":
		// One user's private entries: the identity's value is named nowhere (FR-PRV-3).
		what, value = "user", p.URL
	case p.URL != "":
		what, value = "url", p.URL
	case p.Prefix != "":
		what, value = "prefix", p.Prefix
	case p.Host != "":
		what, value = "host", p.Host
	case p.Tag != "":
		what, value = "tag", p.Tag
	}
	fields := []events.Field{events.Str("what", what)}
	if value != "" {
		fields = append(fields, events.Str("value", strings.TrimSpace(value)))
	}
	fields = append(fields, events.Int("dropped", n))
	o.e.events.current().Emit(events.Purged, fields...)
	return n, nil
}
