package redistest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// SentinelMaster is the name the sentinels of StartSentinel monitor the primary by.
const SentinelMaster = "weirmaster"

// sentinelWait bounds how long a new setup may take to have its replicas in sync and its
// sentinels know each other, and how long a failover may take.
const sentinelWait = 30 * time.Second

// Sentinel is a primary, its replicas and the redis-server --sentinel processes monitoring
// them, on loopback ports.
type Sentinel struct {
	// Primary is the primary the setup started with; Replicas replicate it.
	Primary  *Server
	Replicas []*Server
	// Sentinels monitor Primary as SentinelMaster, with quorum 1, a primary silent for
	// 500ms counting as down and a failover given 2s.
	Sentinels []*Server
}

// StartSentinel starts a primary, replicas replicating it and sentinels monitoring it, and
// waits until every replica is in sync and every sentinel knows the replicas and the other
// sentinels. Servers stop when the test ends.
func StartSentinel(t testing.TB, replicas, sentinels int) *Sentinel {
	t.Helper()
	st := &Sentinel{Primary: Start(t, Config{})}
	port := strconv.Itoa(st.Primary.Port)
	for i := 0; i < replicas; i++ {
		st.Replicas = append(st.Replicas, Start(t, Config{Args: []string{"--replicaof", "127.0.0.1", port}}))
	}
	for _, r := range st.Replicas {
		waitSentinel(t, "replica "+r.Addr+" in sync", func() bool {
			return strings.Contains(info(r, "replication"), "master_link_status:up")
		})
	}
	conf := fmt.Sprintf("sentinel monitor %s 127.0.0.1 %s 1\n"+
		"sentinel down-after-milliseconds %[1]s 500\n"+
		"sentinel failover-timeout %[1]s 2000\n", SentinelMaster, port)
	for i := 0; i < sentinels; i++ {
		st.Sentinels = append(st.Sentinels, Start(t, Config{ConfigText: conf, Args: []string{"--sentinel"}}))
	}
	for _, s := range st.Sentinels {
		s := s
		waitSentinel(t, "sentinel "+s.Addr+" knowing the setup", func() bool {
			return count(s, "REPLICAS") == replicas && count(s, "SENTINELS") == sentinels-1
		})
	}
	return st
}

// URL is the store.url naming the setup by its sentinels.
func (st *Sentinel) URL() string {
	addrs := make([]string, 0, len(st.Sentinels))
	for _, s := range st.Sentinels {
		addrs = append(addrs, s.Addr)
	}
	return "redis-sentinel://" + strings.Join(addrs, ",") + "/" + SentinelMaster
}

// Master is the primary's address as the first sentinel answering names it.
func (st *Sentinel) Master(t testing.TB) string {
	t.Helper()
	for _, s := range st.Sentinels {
		reply, err := s.Do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", SentinelMaster)
		parts, ok := reply.([]interface{})
		if err != nil || !ok || len(parts) != 2 {
			continue
		}
		return fmt.Sprintf("%v:%v", parts[0], parts[1])
	}
	t.Fatalf("no sentinel names the primary of %s", SentinelMaster)
	return ""
}

// Failover asks the first sentinel for a failover (SENTINEL FAILOVER) and waits until the
// sentinels name another primary, which it returns.
func (st *Sentinel) Failover(t testing.TB) string {
	t.Helper()
	before := st.Master(t)
	st.Sentinels[0].MustDo("SENTINEL", "FAILOVER", SentinelMaster)
	return st.WaitMaster(t, before)
}

// WaitMaster waits until the sentinels name a primary other than old and that primary
// answers as one, and returns it.
func (st *Sentinel) WaitMaster(t testing.TB, old string) string {
	t.Helper()
	var now string
	waitSentinel(t, "a primary other than "+old, func() bool {
		now = st.Master(t)
		if now == old {
			return false
		}
		s := st.server(now)
		return s != nil && strings.Contains(info(s, "replication"), "role:master")
	})
	return now
}

// server is the primary or replica listening at addr, or nil.
func (st *Sentinel) server(addr string) *Server {
	for _, s := range append([]*Server{st.Primary}, st.Replicas...) {
		if s.Addr == addr {
			return s
		}
	}
	return nil
}

// Server is the primary or replica listening at addr; it fails the test if there is none.
func (st *Sentinel) Server(t testing.TB, addr string) *Server {
	t.Helper()
	s := st.server(addr)
	if s == nil {
		t.Fatalf("no server of the setup listens at %s", addr)
	}
	return s
}

// info is a section of s's INFO, or "" when s does not answer.
func info(s *Server, section string) string {
	reply, err := s.Do("INFO", section)
	if err != nil {
		return ""
	}
	text, _ := reply.(string)
	return text
}

// count is how many replicas (what "REPLICAS") or other sentinels ("SENTINELS") the
// sentinel s knows of, none of them down.
func count(s *Server, what string) int {
	reply, err := s.Do("SENTINEL", what, SentinelMaster)
	list, ok := reply.([]interface{})
	if err != nil || !ok {
		return -1
	}
	n := 0
	for _, item := range list {
		fields, _ := item.([]interface{})
		for i := 0; i+1 < len(fields); i += 2 {
			if fields[i] == "flags" && !strings.Contains(fmt.Sprint(fields[i+1]), "down") && !strings.Contains(fmt.Sprint(fields[i+1]), "disconnected") {
				n++
			}
		}
	}
	return n
}

// waitSentinel waits until ready holds, failing the test after sentinelWait.
func waitSentinel(t testing.TB, what string, ready func() bool) {
	t.Helper()
	deadline := time.Now().Add(sentinelWait)
	for !ready() {
		if time.Now().After(deadline) {
			t.Fatalf("hangs: no %s within %v", what, sentinelWait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
