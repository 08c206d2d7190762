package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// sentinelMaster is the name the sentinels of StartRedisSentinel monitor the primary by.
const sentinelMaster = "weirmaster"

// sentinelReadyWithin bounds the wait for replicas to be in sync and sentinels to know each
// other, and for a failover.
const sentinelReadyWithin = 30 * time.Second

// RedisSentinel is a primary, its replicas and the redis-server --sentinel processes that
// monitor them (quorum 1, a primary silent for 500ms is down, a failover given 2s).
type RedisSentinel struct {
	Primary   *Redis
	Replicas  []*Redis
	Sentinels []*Redis
}

// StartRedisSentinel starts a primary, replicas replicating it and sentinels monitoring it
// in directories under dir, and returns once the replicas are in sync and every sentinel
// knows the replicas and the other sentinels.
func StartRedisSentinel(binary, dir string, replicas, sentinels int) (*RedisSentinel, error) {
	s := &RedisSentinel{}
	start := func(name string, opts RedisOptions) (*Redis, error) {
		opts.Binary = binary
		opts.Dir = filepath.Join(dir, name)
		if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
			return nil, err
		}
		return StartRedis(opts)
	}
	var err error
	if s.Primary, err = start("primary", RedisOptions{}); err != nil {
		return nil, fmt.Errorf("start redis sentinel: %w", err)
	}
	port := strconv.Itoa(s.Primary.Port)
	for i := 0; i < replicas; i++ {
		r, err := start("replica"+strconv.Itoa(i), RedisOptions{Args: []string{"--replicaof", "127.0.0.1", port}})
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("start redis sentinel: %w", err)
		}
		s.Replicas = append(s.Replicas, r)
	}
	for i := 0; i < sentinels; i++ {
		name := "sentinel" + strconv.Itoa(i)
		conf := filepath.Join(dir, name+".conf")
		text := fmt.Sprintf("sentinel monitor %s 127.0.0.1 %s 1\n"+
			"sentinel down-after-milliseconds %[1]s 500\n"+
			"sentinel failover-timeout %[1]s 2000\n", sentinelMaster, port)
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			s.Close()
			return nil, fmt.Errorf("start redis sentinel: %w", err)
		}
		r, err := start(name, RedisOptions{ConfigFile: conf, Args: []string{"--sentinel"}})
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("start redis sentinel: %w", err)
		}
		s.Sentinels = append(s.Sentinels, r)
	}
	ready := func() bool {
		for _, r := range s.Replicas {
			info, err := r.Do("INFO", "replication")
			if err != nil || !strings.Contains(info, "master_link_status:up") {
				return false
			}
		}
		for _, r := range s.Sentinels {
			info, err := r.Do("SENTINEL", "MASTER", sentinelMaster)
			if err != nil || !strings.Contains(info, "num-slaves\n"+strconv.Itoa(replicas)+"\n") ||
				!strings.Contains(info, "num-other-sentinels\n"+strconv.Itoa(sentinels-1)+"\n") {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(sentinelReadyWithin)
	for !ready() {
		if time.Now().After(deadline) {
			s.Close()
			return nil, fmt.Errorf("redis sentinel setup not ready within %v", sentinelReadyWithin)
		}
		time.Sleep(pollEvery)
	}
	return s, nil
}

// URL is the store.url naming the setup by its sentinels.
func (s *RedisSentinel) URL() string {
	return "redis-sentinel://" + strings.Join(addrsOf(s.Sentinels), ",") + "/" + sentinelMaster
}

// Master is the primary's address as the first sentinel answering names it, or "".
func (s *RedisSentinel) Master() string {
	for _, r := range s.Sentinels {
		reply, err := r.Do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", sentinelMaster)
		if parts := strings.Split(reply, "\n"); err == nil && len(parts) == 2 {
			return parts[0] + ":" + parts[1]
		}
	}
	return ""
}

// Nodes are the primary, the replicas, then the sentinels.
func (s *RedisSentinel) Nodes() []*Redis {
	var nodes []*Redis
	if s.Primary != nil {
		nodes = append(nodes, s.Primary)
	}
	return append(append(nodes, s.Replicas...), s.Sentinels...)
}

// Close kills every process.
func (s *RedisSentinel) Close() error { return closeAll(s.Nodes()) }

// LogTail is the last n lines of every process's log.
func (s *RedisSentinel) LogTail(n int) string { return logTails(s.Nodes(), n) }
