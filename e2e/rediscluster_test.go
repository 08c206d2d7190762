package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// clusterPaths is how many URLs the cluster test stores: enough for every primary to hold
// some.
const clusterPaths = 24

// TestRedisClusterShared: two Traefik processes share a Redis Cluster of three primaries,
// each with a replica. Answers stored through A spread over the three primaries by slot and
// are hits on B; a PURGE through A makes the next GET on B a miss, the near cache told by
// the primary holding the key.
func TestRedisClusterShared(t *testing.T) {
	c, o, paths, a, b := clusterPair(t, "cluster", 1)
	waitShared(t, a, b, "/cluster/recover")

	for _, path := range paths {
		wantMiss(t, "GET "+path+" on A", callT(t, a, http.MethodGet, path), "uri-miss", true)
	}
	for _, path := range paths {
		r := callT(t, b, http.MethodGet, path)
		wantReply(t, "GET "+path+" on B", r, http.StatusOK, "v1")
		wantHit(t, "GET "+path+" on B", r)
		wantCount(t, o, path, 1)
	}
	perNode := make([]int, len(c.Primaries))
	for i, r := range c.Primaries {
		keys, err := r.Do("KEYS", redisKeyPrefix+"http://"+sharedHost+"/cluster/p*")
		if err != nil {
			t.Fatalf("KEYS on primary %d: %v", i, err)
		}
		if keys != "" {
			perNode[i] = len(strings.Split(keys, "\n"))
		}
		if perNode[i] == 0 {
			t.Errorf("primary %d (%s) holds none of the %d entries, want them spread over every primary", i, r.Addr, clusterPaths)
		}
	}
	t.Logf("entries per primary: %v; cluster %s", perNode, c.URL())

	for _, path := range paths[:3] {
		// B's near copy first, so that the PURGE's invalidation is what drops it.
		wantHit(t, "GET "+path+" on B again", callT(t, b, http.MethodGet, path))
		purge := callT(t, a, "PURGE", path)
		wantReply(t, "PURGE "+path+" on A", purge, http.StatusOK, "purged\n")
		after, lag := afterInvalidation(t, b, path)
		wantReply(t, "GET "+path+" on B after PURGE on A", after, http.StatusOK, "v2")
		wantMiss(t, "GET "+path+" on B after PURGE on A", after, "uri-miss", true)
		wantHit(t, "GET "+path+" on A after B stored again", callT(t, a, http.MethodGet, path))
		t.Logf("PURGE %s: B saw it after %s", path, lag)
	}
}

// failoverWithin bounds the wait for a replica to take a killed primary's slots over: the
// cluster's node timeout (2s in StartRedisCluster) and an election.
const failoverWithin = 30 * time.Second

// TestRedisClusterFailover: a primary of a cluster with replicas is killed under two Traefiks.
// Every request is still answered; once its replica took its slots over, the entries it held
// are hits on both instances (read from the promoted replica), the near cache tracks the new
// primaries, and answers are shared again.
func TestRedisClusterFailover(t *testing.T) {
	c, o, paths, a, b := clusterPair(t, "failover", 1)
	for _, path := range paths {
		callT(t, a, http.MethodGet, path)
		wantHit(t, "GET "+path+" on B before the failover", callT(t, b, http.MethodGet, path))
	}

	killed := c.Primaries[0]
	// The URLs whose entries the killed primary holds: Redis replicates asynchronously, so
	// those written just before the kill may be lost with it (README); the others may not.
	onKilled := make(map[string]bool)
	keys, err := killed.Do("KEYS", redisKeyPrefix+"http://"+sharedHost+"/failover/p*")
	if err != nil {
		t.Fatalf("KEYS on the primary to kill: %v", err)
	}
	for _, k := range strings.Fields(keys) {
		onKilled[strings.TrimPrefix(k, redisKeyPrefix+"http://"+sharedHost)] = true
	}
	if err := killed.Kill(); err != nil {
		t.Fatalf("kill primary: %v", err)
	}
	killedAt := time.Now()
	// Its replica is elected by the cluster itself: the other primaries mark the killed
	// one failed after the node timeout (2s), and its replica takes its slots over.
	survivor := c.Primaries[1]
	errors := 0
	for {
		for _, tr := range []*Traefik{a, b} {
			for _, path := range paths {
				if r, err := call(tr, http.MethodGet, path); err != nil || r.status != http.StatusOK {
					errors++
					if errors < 5 {
						t.Errorf("GET %s during the failover: %v, status %d", path, err, r.status)
					}
				}
			}
		}
		info, _ := survivor.Do("CLUSTER", "INFO")
		if strings.Contains(info, "cluster_state:ok") && tookOver(survivor, killed.Addr) {
			break
		}
		if time.Since(killedAt) > failoverWithin {
			t.Fatalf("hangs: no failover within %v: %s", failoverWithin, info)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("failover: cluster ok again %v after the kill; %d requests failed", time.Since(killedAt).Round(time.Millisecond), errors)

	waitLogged(t, a, "A", "near_cache_back", 2, nil)
	waitLogged(t, b, "B", "near_cache_back", 2, nil)
	took, tries := waitShared(t, a, b, "/failover/recover")
	t.Logf("shared again %v after the failover (%d tries); tracking back on both", took.Round(time.Millisecond), tries)
	// While the store breaker was open, each instance fetched what it missed and kept it in
	// its own memory (dropped when tracking came back); what counts now is what the cluster
	// still holds: fetches from here on.
	fetched := make(map[string]int64, len(paths))
	for _, path := range paths {
		fetched[path] = o.Count(path)
	}
	lost := 0
	for _, path := range paths {
		r := callT(t, b, http.MethodGet, path)
		if r.status != http.StatusOK {
			t.Errorf("GET %s on B after the failover: status %d", path, r.status)
		}
		if o.Count(path) == fetched[path] {
			continue
		}
		if onKilled[path] {
			lost++
			continue
		}
		t.Errorf("GET %s on B after the failover went to the origin: its entry was on a primary that stayed up", path)
	}
	t.Logf("after the failover: %d of the killed primary's %d URLs fetched from the origin again, none of the other %d",
		lost, len(onKilled), len(paths)-len(onKilled))
}

// tookOver tells whether node sees the primary at addr failed and its slots held by
// another node.
// clusterPair starts a Redis Cluster of three primaries with replicas replicas each, an
// origin with clusterPaths versioned paths under /name/ (and /name/recover), and two
// Traefiks sharing the cluster through the route /name, once the near cache of each
// tracks every primary (from inside Traefik).
func clusterPair(t *testing.T, name string, replicas int) (c *RedisCluster, o *Origin, paths []string, a, b *Traefik) {
	t.Helper()
	requireE2ERedis(t)
	bin := requireRedis(t)
	c, err := StartRedisCluster(bin, t.TempDir(), 3, replicas)
	if err != nil {
		t.Fatalf("%v", err)
	}
	stopAtEnd(t, "redis cluster", func() string { return c.LogTail(10) }, c.Close)
	o = newOrigin(t)
	for i := 0; i < clusterPaths; i++ {
		path := fmt.Sprintf("/%s/p%d", name, i)
		o.Handle(path, versioned())
		paths = append(paths, path)
	}
	o.Handle("/"+name+"/recover", answer("max-age=60", "recovered"))
	a, b = startPair(t, o, cachedRoute(name, "/"+name, "weir-"+name, redisConfig(c.URL())))
	waitLogged(t, a, "A", "near_cache_back", 1, nil)
	waitLogged(t, b, "B", "near_cache_back", 1, nil)
	return c, o, paths, a, b
}

func tookOver(node *Redis, addr string) bool {
	nodes, err := node.Do("CLUSTER", "NODES")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) >= 8 && strings.HasPrefix(f[1], addr+"@") {
			// Failed, and no slots listed after the link state.
			return strings.Contains(f[2], "fail") && len(f) == 8
		}
	}
	return false
}

// clusterStoppedRounds is how many times each instance asks for every URL while the whole
// cluster is down.
const clusterStoppedRounds = 5

// TestRedisClusterStopped: every node of a cluster with replicas is killed under two
// Traefiks. Every request is still answered; each instance, its near cache lost, keeps what
// it fetches in its own memory, so the origin sees at most one fetch per URL per instance
// for clusterStoppedRounds requests each, and every request after an instance's first is a
// hit from its memory.
func TestRedisClusterStopped(t *testing.T) {
	c, o, paths, a, b := clusterPair(t, "stopped", 1)
	for _, path := range paths {
		callT(t, a, http.MethodGet, path)
		wantHit(t, "GET "+path+" on B before the stop", callT(t, b, http.MethodGet, path))
	}
	for _, r := range c.Nodes() {
		if err := r.Kill(); err != nil {
			t.Fatalf("kill %s: %v", r.Addr, err)
		}
	}
	stopped := time.Now()
	waitLogged(t, a, "A", "near_cache_lost", 1, nil)
	waitLogged(t, b, "B", "near_cache_lost", 1, nil)
	t.Logf("cluster stopped; local caching on both instances %v later", time.Since(stopped).Round(time.Millisecond))

	fetched := make(map[string]int64, len(paths))
	for _, path := range paths {
		fetched[path] = o.Count(path)
	}
	hits, requests := 0, 0
	for round := 1; round <= clusterStoppedRounds; round++ {
		for i, tr := range []*Traefik{a, b} {
			for _, path := range paths {
				requests++
				r := callT(t, tr, http.MethodGet, path)
				if r.status != http.StatusOK {
					t.Errorf("GET %s on %c with the cluster stopped: status %d", path, 'A'+i, r.status)
					continue
				}
				if round > 1 {
					wantHit(t, fmt.Sprintf("GET %s on %c, round %d with the cluster stopped", path, 'A'+i, round), r)
				}
				if r.cacheStatus().hit() {
					hits++
				}
			}
		}
	}
	var origin int64
	for _, path := range paths {
		n := o.Count(path) - fetched[path]
		origin += n
		if n > 2 {
			t.Errorf("origin requests for %s with the cluster stopped: %d, want at most one per instance", path, n)
		}
	}
	t.Logf("cluster stopped: %d requests, %d hits, %d origin fetches for %d URLs on two instances",
		requests, hits, origin, len(paths))
}

// TestRedisClusterReshard: a third of the slots move from one primary to another (redis-cli
// --cluster reshard, keys migrated a few at a time) while two Traefiks serve every URL in a
// loop. Every request is answered; once the slots have moved, every URL is still a hit on
// both instances without a second origin fetch: read from its new node, through MOVED and,
// while its slot migrated, ASK.
func TestRedisClusterReshard(t *testing.T) {
	c, o, paths, a, b := clusterPair(t, "reshard", 0)
	for _, path := range paths {
		callT(t, a, http.MethodGet, path)
		wantHit(t, "GET "+path+" on B before the reshard", callT(t, b, http.MethodGet, path))
	}
	before, _ := c.Primaries[0].Do("DBSIZE")
	// A third of 16384, give or take one: which third (5461 or 5462 slots) is redis-cli's
	// choice.
	slots, err := SlotsOf(c.Primaries[0])
	if err != nil {
		t.Fatalf("%v", err)
	}

	done := make(chan error, 1)
	go func() { done <- c.Reshard(c.Primaries[0], c.Primaries[1], slots) }()
	requests, failed := 0, 0
	var reshardErr error
	for finished := false; !finished; {
		select {
		case err := <-done:
			reshardErr = err
			finished = true
		default:
		}
		for _, tr := range []*Traefik{a, b} {
			for _, path := range paths {
				requests++
				if r, err := call(tr, http.MethodGet, path); err != nil || r.status != http.StatusOK || r.body != "v1" {
					failed++
					if failed < 5 {
						t.Errorf("GET %s during the reshard: %v, status %d, body %q", path, err, r.status, r.body)
					}
				}
			}
		}
	}
	if reshardErr != nil {
		t.Fatalf("%v", reshardErr)
	}
	after, _ := c.Primaries[0].Do("DBSIZE")
	t.Logf("reshard: %d slots moved, %d requests during it, %d failed; keys on the first primary %s before, %s after",
		slots, requests, failed, before, after)
	if after != "0" {
		t.Errorf("the first primary still holds %s keys after giving all its slots away", after)
	}
	for _, path := range paths {
		for i, tr := range []*Traefik{a, b} {
			r := callT(t, tr, http.MethodGet, path)
			wantReply(t, fmt.Sprintf("GET %s on %c after the reshard", path, 'A'+i), r, http.StatusOK, "v1")
		}
		wantCount(t, o, path, 1)
	}
}
