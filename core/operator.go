package core

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/weirproxy/weir/core/admin"
	"github.com/weirproxy/weir/core/breaker"
	"github.com/weirproxy/weir/core/budget"
	"github.com/weirproxy/weir/core/events"
	"github.com/weirproxy/weir/core/httpcache"
	"github.com/weirproxy/weir/core/limit"
)

// busiestShown is how many partitions and hosts the admin lists as the limiter's busiest.
const busiestShown = 10

// adminSweepTimeout bounds the sweep of a shared store under admin.path (sweepAdmin): a
// walk of the whole keyspace, in batches.
const adminSweepTimeout = 30 * time.Second

// operator is an engine as its admin sees and steers it (admin.Engine).
type operator struct {
	e *engine
	s Settings
}

// newAdmin serves e's admin at s.AdminPath. Requests under the path are the admin's before
// any lookup (adminRequest, on every way into the Handler), so nothing stored there is
// read; what is stored there (an answer the origin gave before the admin was turned on) is
// dropped from local memory here, and from a shared store once (sweepAdmin).
func newAdmin(e *engine, s Settings) *admin.Handler {
	if e.hot != nil {
		base := s.AdminPath
		e.hot.DeleteFunc(func(key string) bool { return adminKey(base, key) })
	}
	return admin.NewHandler(s.AdminPath, adminAccess(e, s), operator{e: e, s: s}, s.Now)
}

// adminAccess is who may use e's admin and send PURGE, as s configures it, with the
// engine's brake on failed attempts and its event log told of each.
func adminAccess(e *engine, s Settings) *admin.Access {
	access := s.AdminAccess
	access.Brake = e.adminBrake
	access.OnFailure = func(f admin.Failure) {
		e.events.current().Emit(events.AdminAuthFailed, events.Str("client", f.Client), events.Str("way", f.Way),
			events.Int("failures", f.Failures), events.Bool("throttled", f.Throttled))
	}
	return &access
}

// keepAdminBrake gives e the brake on failed admin attempts of the engine before it: a
// reload, which anyone who can change a container's labels may cause, does not clear it.
func keepAdminBrake(e, old *engine) {
	e.adminBrake = old.adminBrake
	if e.adminBrake == nil {
		e.adminBrake = admin.NewBrake(admin.DefaultBrakeClients)
	}
}

// adminKey tells whether the cache key key names a path under base (admin.path), as
// written or decoded: what adminRequest would have served from the admin.
func adminKey(base, key string) bool {
	_, path := splitKey(key)
	if admin.Under(base, path) {
		return true
	}
	if strings.IndexByte(path, '%') < 0 {
		return false
	}
	p, err := url.PathUnescape(path)
	return err == nil && admin.Under(base, p)
}

// sweeper is a shared store that can delete what matches a glob (redisstore.Store.Sweep).
type sweeper interface {
	sweep(ctx context.Context, match string, drop func(key string) bool) (int, error)
}

// adminSweepMatch is the glob of the cache keys sweepAdmin reads: any whose path has a
// segment beginning as base's first does, or with '%' (an escaped form); adminKey decides.
func adminSweepMatch(base string) string {
	return `*://*/[\` + base[1:2] + `%]*`
}

// sweepAdmin deletes from e's shared store what is stored under admin.path, written by an
// older instance or another middleware sharing the key prefix, so that no instance with
// the admin off serves it either. Once per store and path: engineFor carries adminSwept
// across reloads that keep the store. On a goroutine of its own, bounded by
// adminSweepTimeout; done is closed when it ends.
func sweepAdmin(e *engine, base string, done chan struct{}) {
	sw, ok := e.store.(sweeper)
	if !ok {
		close(done)
		return
	}
	go runSweep(sw, e.name, base, e.log, done)
}

// runSweep is sweepAdmin's goroutine.
func runSweep(sw sweeper, name, base string, log func(string), done chan struct{}) {
	defer close(done)
	defer recoverTo(log, "sweeping admin.path from the shared store")
	ctx, cancel := context.WithTimeout(context.Background(), adminSweepTimeout)
	defer cancel()
	n, err := sw.sweep(ctx, adminSweepMatch(base), func(key string) bool { return adminKey(base, key) })
	if err != nil {
		log(fmt.Sprintf("middleware %s: sweeping %s from the shared store: %d entries deleted, then: %v", name, base, n, err))
		return
	}
	if n > 0 {
		log(fmt.Sprintf("middleware %s: %d entries stored under %s deleted from the shared store", name, n, base))
	}
}

// splitKey is the host and the path of a cache key ("https://host/path?query", a variant's
// suffix after a NUL) or of a partition ("https://host/path").
func splitKey(key string) (string, string) {
	_, host, path := httpcache.SplitKey(key)
	if j := strings.IndexByte(path, 0); j >= 0 {
		path = path[:j]
	}
	return host, path
}

// adminRequest serves r from the admin when it is under admin.path, as sent or as decoded,
// and tells whether it did. Nothing under the path reaches the origin or is stored.
func adminRequest(h *Handler, w http.ResponseWriter, r *http.Request) bool {
	if h.admin == nil {
		return false
	}
	p := r.RequestURI
	if i := strings.IndexByte(p, '?'); i >= 0 {
		p = p[:i]
	}
	if !admin.Under(h.s.AdminPath, p) && !admin.Under(h.s.AdminPath, r.URL.Path) {
		return false
	}
	h.admin.ServeHTTP(w, r)
	return true
}

func (o operator) State(now time.Time) admin.State {
	e := o.e
	st := admin.State{Middleware: e.name, Time: now, Defaults: breakerParams(e.breakers.Defaults().Params(), breaker.Override{})}
	for _, b := range e.breakers.Snapshot(now) {
		st.Breakers = append(st.Breakers, breakerView(b, now))
	}
	st.Limiter = o.limiterView()
	st.Anomalies = e.anomalies.current(now)
	st.Store = o.storeView()
	st.Pacing = paceView(e.pacing)
	st.Refusals = refusalView(e)
	return st
}

// refusalView lists every registered reason with the requests it refused.
func refusalView(e *engine) []admin.Refusal {
	out := make([]admin.Refusal, len(reasons))
	for i, r := range reasons {
		out[i] = admin.Refusal{Reason: r.name, Status: r.status, Count: atomic.LoadInt64(&e.metrics.shed[r.index].N)}
	}
	return out
}

// paceView lists the paces in force, by name.
func paceView(p *pacing) []admin.Pace {
	var out []admin.Pace
	for _, e := range p.entries() {
		v := admin.Pace{Name: e.name, Rate: e.rate.String(), Origin: admin.OriginConfig}
		if e.byOperator {
			v.Origin = admin.OriginOperator
			if e.configured.N > 0 {
				v.Configured = e.configured.String()
			}
		}
		out = append(out, v)
	}
	return out
}

func breakerView(b breaker.Status, now time.Time) admin.Breaker {
	return admin.Breaker{
		Key:        scopeLabel(b.Key),
		State:      breaker.StateName(b.State),
		OpenLeft:   b.OpenLeft.Seconds(),
		OpenedBy:   b.OpenedBy,
		LastStatus: b.LastFailure,
		Trips:      b.Trips,
		Requests:   b.OK + b.Failures,
		Failures:   b.Failures,
		Slow:       b.Slow,
		ProbesOK:   b.ProbesOK,
		Reason:     b.TripReason,
		Declared:   b.Declared,
		Params:     breakerParams(b.Params, b.Override),
	}
}

// breakerParams lists the parameters in force, as the configuration names them and
// breaker.overrides writes them, each marked where own overrides it (slowCall "0s": off).
func breakerParams(inForce, own breaker.Override) []admin.Param {
	mine := own.Params()
	var out []admin.Param
	for i, p := range inForce.Params() {
		out = append(out, admin.Param{Name: p.Name, Value: p.Value, Override: mine[i].Set})
	}
	return out
}

func (o operator) limiterView() admin.Limiter {
	l := o.e.limiter
	stats := l.Stats()
	v := admin.Limiter{
		InFlight:      stats.Fetch.InFlight,
		Queued:        stats.Fetch.Queued,
		MaxConcurrent: stats.Fetch.Size,
		MaxQueue:      o.s.Limiter.MaxQueue,
		Uploads:       stats.Upload.InFlight,
		MaxUpload:     stats.Upload.Size,
	}
	if v.MaxQueue <= 0 {
		v.MaxQueue = limit.DefaultMaxQueue
	}
	hosts := make(map[string]*admin.Occupant)
	for i, p := range l.Busiest(-1) {
		if i < busiestShown {
			v.Partitions = append(v.Partitions, admin.Occupant{Key: p.Partition, InFlight: p.InFlight, Queued: p.Queued})
		}
		host, _ := splitKey(p.Partition)
		h := hosts[host]
		if h == nil {
			h = &admin.Occupant{Key: host}
			hosts[host] = h
		}
		h.InFlight += p.InFlight
		h.Queued += p.Queued
	}
	for _, h := range hosts {
		v.Hosts = append(v.Hosts, *h)
	}
	sort.Slice(v.Hosts, func(i, j int) bool {
		a, b := v.Hosts[i].InFlight+v.Hosts[i].Queued, v.Hosts[j].InFlight+v.Hosts[j].Queued
		if a != b {
			return a > b
		}
		return v.Hosts[i].Key < v.Hosts[j].Key
	})
	if len(v.Hosts) > busiestShown {
		v.Hosts = v.Hosts[:busiestShown]
	}
	return v
}

func (o operator) storeView() admin.Store {
	e := o.e
	if e.mem != nil {
		n, b := e.mem.Len()
		return admin.Store{Kind: "memory", Entries: n, Bytes: b}
	}
	v := admin.Store{Kind: "custom"}
	// An interface, not sharedStore: Yaegi v0.16.1 refuses an assertion to a struct type
	// that embeds a pointer ("impossible type assertion").
	if r, ok := e.store.(remoteState); ok {
		v.Kind = "redis"
		v.Breaker = "closed"
		if r.breakerOpen() {
			v.Breaker = "open"
		}
		v.NearCache = "off"
		if r.nearOn() {
			v.NearCache = "lost"
			if r.nearLive() {
				v.NearCache = "live"
			}
		}
		if e.hot != nil {
			v.Entries, v.Bytes = e.hot.Len()
		}
	}
	return v
}

// scopeKey is the key of the breaker that watches what an operator named: a host, or a key
// as the page lists it ("engine" for the engine's one breaker), either with a breaker.paths
// prefix or not.
func (o operator) scopeKey(key string) string {
	if key == "engine" {
		key = ""
	}
	return breaker.ScopePathKey(o.e.breakerScope, key)
}

// Each action applies here, then goes to the other instances sharing the store (fleet_control.go);
// an error then says the action was applied here only.

func (o operator) OpenBreaker(key string, d time.Duration) error {
	b := o.e.breakers.Get(o.scopeKey(key), o.e.now())
	openBreaker(o.e, b, d)
	return shared(o.e.breakerSync.fleet.publishAction("open", b.Key(), b.Status(o.e.now()).OpenUntil))
}

func (o operator) CloseBreaker(key string) error {
	key = o.scopeKey(key)
	if err := closeBreaker(o.e, key); err != nil {
		return err
	}
	return shared(o.e.breakerSync.fleet.publishAction("close", key, time.Time{}))
}

func (o operator) SetOverride(key, params string) error {
	ov, err := breaker.ParseOverrideParams(params)
	if err != nil {
		return err
	}
	key = o.scopeKey(key)
	if err := o.e.breakers.SetOverride(key, ov); err != nil {
		return err
	}
	return shared(o.e.breakerSync.fleet.publishOverride(key, ov.String(), false))
}

func (o operator) RemoveOverride(key string) error {
	key = o.scopeKey(key)
	if !o.e.breakers.RemoveOverride(key) {
		return fmt.Errorf("key: %q has no override", key)
	}
	return shared(o.e.breakerSync.fleet.publishOverride(key, "", true))
}

func (o operator) DeclareBreaker(key string) error {
	key = o.scopeKey(key)
	if err := o.e.breakers.Declare(key); err != nil {
		return err
	}
	return shared(o.e.breakerSync.fleet.publishDeclare(key))
}

// paceName reads the name of a pace an operator sets or clears, as pacing does.
func paceName(name string) (string, error) {
	n, ok := PaceName(name)
	if !ok {
		return "", fmt.Errorf("name: %q is not a host or domain such as \"feeds.example.com\"", name)
	}
	return n, nil
}

// configuredRate is what a pacing event names as the configuration's rate for name.
func configuredRate(p *pacing, name string) string {
	p.mu.Lock()
	r, ok := p.configured[name]
	p.mu.Unlock()
	if !ok {
		return "off"
	}
	return r.String()
}

func (o operator) SetPace(name, rate string) error {
	name, err := paceName(name)
	if err != nil {
		return err
	}
	r, err := budget.ParseRate(rate)
	if err != nil {
		return fmt.Errorf("rate: %q is not a rate such as \"3/10s\" (N/10s, N/1s or N/1m)", rate)
	}
	if err := o.e.pacing.setOperator(name, r); err != nil {
		return err
	}
	o.e.events.current().Emit(events.PacingSet, events.Str("name", name), events.Str("rate", r.String()),
		events.Str("configured", configuredRate(o.e.pacing, name)))
	return shared(o.e.breakerSync.fleet.publishPace(name, r, false))
}

func (o operator) ClearPace(name string) error {
	name, err := paceName(name)
	if err != nil {
		return err
	}
	if !o.e.pacing.clearOperator(name) {
		return fmt.Errorf("name: %q has no pace set by an operator", name)
	}
	o.e.events.current().Emit(events.PacingCleared, events.Str("name", name),
		events.Str("configured", configuredRate(o.e.pacing, name)))
	return shared(o.e.breakerSync.fleet.publishPace(name, budget.Rate{}, true))
}

// shared is the error of sharing an action that was applied here.
func shared(err error) error {
	if err != nil {
		return fmt.Errorf("applied on this instance only: %w", err)
	}
	return nil
}

func (o operator) WriteMetrics(w io.Writer) error {
	return writeMetrics(o.e, w)
}

// openBreaker opens b by hand for d (zero: its openFor), restarting its clock.
func openBreaker(e *engine, b *breaker.Breaker, d time.Duration) {
	now := e.now()
	b.ForceOpen(now, d)
	e.events.current().Emit(events.BreakerOpenedByHand, events.Str("scope", b.Key()),
		events.Dur("open_for", b.Status(now).OpenUntil.Sub(now)))
}

// closeBreaker closes the breaker of scope key by hand and clears its shared deadline.
func closeBreaker(e *engine, key string) error {
	b := e.breakers.Get(key, e.now())
	wasOpen := b.State(e.now()) != breaker.StateClosed
	b.ForceClose(e.now())
	if wasOpen {
		e.warm.recovered(key)
	}
	e.events.current().Emit(events.BreakerClosedByHand, events.Str("scope", key))
	if st, _ := e.breakerSync.current(); st != nil {
		ctx, cancel := context.WithTimeout(context.Background(), e.storeTimeout)
		defer cancel()
		if err := st.Delete(ctx, e.breakerSync.prefix+key); err != nil {
			return fmt.Errorf("clearing the shared deadline of %s in %s: %w", key, e.name, err)
		}
	}
	return nil
}
