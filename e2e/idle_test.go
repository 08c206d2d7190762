package e2e

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Idle cost: what Traefik spends, with nothing asked of it, on Weir's background work.
const (
	// idleFor is how long each Traefik is measured idle.
	idleFor = 10 * time.Second
	// idleSettle lets the last request's work end before the measure starts.
	idleSettle = time.Second
	// idleShared is breaker.window's default and a little more than the life of the counts
	// record after it: with a shared store, the window counts of the last requests are
	// shared until the window passes, and the record's expiry is an invalidation each
	// instance reads once (core/fleet_counts.go), work those requests asked for, so the
	// measure with Redis starts after it.
	idleShared = 15 * time.Second
	// idleMiddlewares is how many Weir middlewares the measured Traefik runs.
	idleMiddlewares = 10
	// idleBound is the CPU Weir may add to an idle Traefik: 0.3% of a core (3ms of CPU a
	// second).
	idleBound = 0.003
	// clockTicks is the unit of /proc/<pid>/stat's times: USER_HZ, 100 on Linux.
	clockTicks = 100
)

// cpuTime is the CPU time the process pid has spent so far, user and system
// (/proc/<pid>/stat's utime and stime).
func cpuTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Skipf("no CPU time for process %d (/proc needed): %v", pid, err)
	}
	// The command name, in parentheses, may hold spaces: fields count from after it, the
	// state being field 3.
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		t.Fatalf("/proc/%d/stat: %d fields after the name, want at least 13", pid, len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			t.Fatalf("/proc/%d/stat: %q is no count of ticks: %v", pid, f, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks
}

// idleShare is the share of a core Traefik spends over idleFor with nothing asked of it.
func idleShare(t *testing.T, tr *Traefik) float64 {
	t.Helper()
	time.Sleep(idleSettle)
	before := cpuTime(t, tr.Pid())
	began := time.Now()
	time.Sleep(idleFor)
	spent := cpuTime(t, tr.Pid()) - before
	return spent.Seconds() / time.Since(began).Seconds()
}

// idleRoutes is a Dynamic of idleMiddlewares routers, /idleN/ through middleware weir-idleN
// configured by conf(n), or without a middleware when conf is nil (bare Traefik).
func idleRoutes(conf func(n int) map[string]interface{}) Dynamic {
	d := Dynamic{Middlewares: map[string]map[string]interface{}{}}
	for n := 0; n < idleMiddlewares; n++ {
		r := Route{Name: fmt.Sprintf("idle%d", n), Rule: fmt.Sprintf("PathPrefix(`/idle%d/`)", n)}
		if conf != nil {
			r.Middleware = fmt.Sprintf("weir-idle%d", n)
			d.Middlewares[r.Middleware] = conf(n)
		}
		d.Routes = append(d.Routes, r)
	}
	return d
}

// idleConf is a middleware with every background feature a configuration without a shared
// store allows: admission, budgets, warming, the admin, stale answers, the breaker's and the
// miss-rate detector's rules.
func idleConf(n int) map[string]interface{} {
	return map[string]interface{}{
		"admission": map[string]interface{}{"kneeInFlight": "64", "protect": []string{fmt.Sprintf("/idle%d/health", n)}},
		"budgets":   map[string]interface{}{"client": "200/10s", "host": "5000/10s"},
		"warm":      map[string]interface{}{"paths": []string{fmt.Sprintf("/idle%d/a", n)}, "hosts": []string{"idle.test"}},
		"admin":     map[string]interface{}{"path": fmt.Sprintf("/idle%d/_weir", n), "token": adminTestToken},
		"stale":     map[string]interface{}{"ifError": "30s", "whileRevalidate": "10s"},
		"breaker":   map[string]interface{}{"maxFailures": "20"},
		"missRate":  map[string]interface{}{"throttle": "true"},
	}
}

// idleTraffic sends one request through every router, so that every middleware is built and
// has served (its lag sampler woken and put back to sleep).
func idleTraffic(t *testing.T, tr *Traefik) {
	t.Helper()
	for n := 0; n < idleMiddlewares; n++ {
		r := send(t, tr, "GET", fmt.Sprintf("/idle%d/a", n), map[string]string{"Host": "idle.test"})
		if r.status != 200 {
			t.Fatalf("/idle%d/a: status %d, want 200", n, r.status)
		}
	}
}

// TestIdleCostsNothing: with nothing asked of it, a Traefik running ten Weir middlewares with
// admission and every other background feature a configuration without a shared store
// allows spends within 0.3% of a core more than the same Traefik without Weir. The two are
// measured back to back; a failed bound is measured again once (the machine is shared).
func TestIdleCostsNothing(t *testing.T) {
	o := newIdleOrigin(t)
	bare := startTraefik(t, o, idleRoutes(nil))
	weir := startTraefik(t, o, idleRoutes(idleConf))
	idleTraffic(t, bare)
	idleTraffic(t, weir)
	compareIdle(t, bare, weir)
}

// TestIdleCostsNothingRedis: the same with a shared store (the fleet's control record and
// window counts, breaker deadlines, shared budgets, the near cache's tracking connection), one
// per middleware: within 0.3% of a core too, once the breakers' window of the last requests
// passed. The tracking connections are watched by the
// kernel's keep-alive probes, with a PING every 10s (redisstore's pushKeepAlive, trackPing).
// The Redis commands the measure costs are logged, to tell which loop spends.
func TestIdleCostsNothingRedis(t *testing.T) {
	requireE2ERedis(t)
	r := startRedis(t, 0)
	o := newIdleOrigin(t)
	bare := startTraefik(t, o, idleRoutes(nil))
	weir := startTraefik(t, o, idleRoutes(func(n int) map[string]interface{} {
		conf := idleConf(n)
		conf["store"] = map[string]interface{}{"url": r.URL(0), "keyPrefix": fmt.Sprintf("idle%d:", n)}
		conf["budgets"] = map[string]interface{}{"client": "200/10s", "host": "5000/10s", "shared": "true"}
		return conf
	}))
	idleTraffic(t, bare)
	idleTraffic(t, weir)
	time.Sleep(idleShared)
	before := redisCalls(t, r)
	began := time.Now()
	compareIdle(t, bare, weir)
	t.Logf("Redis commands a second while measured: %s", callRates(before, redisCalls(t, r), time.Since(began)))
}

// redisCalls is the count of calls of each command r has run (INFO commandstats).
func redisCalls(t *testing.T, r *Redis) map[string]int64 {
	t.Helper()
	info, err := r.Do("INFO", "commandstats")
	if err != nil {
		t.Fatalf("INFO commandstats: %v", err)
	}
	calls := map[string]int64{}
	for _, line := range strings.Split(info, "\n") {
		// cmdstat_get:calls=12,usec=...
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok {
			continue
		}
		n, _, _ := strings.Cut(rest, ",")
		if v, err := strconv.ParseInt(n, 10, 64); err == nil {
			calls[strings.TrimPrefix(name, "cmdstat_")] = v
		}
	}
	return calls
}

// callRates is each command's calls a second between before and after, over d, INFO's own
// calls left out.
func callRates(before, after map[string]int64, d time.Duration) string {
	var parts []string
	for name, n := range after {
		if name == "info" || n == before[name] {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.1f", name, float64(n-before[name])/d.Seconds()))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// compareIdle measures bare and weir idle, back to back, and fails when weir spends more
// than idleBound over bare twice running.
func compareIdle(t *testing.T, bare, weir *Traefik) {
	t.Helper()
	for try := 1; ; try++ {
		b, w := idleShare(t, bare), idleShare(t, weir)
		t.Logf("idle, measure %d: bare Traefik %.2f%% of a core, with Weir %.2f%%, Weir's extra %.2f%% (bound %.2f%%)",
			try, 100*b, 100*w, 100*(w-b), 100*idleBound)
		if w-b <= idleBound {
			return
		}
		if try == 2 {
			t.Errorf("idle: Weir adds %.2f%% of a core to an idle Traefik twice running, want at most %.2f%%", 100*(w-b), 100*idleBound)
			return
		}
	}
}

// newIdleOrigin is an origin answering /idleN/a, the path every router is sent and warms.
func newIdleOrigin(t *testing.T) *Origin {
	t.Helper()
	o := newOrigin(t)
	for n := 0; n < idleMiddlewares; n++ {
		o.Handle(fmt.Sprintf("/idle%d/a", n), answer("max-age=60", "idle"))
	}
	return o
}
