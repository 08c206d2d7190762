package core

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/weirproxy/weir/core/breaker"
	"github.com/weirproxy/weir/core/events"
	"github.com/weirproxy/weir/core/flight"
	"github.com/weirproxy/weir/core/httpcache"
)

// Warming (warm.*) fetches a list of paths on every host it names into the cache when the
// engine starts, when warm.* changes and after a purge of everything, so that the first
// visitor finds them stored. Each path is one background fetch through the origin gate
// (wayBackground: never a wait for a slot, never the foreground's last quarter), one at a
// time, through the flight table so that a visitor asking for the same key meanwhile joins
// it, and all of them within warm.timeout.

// Defaults and bounds of warm.*.
const (
	// DefaultWarmTimeout bounds one warming run: what is not fetched by then is left.
	DefaultWarmTimeout = 30 * time.Second
	// MaxWarmPaths bounds warm.paths.
	MaxWarmPaths = 32
)

// Why a warming run starts, as warm_started's reason field says it.
const (
	warmOnStart  = "start"
	warmOnConfig = "config"
	warmOnPurge  = "purge"
	// warmOnRecovery: a breaker closed after being open (seed 003's "re-warm after a copy
	// recovers"); only the hosts it guards are warmed.
	warmOnRecovery = "recovered"
)

// The results of one warm URL, as indexes of engineMetrics.warm (weir_warm_total).
const (
	warmStored   = 0 // fetched and stored
	warmFresh    = 1 // stored and fresh already: not fetched
	warmUnstored = 2 // a 2xx or 3xx the cache may not store
	warmFailed   = 3 // anything but 2xx or 3xx, or no answer
	warmRefused  = 4 // the gate kept it from the origin (an open breaker, no background slot)
	warmBusy     = 5 // a fetch of the key was under way already
	warmTimeout  = 6 // not fetched within warm.timeout
)

var warmResults = []string{"stored", "fresh", "unstored", "failed", "refused", "busy", "timeout"}

// WarmSettings are warm.*. No Hosts or no Paths: off.
type WarmSettings struct {
	// Paths are the paths warmed on every host, each starting with "/" (a query may
	// follow), at most MaxWarmPaths.
	Paths []string
	// Hosts are the hosts warmed, each "host" or "host:port" (warmed as http://host, the
	// scheme of an entry point without TLS) or "https://host" (as the key of a request
	// that came over TLS): the cache key holds the scheme, so a host is warmed under the
	// scheme its visitors use. Empty: off.
	Hosts []string
	// Timeout bounds a warming run. Zero: DefaultWarmTimeout.
	Timeout time.Duration
}

// on tells whether warming is set.
func (w WarmSettings) on() bool {
	return len(w.Paths) > 0 && len(w.Hosts) > 0
}

// validate checks the paths and hosts.
func (w WarmSettings) validate() error {
	if len(w.Paths) > MaxWarmPaths {
		return fmt.Errorf("%w: warm.paths: %d paths, at most %d", ErrSettings, len(w.Paths), MaxWarmPaths)
	}
	for _, p := range w.Paths {
		if p == "" || p[0] != '/' || strings.ContainsAny(p, "# ") {
			return fmt.Errorf("%w: warm.paths: %q must be a path starting with \"/\", such as \"/index.html\"", ErrSettings, p)
		}
	}
	for _, host := range w.Hosts {
		if _, _, err := warmOrigin(host); err != nil {
			return err
		}
	}
	if w.Timeout < 0 {
		return fmt.Errorf("%w: warm.timeout: %s must not be negative", ErrSettings, w.Timeout)
	}
	return nil
}

// warmOrigin reads a warm.hosts entry: its scheme and host.
func warmOrigin(entry string) (scheme, host string, err error) {
	scheme = "http"
	host = entry
	if i := strings.Index(entry, "://"); i >= 0 {
		scheme = entry[:i]
		host = entry[i+3:]
	}
	host = strings.TrimSuffix(host, "/")
	if (scheme != "http" && scheme != "https") || host == "" || strings.ContainsAny(host, "/?#@ ") {
		return "", "", fmt.Errorf("%w: warm.hosts: %q must be a host, or http:// or https:// and a host, such as \"https://www.example.com\"", ErrSettings, entry)
	}
	if _, err := url.Parse(scheme + "://" + host + "/"); err != nil {
		return "", "", fmt.Errorf("%w: warm.hosts: %q must be a host, or http:// or https:// and a host, such as \"https://www.example.com\"", ErrSettings, entry)
	}
	return scheme, strings.ToLower(host), nil
}

// warmer runs an engine's warming, one run at a time, across reloads.
type warmer struct {
	// mu guards via, running and again.
	mu sync.Mutex
	// via is the handler warming fetches through: the last one New built, whose next is a
	// router's service and whose settings are the latest.
	via *Handler
	// running says a run is under way; again is a run asked for meanwhile, which starts when
	// it ends (nil for none): a purge during a run empties what it stored.
	running bool
	again   *warmRun
}

// warmRun is one warming run: why, and the breakers whose hosts it warms (nil: every host).
type warmRun struct {
	reason string
	keys   []string
}

// merged is the run that does what a and b ask: every host if either does, else the hosts
// of both; a's reason unless it has none.
func merged(a, b *warmRun) *warmRun {
	if a == nil {
		return b
	}
	m := &warmRun{reason: a.reason}
	if a.keys != nil && b.keys != nil {
		m.keys = append(append([]string(nil), a.keys...), b.keys...)
	}
	if b.keys == nil {
		m.reason = b.reason
	}
	return m
}

// use makes h the handler warming goes through.
func (w *warmer) use(h *Handler) {
	w.mu.Lock()
	w.via = h
	w.mu.Unlock()
}

// start begins a warming run of every host for reason on a goroutine of its own, or, while
// one runs, has another follow it. A handler without warm.* set starts none.
func (w *warmer) start(reason string) {
	w.startRun(&warmRun{reason: reason})
}

// recovered warms the hosts whose breaker, of key, closed after being open: what was fetched
// while the origin failed may have been its error pages' neighbours, and visitors come back
// at once.
func (w *warmer) recovered(key string) {
	w.startRun(&warmRun{reason: warmOnRecovery, keys: []string{key}})
}

func (w *warmer) startRun(run *warmRun) {
	w.mu.Lock()
	h := w.via
	if h == nil || !h.s.Warm.on() {
		w.mu.Unlock()
		return
	}
	if w.running {
		w.again = merged(w.again, run)
		w.mu.Unlock()
		return
	}
	w.running = true
	w.mu.Unlock()
	go w.loop(run)
}

// loop runs warming for run, then the runs asked for meanwhile; the goroutine ends with the
// last. A panic ends it without taking Traefik down (a panic in a goroutine would).
func (w *warmer) loop(run *warmRun) {
	defer func() {
		if p := recover(); p != nil {
			w.mu.Lock()
			w.running = false
			h := w.via
			w.mu.Unlock()
			h.e.log(fmt.Sprintf("middleware %s: warming panicked: %v", h.e.name, p))
		}
	}()
	for {
		w.mu.Lock()
		h := w.via
		w.mu.Unlock()
		warm(h, run)
		w.mu.Lock()
		run = w.again
		w.again = nil
		if run == nil {
			w.running = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
	}
}

// warmTally counts one run's results.
type warmTally struct {
	n        []int
	timedOut bool
}

// warm runs one warming run through h: every path on every host of run, one at a time,
// until warm.timeout has passed on h's clock.
func warm(h *Handler, run *warmRun) {
	e := h.e
	ws := h.s.Warm
	reason := run.reason
	start := h.s.Now()
	deadline := start.Add(ws.Timeout)
	var hosts []string
	for _, entry := range ws.Hosts {
		if warmsHost(h, run, entry) {
			hosts = append(hosts, entry)
		}
	}
	if len(hosts) == 0 {
		return
	}
	log := e.events.current()
	log.Emit(events.WarmStarted, events.Str("reason", reason), events.Int("urls", len(hosts)*len(ws.Paths)))
	tally := &warmTally{n: make([]int, len(warmResults))}
	for _, entry := range hosts {
		scheme, host, err := warmOrigin(entry)
		if err != nil {
			// validate checked it.
			continue
		}
		for _, path := range ws.Paths {
			result := warmTimeout
			if h.s.Now().Before(deadline) {
				result = warmOne(h, scheme, host, path, deadline)
			} else {
				tally.timedOut = true
			}
			tally.n[result]++
			count(e.metrics.warm, result)
		}
	}
	log.Emit(events.WarmDone, events.Str("reason", reason), events.Int("stored", tally.n[warmStored]),
		events.Int("fresh", tally.n[warmFresh]), events.Int("unstored", tally.n[warmUnstored]),
		events.Int("failed", tally.n[warmFailed]), events.Int("refused", tally.n[warmRefused]),
		events.Int("busy", tally.n[warmBusy]), events.Int("timed_out", tally.n[warmTimeout]),
		events.Dur("took", h.s.Now().Sub(start)))
}

// warmsHost tells whether run warms the warm.hosts entry: every entry, or one whose host a
// breaker of run.keys guards (its scope key, with or without a breaker.paths prefix).
func warmsHost(h *Handler, run *warmRun, entry string) bool {
	if run.keys == nil {
		return true
	}
	_, host, err := warmOrigin(entry)
	if err != nil {
		return false
	}
	scope := breaker.ScopeKey(h.e.breakerScope, host)
	for _, key := range run.keys {
		if k, _ := breaker.SplitPathKey(key); k == scope {
			return true
		}
	}
	return false
}

// warmRequest is the GET warming sends for scheme://host path, as a client's request
// through an entry point would reach Weir: its key is the one such a request is stored
// and found under.
func warmRequest(ctx context.Context, scheme, host, path string) (*http.Request, error) {
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+host+path, nil)
	if err != nil {
		return nil, err
	}
	r.RequestURI = r.URL.RequestURI()
	if scheme == "https" {
		r.TLS = tlsSeen
	}
	r.Header["User-Agent"] = []string{"Weir-warm"}
	r.Header["Surrogate-Capability"] = httpcache.WithSurrogateCapability(nil)
	return r, nil
}

// warmOne warms one URL and says how it went; a failure is reported by name.
func warmOne(h *Handler, scheme, host, path string, deadline time.Time) int {
	e := h.e
	u := scheme + "://" + host + path
	now := h.s.Now()
	wait := deadline.Sub(now)
	if wait > h.s.OriginTimeout {
		wait = h.s.OriginTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	req, err := warmRequest(ctx, scheme, host, path)
	if err != nil {
		cancel()
		warmFailure(e, u, 0, err.Error())
		return warmFailed
	}
	key := httpcache.Key(&h.keyer, req)
	if ent, _, _ := lookup(h, req, key, now); ent != nil && !ent.Pass && now.Before(ent.FreshUntil) {
		cancel()
		return warmFresh
	}
	c, ok := flight.TryLead(e.flights, key)
	if !ok {
		cancel()
		return warmBusy
	}
	flight.RunHere(e.flights, key, c, func() (interface{}, error) {
		return fetch(h, req, cancel, key, httpcache.PartitionOf(key), nil, nil), nil
	})
	v, err := flight.Result(c)
	res, _ := v.(*fetchResult)
	switch {
	case err != nil || res == nil:
		warmFailure(e, u, 0, "fetch failed")
		return warmFailed
	case res.refused.why != nil:
		warmFailure(e, u, 0, res.refused.why.name)
		return warmRefused
	case res.status < 200 || res.status >= 400:
		warmFailure(e, u, res.status, "")
		return warmFailed
	case res.truncated:
		warmFailure(e, u, res.status, "truncated")
		return warmFailed
	case !res.stored:
		warmFailure(e, u, res.status, "not stored: "+res.reason)
		return warmUnstored
	}
	return warmStored
}

// warmFailure writes the warm_failed event of url: the status it answered, or why there
// was none.
func warmFailure(e *engine, url string, status int, reason string) {
	fields := []events.Field{events.Str("url", url)}
	if status > 0 {
		fields = append(fields, events.Int("status", status))
	}
	if reason != "" {
		fields = append(fields, events.Str("reason", reason))
	}
	e.events.current().Emit(events.WarmFailed, fields...)
}

// keepWarmer gives e old's warmer, and says why New starts a run: the engine started with a
// new store (empty, or one another instance fills: warming skips what is stored and fresh),
// or warm.* changed.
func keepWarmer(e, old *engine, s Settings) {
	e.warm = old.warm
	if e.warm == nil {
		e.warm = &warmer{}
	}
	e.warmConf = fmt.Sprintf("%+v", s.Warm)
	switch {
	case !s.Warm.on():
	case e.store != old.store:
		e.warmOn = warmOnStart
	case e.warmConf != old.warmConf:
		e.warmOn = warmOnConfig
	}
}
