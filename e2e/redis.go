package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Defaults for RedisOptions, applied in withDefaults.
const (
	// DefaultRedisStartTimeout bounds a start or restart: process up and answering PING.
	DefaultRedisStartTimeout = 10 * time.Second
	// redisStopGrace is how long redis-server gets after SIGTERM before it is killed.
	redisStopGrace = 5 * time.Second
	// redisCallTimeout bounds one command sent with Redis.Do.
	redisCallTimeout = 2 * time.Second
)

var errNoRedis = errors.New("no redis-server binary")

// FindRedis returns the redis-server the harness runs: $WEIR_REDIS when set, else
// redis-server on PATH (Debian's redis-server package puts it in /usr/bin).
func FindRedis() (string, error) {
	if p := os.Getenv("WEIR_REDIS"); p != "" {
		st, err := os.Stat(p)
		if err != nil {
			return "", fmt.Errorf("%w: WEIR_REDIS: %v", errNoRedis, err)
		}
		if st.IsDir() || st.Mode()&0o111 == 0 {
			return "", fmt.Errorf("%w: WEIR_REDIS: %s is not an executable file", errNoRedis, p)
		}
		return p, nil
	}
	p, err := exec.LookPath("redis-server")
	if err != nil {
		return "", fmt.Errorf("%w: %v (install Debian's redis-server package or set WEIR_REDIS)", errNoRedis, err)
	}
	return p, nil
}

// RedisOptions says which redis-server runs and where.
type RedisOptions struct {
	// Binary is the redis-server executable; "" means FindRedis.
	Binary string
	// Dir is the server's working directory, holding its log; "" means a fresh temporary
	// directory, removed by Close.
	Dir string
	// Port is the 127.0.0.1 port to listen on; 0 means a free one.
	Port int
	// StartTimeout bounds Start and Restart; 0 means DefaultRedisStartTimeout.
	StartTimeout time.Duration
	// Args are more redis-server arguments (a cluster node's).
	Args []string
	// ConfigFile, when set, is the configuration file redis-server is given before its
	// arguments (a sentinel's, which it rewrites).
	ConfigFile string
}

func (o RedisOptions) withDefaults() RedisOptions {
	if o.StartTimeout == 0 {
		o.StartTimeout = DefaultRedisStartTimeout
	}
	return o
}

// Redis is a redis-server process on 127.0.0.1 that keeps nothing on disk (--save ""
// --appendonly no), so a restart starts it empty, as a crashed cache server comes back. It
// can be killed and started again on the same port while clients keep its address.
type Redis struct {
	// Addr is host:port, the same across restarts.
	Addr string
	// Port is the port it listens on.
	Port int
	// LogPath is the server's log file, appended to by every start.
	LogPath string

	ropts  RedisOptions
	ownDir bool

	// mu guards the running process; Start, Kill, Restart and Close are meant to be called
	// from one goroutine, the lock only keeps Running honest for others.
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// StartRedis starts redis-server and returns once it answers PING.
func StartRedis(opts RedisOptions) (*Redis, error) {
	opts = opts.withDefaults()
	if opts.Binary == "" {
		p, err := FindRedis()
		if err != nil {
			return nil, err
		}
		opts.Binary = p
	}
	dir, ownDir, err := workDir(opts.Dir, "weir-redis-")
	if err != nil {
		return nil, fmt.Errorf("start redis: %w", err)
	}
	opts.Dir = dir
	if opts.Port == 0 {
		p, err := freePort()
		if err != nil {
			if ownDir {
				os.RemoveAll(opts.Dir)
			}
			return nil, fmt.Errorf("start redis: %w", err)
		}
		opts.Port = p
	}
	r := &Redis{
		Addr:    net.JoinHostPort("127.0.0.1", strconv.Itoa(opts.Port)),
		Port:    opts.Port,
		LogPath: filepath.Join(opts.Dir, "redis.log"),
		ropts:   opts,
		ownDir:  ownDir,
	}
	if err := r.start(); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// URL is the store.url operators write for database db of this server.
func (r *Redis) URL(db int) string { return fmt.Sprintf("redis://%s/%d", r.Addr, db) }

// Running reports whether the process is up (it may not answer yet while starting).
func (r *Redis) Running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runningLocked()
}

func (r *Redis) runningLocked() bool { return r.done != nil && !closed(r.done) }

// start runs the process and waits for PING.
func (r *Redis) start() error {
	r.mu.Lock()
	if r.runningLocked() {
		r.mu.Unlock()
		return fmt.Errorf("start redis on %s: already running", r.Addr)
	}
	out, err := os.OpenFile(r.LogPath+".out", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		r.mu.Unlock()
		return fmt.Errorf("start redis: %w", err)
	}
	args := []string{
		"--port", strconv.Itoa(r.Port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
		"--dir", r.ropts.Dir,
		"--logfile", r.LogPath,
	}
	if r.ropts.ConfigFile != "" {
		args = append([]string{r.ropts.ConfigFile}, args...)
	}
	cmd := exec.Command(r.ropts.Binary, append(args, r.ropts.Args...)...)
	cmd.Dir = r.ropts.Dir
	cmd.Stdout = out
	cmd.Stderr = out
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		out.Close()
		r.mu.Unlock()
		return fmt.Errorf("start redis: %w", err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		out.Close()
		close(done)
	}()
	r.cmd, r.done = cmd, done
	r.mu.Unlock()

	deadline := time.Now().Add(r.ropts.StartTimeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return fmt.Errorf("start redis on %s: exited: %v\n%s", r.Addr, cmd.ProcessState, r.LogTail(20))
		default:
		}
		reply, err := r.Do("PING")
		if err == nil && reply == "PONG" {
			return nil
		}
		last = err
		time.Sleep(pollEvery)
	}
	return fmt.Errorf("start redis on %s: %w waiting for PING: %v\n%s", r.Addr, errTimeout, last, r.LogTail(20))
}

// Kill ends the server with SIGKILL, as a crash would: clients' connections are reset and
// new ones refused until Restart. Killing a stopped server does nothing.
func (r *Redis) Kill() error { return r.stop(syscall.SIGKILL) }

// Stop ends the server with SIGTERM (SIGKILL after a grace period).
func (r *Redis) Stop() error { return r.stop(syscall.SIGTERM) }

func (r *Redis) stop(sig syscall.Signal) error {
	r.mu.Lock()
	cmd, done := r.cmd, r.done
	running := r.runningLocked()
	r.mu.Unlock()
	if !running {
		return nil
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
		return nil
	case <-time.After(redisStopGrace):
	}
	_ = cmd.Process.Kill()
	select {
	case <-done:
		return nil
	case <-time.After(redisStopGrace):
		return fmt.Errorf("stop redis: pid %d survives SIGKILL", cmd.Process.Pid)
	}
}

// Restart starts the server again on the same port, empty, after Kill or Stop; a running
// server is killed first.
func (r *Redis) Restart() error {
	if err := r.Kill(); err != nil {
		return err
	}
	// The port was ours a moment ago; redis-server binds with SO_REUSEADDR, so connections
	// left in TIME_WAIT do not keep it from listening again.
	return r.start()
}

// Close kills the server and removes its directory if StartRedis created it. Calling it
// again does nothing.
func (r *Redis) Close() error {
	err := r.Kill()
	if r.ownDir {
		os.RemoveAll(r.ropts.Dir)
		r.ownDir = false
	}
	return err
}

// LogTail is the last n lines of the server's log and of what it wrote to stdout and stderr.
func (r *Redis) LogTail(n int) string {
	var b strings.Builder
	for _, p := range []string{r.LogPath, r.LogPath + ".out"} {
		lines, err := readLines(p)
		if err != nil {
			continue
		}
		if len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		fmt.Fprintf(&b, "--- last %d lines of %s\n%s\n", len(lines), p, strings.Join(lines, "\n"))
	}
	return b.String()
}

// Do sends one command on a fresh connection and returns its reply as text: a status or
// bulk string as is, an integer in decimal, a nil bulk as "(nil)", an array's elements one a
// line. An error reply is returned as an error. It is for tests' checks (DBSIZE, KEYS,
// FLUSHALL), not for load.
func (r *Redis) Do(args ...string) (string, error) {
	return redisDo(r.Addr, args...)
}

func redisDo(addr string, args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, redisCallTimeout)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(redisCallTimeout))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(c, b.String()); err != nil {
		return "", err
	}
	return readRESP(bufio.NewReader(c))
}

// readRESP reads one reply of the Redis serialization protocol (RESP2).
func readRESP(br *bufio.Reader) (string, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", errors.New("redis: empty reply line")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", errors.New("redis: " + line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return "", fmt.Errorf("redis: bad bulk length %q", line)
		}
		if n < 0 {
			return "(nil)", nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(br, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return "", fmt.Errorf("redis: bad array length %q", line)
		}
		elems := make([]string, 0, n)
		for i := 0; i < n; i++ {
			e, err := readRESP(br)
			if err != nil {
				return "", err
			}
			elems = append(elems, e)
		}
		return strings.Join(elems, "\n"), nil
	}
	return "", fmt.Errorf("redis: unexpected reply %q", line)
}

// The setups of several servers (RedisCluster, RedisSentinel) act on all of them at once.

// addrsOf is the addresses of servers, in order.
func addrsOf(servers []*Redis) []string {
	addrs := make([]string, 0, len(servers))
	for _, r := range servers {
		addrs = append(addrs, r.Addr)
	}
	return addrs
}

// closeAll kills every one of servers and returns the first error.
func closeAll(servers []*Redis) error {
	var first error
	for _, r := range servers {
		if err := r.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// logTails is the last n lines of every one of servers' logs.
func logTails(servers []*Redis, n int) string {
	var b strings.Builder
	for _, r := range servers {
		b.WriteString(r.LogTail(n))
	}
	return b.String()
}
