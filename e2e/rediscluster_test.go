package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// clusterPaths is how many URLs the cluster test stores: enough for every primary to hold
// some.
const clusterPaths = 24

// TestRedisClusterShared: two Traefik processes share a Redis Cluster of three primaries,
// each with a replica. Answers stored through A spread over the three primaries by slot and
// are hits on B; a PURGE through A makes the next GET on B a miss, the near cache told by
// the primary holding the key.
func TestRedisClusterShared(t *testing.T) {
	requireE2ERedis(t)
	bin := requireRedis(t)
	c, err := StartRedisCluster(bin, t.TempDir(), 3, 1)
	if err != nil {
		t.Fatalf("%v", err)
	}
	stopAtEnd(t, "redis cluster", func() string { return c.LogTail(10) }, c.Close)
	o := newOrigin(t)
	var paths []string
	for i := 0; i < clusterPaths; i++ {
		path := fmt.Sprintf("/cluster/p%d", i)
		o.Handle(path, versioned())
		paths = append(paths, path)
	}
	o.Handle("/cluster/recover", answer("max-age=60", "recovered"))
	a, b := startPair(t, o, cachedRoute("cluster", "/cluster", "weir-cluster", redisConfig(c.URL())))
	// The near cache tracks every primary, from inside Traefik.
	waitLogged(t, a, "A", "near_cache_back", 1, nil)
	waitLogged(t, b, "B", "near_cache_back", 1, nil)
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
