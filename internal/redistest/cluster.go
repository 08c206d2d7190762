package redistest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// clusterSlots is how many hash slots a Redis Cluster has.
const clusterSlots = 16384

// clusterWait bounds how long a new cluster may take to agree on its slots and nodes.
const clusterWait = 20 * time.Second

// Cluster is a running Redis Cluster of throwaway servers on loopback ports.
type Cluster struct {
	// Primaries hold the slots, in equal ranges in order; Replicas[i] replicates
	// Primaries[i % len(Primaries)].
	Primaries []*Server
	Replicas  []*Server
}

// URL is the store.url naming the cluster by its first primary, as operators may: the
// other nodes are found from it.
func (c *Cluster) URL() string {
	return "redis-cluster://" + c.Primaries[0].Addr + "/"
}

// URLAll is the store.url listing every primary.
func (c *Cluster) URLAll() string {
	addrs := make([]string, 0, len(c.Primaries))
	for _, s := range c.Primaries {
		addrs = append(addrs, s.Addr)
	}
	return "redis-cluster://" + strings.Join(addrs, ",") + "/"
}

// Nodes are the primaries, then the replicas.
func (c *Cluster) Nodes() []*Server {
	return append(append([]*Server{}, c.Primaries...), c.Replicas...)
}

// StartCluster starts a cluster of primaries servers holding the 16384 slots in equal
// ranges, and replicas more servers, each replicating a primary in turn, and waits until
// every node sees the whole cluster ready. It is made as redis-cli --cluster create makes
// one, with CLUSTER ADDSLOTSRANGE, MEET and REPLICATE (Redis 7), without redis-cli: the
// tests run interpreted, without os/exec. Servers stop when the test ends.
func StartCluster(t testing.TB, primaries, replicas int) *Cluster {
	t.Helper()
	c := &Cluster{}
	// The cluster bus ports: a free one each, since port+10000, the default, may not be.
	var firstBus int
	start := func() *Server {
		bus, err := freePort()
		if err != nil {
			t.Fatalf("finding a free port: %v", err)
		}
		if firstBus == 0 {
			firstBus = bus
		}
		return Start(t, Config{Args: []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-port", strconv.Itoa(bus), "--cluster-node-timeout", "2000"}})
	}
	for i := 0; i < primaries; i++ {
		c.Primaries = append(c.Primaries, start())
	}
	for i := 0; i < replicas; i++ {
		c.Replicas = append(c.Replicas, start())
	}
	per := clusterSlots / primaries
	for i, s := range c.Primaries {
		first, last := i*per, (i+1)*per-1
		if i == primaries-1 {
			last = clusterSlots - 1
		}
		s.MustDo("CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(first), strconv.Itoa(last))
	}
	first := c.Primaries[0]
	for _, s := range c.Nodes()[1:] {
		s.MustDo("CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(first.Port), strconv.Itoa(firstBus))
	}
	all := len(c.Nodes())
	waitCluster(t, c, func(s *Server) bool { return knownNodes(s) == all })
	for i, s := range c.Replicas {
		id := nodeID(t, c.Primaries[i%primaries])
		waitCluster(t, c, func(*Server) bool {
			_, err := s.Do("CLUSTER", "REPLICATE", id)
			return err == nil
		})
	}
	waitCluster(t, c, func(s *Server) bool { return clusterReady(s, all) })
	return c
}

// waitCluster waits until ready holds for every node, failing the test after clusterWait.
func waitCluster(t testing.TB, c *Cluster, ready func(s *Server) bool) {
	t.Helper()
	deadline := time.Now().Add(clusterWait)
	for _, s := range c.Nodes() {
		for !ready(s) {
			if time.Now().After(deadline) {
				info, _ := s.Do("CLUSTER", "NODES")
				t.Fatalf("hangs: the cluster is not ready within %v; %s sees:\n%v", clusterWait, s.Addr, info)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// knownNodes is how many nodes s knows, itself included.
func knownNodes(s *Server) int {
	reply, err := s.Do("CLUSTER", "NODES")
	if err != nil {
		return 0
	}
	text, _ := reply.(string)
	return strings.Count(strings.TrimSpace(text), "\n") + 1
}

// clusterReady tells whether s sees the cluster ok, with all nodes connected and every
// slot held.
func clusterReady(s *Server, all int) bool {
	reply, err := s.Do("CLUSTER", "INFO")
	if err != nil {
		return false
	}
	info, _ := reply.(string)
	return strings.Contains(info, "cluster_state:ok") &&
		strings.Contains(info, "cluster_slots_ok:"+strconv.Itoa(clusterSlots)) &&
		strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(all)) &&
		replicasSeen(s) == all
}

// replicasSeen is how many nodes s sees connected, each either a primary with slots or a
// replica of one.
func replicasSeen(s *Server) int {
	reply, err := s.Do("CLUSTER", "NODES")
	if err != nil {
		return 0
	}
	text, _ := reply.(string)
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) >= 8 && f[7] == "connected" && !strings.Contains(f[2], "fail") {
			n++
		}
	}
	return n
}

// nodeID is the cluster node ID of s.
func nodeID(t testing.TB, s *Server) string {
	t.Helper()
	reply := s.MustDo("CLUSTER", "MYID")
	id, ok := reply.(string)
	if !ok || id == "" {
		t.Fatalf("CLUSTER MYID on %s = %v", s.Addr, reply)
	}
	return id
}

// Slot is the hash slot of key (CRC16/XMODEM of the key, or of its hash tag, modulo
// 16384), as the cluster computes it, asked of a node.
func (c *Cluster) Slot(t testing.TB, key string) int {
	t.Helper()
	reply := c.Primaries[0].MustDo("CLUSTER", "KEYSLOT", key)
	n, ok := reply.(int64)
	if !ok {
		t.Fatalf("CLUSTER KEYSLOT %q = %v", key, reply)
	}
	return int(n)
}

// Owner is the primary holding slot.
func (c *Cluster) Owner(slot int) *Server {
	per := clusterSlots / len(c.Primaries)
	i := slot / per
	if i >= len(c.Primaries) {
		i = len(c.Primaries) - 1
	}
	return c.Primaries[i]
}

// String lists the cluster's nodes.
func (c *Cluster) String() string {
	var b strings.Builder
	for i, s := range c.Primaries {
		fmt.Fprintf(&b, "primary %d %s; ", i, s.Addr)
	}
	for i, s := range c.Replicas {
		fmt.Fprintf(&b, "replica %d %s; ", i, s.Addr)
	}
	return strings.TrimSuffix(b.String(), "; ")
}
