package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clusterReadyWithin bounds the wait for a new cluster to agree on its slots and nodes.
const clusterReadyWithin = 30 * time.Second

// RedisCluster is a Redis Cluster of redis-server processes on 127.0.0.1, made by
// redis-cli --cluster create, keeping nothing on disk but each node's cluster
// configuration.
type RedisCluster struct {
	// Primaries hold the slots; Replicas replicate them, as redis-cli assigns.
	Primaries []*Redis
	Replicas  []*Redis
	// cli is the redis-cli binary.
	cli string
}

// StartRedisCluster starts primaries+primaries*replicas servers in directories under dir
// and makes a cluster of them with replicas replicas per primary; it returns once every
// node sees the cluster ok.
func StartRedisCluster(binary, dir string, primaries, replicas int) (*RedisCluster, error) {
	cli := filepath.Join(filepath.Dir(binary), "redis-cli")
	if _, err := os.Stat(cli); err != nil {
		if cli, err = exec.LookPath("redis-cli"); err != nil {
			return nil, fmt.Errorf("start redis cluster: %w", err)
		}
	}
	c := &RedisCluster{cli: cli}
	var addrs []string
	for i := 0; i < primaries*(1+replicas); i++ {
		// The bus port: a free one, since port+10000, the default, may not be.
		bus, err := freePort()
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("start redis cluster: %w", err)
		}
		nodeDir := filepath.Join(dir, "node"+strconv.Itoa(i))
		if err := os.MkdirAll(nodeDir, 0o755); err != nil {
			c.Close()
			return nil, fmt.Errorf("start redis cluster: %w", err)
		}
		r, err := StartRedis(RedisOptions{Binary: binary, Dir: nodeDir,
			Args: []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
				"--cluster-port", strconv.Itoa(bus), "--cluster-node-timeout", "2000"}})
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("start redis cluster: %w", err)
		}
		if i < primaries {
			c.Primaries = append(c.Primaries, r)
		} else {
			c.Replicas = append(c.Replicas, r)
		}
		addrs = append(addrs, r.Addr)
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	out, err := exec.Command(cli, args...).CombinedOutput()
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(clusterReadyWithin)
	for _, r := range c.Nodes() {
		for {
			info, err := r.Do("CLUSTER", "INFO")
			if err == nil && strings.Contains(info, "cluster_state:ok") &&
				strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(len(addrs))) {
				break
			}
			if time.Now().After(deadline) {
				c.Close()
				return nil, fmt.Errorf("redis cluster not ready within %v: %s: %v", clusterReadyWithin, info, err)
			}
			time.Sleep(pollEvery)
		}
	}
	return c, nil
}

// URL is the store.url naming the cluster by its primaries.
func (c *RedisCluster) URL() string {
	return "redis-cluster://" + strings.Join(addrsOf(c.Primaries), ",") + "/"
}

// Nodes are the primaries, then the replicas.
func (c *RedisCluster) Nodes() []*Redis {
	return append(append([]*Redis{}, c.Primaries...), c.Replicas...)
}

// Close kills every node.
func (c *RedisCluster) Close() error { return closeAll(c.Nodes()) }

// LogTail is the last n lines of every node's log.
func (c *RedisCluster) LogTail(n int) string { return logTails(c.Nodes(), n) }

// Reshard moves slots hash slots from the primary from to the primary to, keys and all, as
// an operator does with redis-cli --cluster reshard.
func (c *RedisCluster) Reshard(from, to *Redis, slots int) error {
	fromID, err := from.Do("CLUSTER", "MYID")
	if err != nil {
		return fmt.Errorf("reshard: %w", err)
	}
	toID, err := to.Do("CLUSTER", "MYID")
	if err != nil {
		return fmt.Errorf("reshard: %w", err)
	}
	out, err := exec.Command(c.cli, "--cluster", "reshard", from.Addr, "--cluster-from", fromID,
		"--cluster-to", toID, "--cluster-slots", strconv.Itoa(slots), "--cluster-yes",
		"--cluster-pipeline", "5").CombinedOutput()
	if err != nil {
		return fmt.Errorf("redis-cli --cluster reshard: %v\n%s", err, out)
	}
	return nil
}
