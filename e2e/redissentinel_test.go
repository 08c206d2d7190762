package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestRedisSentinelFailover: two Traefiks share a primary named by its sentinels
// (store.url redis-sentinel://); answers are shared. Under load, the primary is killed (each
// instance keeps what it fetches in local memory while the store is lost), or an operator
// asks the sentinels for a failover (SENTINEL FAILOVER, the primary demoted): no client sees
// an error, the sentinels promote the replica, both instances follow, the near cache tracks
// the new primary, and answers are shared again, entries written before the failover read
// from the promoted replica.
func TestRedisSentinelFailover(t *testing.T) {
	requireE2ERedis(t)
	tests := []struct {
		desc  string
		fault func(s *RedisSentinel) error
	}{
		{desc: "primary killed", fault: func(s *RedisSentinel) error { return s.Primary.Kill() }},
		{desc: "failover requested", fault: func(s *RedisSentinel) error {
			_, err := s.Sentinels[0].Do("SENTINEL", "FAILOVER", sentinelMaster)
			return err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) { sentinelFailover(t, tc.fault) })
	}
}

// sentinelFailover is TestRedisSentinelFailover with fault making the sentinels promote the
// replica.
func sentinelFailover(t *testing.T, fault func(s *RedisSentinel) error) {
	bin := requireRedis(t)
	s, err := StartRedisSentinel(bin, t.TempDir(), 1, 2)
	if err != nil {
		t.Fatalf("%v", err)
	}
	stopAtEnd(t, "redis sentinel", func() string { return s.LogTail(15) }, s.Close)
	o, keys, bodies := slowKeysOrigin(t, "sentinel", "max-age=60")
	a, b := startPair(t, o, cachedRoute("sentinel", "/sentinel", "weir-sentinel", redisConfig(s.URL())))
	waitLogged(t, a, "A", "near_cache_back", 1, nil)
	waitLogged(t, b, "B", "near_cache_back", 1, nil)
	for _, k := range keys {
		callT(t, a, http.MethodGet, k)
		wantHit(t, "GET "+k+" on B before the failover", callT(t, b, http.MethodGet, k))
		wantCount(t, o, k, 1)
	}
	if n, err := s.Primary.Do("DBSIZE"); err != nil || n == "0" {
		t.Fatalf("DBSIZE on the primary = %s, %v; want the entries there", n, err)
	}
	replica := s.Replicas[0]
	old := s.Primary.Addr

	began := time.Now()
	var promoted time.Duration
	f := faultLoad(t, []*Traefik{a, b}, keys, bodies, func() {
		sleepUntil(began, time.Second)
		if err := fault(s); err != nil {
			t.Errorf("failover: %v", err)
		}
		killed := time.Now()
		for s.Master() == old || s.Master() == "" {
			if time.Since(killed) > sentinelReadyWithin {
				t.Errorf("hangs: the sentinels name no new primary within %v", sentinelReadyWithin)
				return
			}
			time.Sleep(pollEvery)
		}
		promoted = time.Since(killed)
	})
	t.Logf("load: %d clients, %v: %d requests served, %d client errors, %d hits; the sentinels named %s %v after the fault",
		faultClients, f.elapsed.Round(time.Millisecond), f.requests, f.errors, f.hits, s.Master(), promoted.Round(time.Millisecond))
	t.Logf("second by second: %s", f.timeline())
	if f.errors != 0 {
		t.Errorf("%d client errors, want 0; the first: %s", f.errors, strings.Join(f.firstErrors, "; "))
	}
	if got := s.Master(); got != replica.Addr {
		t.Fatalf("the sentinels name %s, want the replica %s", got, replica.Addr)
	}

	waitLogged(t, a, "A", "near_cache_back", 2, nil)
	waitLogged(t, b, "B", "near_cache_back", 2, nil)
	took, tries := waitShared(t, a, b, "/sentinel/recover")
	t.Logf("shared again %v after the load (%d tries); tracking back on both", took.Round(time.Millisecond), tries)
	if keysOn, err := replica.Do("KEYS", redisKeyPrefix+"http://"+sharedHost+"/sentinel/recover*"); err != nil || keysOn == "" {
		t.Errorf("KEYS on the new primary = %q, %v; want the entries stored after the failover", keysOn, err)
	}
	// The outage's own fetches (local memory emptied with the near cache when tracking was
	// lost) are counted already; what follows must be read from the promoted replica.
	for _, k := range keys {
		before := o.Count(k)
		r := callT(t, b, http.MethodGet, k)
		wantReply(t, "GET "+k+" on B after the failover", r, http.StatusOK, bodies[k])
		wantHit(t, "GET "+k+" on B after the failover", r)
		if o.Count(k) != before {
			t.Errorf("GET %s on B after the failover went to the origin", k)
		}
	}
}
