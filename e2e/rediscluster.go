package e2e

import (
	"fmt"
	"net"
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

// clusterBusOffset is what Redis adds to a node's port for its cluster bus port when
// --cluster-port is not given.
const clusterBusOffset = 10000

// clusterNodePort returns a free port whose cluster bus port (port+10000) is free too. The
// bus keeps its default: with --cluster-port set, Redis 7.0.15 marked a killed primary
// failed on every primary but its replica never started an election (seen on loopback
// clusters, by hand as well), so a failover would need an operator's CLUSTER FAILOVER
// TAKEOVER; with the default bus port, the replica is elected within seconds.
func clusterNodePort() (int, error) {
	for i := 0; i < 100; i++ {
		port, err := freePort()
		if err != nil {
			return 0, err
		}
		bus := port + clusterBusOffset
		if bus > 65535 {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(bus))
		if err != nil {
			continue
		}
		l.Close()
		if handOut(bus) {
			return port, nil
		}
	}
	return 0, fmt.Errorf("cluster node port: no free port with a free bus port %d above it", clusterBusOffset)
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
		port, err := clusterNodePort()
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("start redis cluster: %w", err)
		}
		nodeDir := filepath.Join(dir, "node"+strconv.Itoa(i))
		if err := os.MkdirAll(nodeDir, 0o755); err != nil {
			c.Close()
			return nil, fmt.Errorf("start redis cluster: %w", err)
		}
		r, err := StartRedis(RedisOptions{Binary: binary, Dir: nodeDir, Port: port,
			Args: []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
				"--cluster-node-timeout", "2000", "--repl-diskless-sync-delay", "0",
				// A primary that gives its every slot away stays an empty primary, rather
				// than becoming a replica of the node that took its last slot (Redis 7's
				// default), which the reshard test would read as keys left behind.
				"--cluster-allow-replica-migration", "no"}})
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
				// A replica that never finished its first sync with its primary is never
				// elected in its place ("disconnected from master for longer than allowed"):
				// a primary killed a few seconds after the cluster was made stayed down.
				repl, rerr := r.Do("INFO", "replication")
				if rerr == nil && (strings.Contains(repl, "role:master") || strings.Contains(repl, "master_link_status:up")) {
					break
				}
				info, err = repl, rerr
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
// SlotsOf counts the hash slots node holds, as its own CLUSTER NODES line lists them
// (ranges "a-b" and single slots; slots being imported or migrated, in brackets, left out).
func SlotsOf(node *Redis) (int, error) {
	nodes, err := node.Do("CLUSTER", "NODES")
	if err != nil {
		return 0, fmt.Errorf("slots: %w", err)
	}
	for _, line := range strings.Split(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) < 8 || !strings.Contains(f[2], "myself") {
			continue
		}
		n := 0
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") {
				continue
			}
			lo, hi, isRange := strings.Cut(r, "-")
			if !isRange {
				hi = lo
			}
			a, aerr := strconv.Atoi(lo)
			b, berr := strconv.Atoi(hi)
			if aerr != nil || berr != nil {
				return 0, fmt.Errorf("slots: %q in %q", r, line)
			}
			n += b - a + 1
		}
		return n, nil
	}
	return 0, fmt.Errorf("slots: no line for the node itself in CLUSTER NODES")
}

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
