// Package redistest starts throwaway redis-server processes for Weir's tests, on free
// loopback ports (never the machine's own Redis on 6379), and talks to them with a minimal
// RESP client, so that tests can check what a store wrote without trusting the store's own
// client. Standard library only: the tests run interpreted too.
package redistest

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/wait"
)

// SkipEnv names the environment variable that, set to 1, skips tests needing redis-server
// on machines without it instead of failing them.
const SkipEnv = "WEIR_SKIP_REDIS"

// startWait bounds how long a starting server may take to answer PING.
const startWait = 10 * time.Second

// Config says how to start a server.
type Config struct {
	// Args are extra redis-server arguments, e.g. "--requirepass", "secret".
	Args []string
	// User and Password, when Password is set, authenticate the helper's own connections
	// (Do and the start-up PING). User empty: the default user.
	User, Password string
	// TLS serves RESP over TLS only, with a self-signed certificate made for the test; the
	// server's plain port is closed.
	TLS bool
	// ConfigText, when set, is written to redis.conf in the server's directory and given to
	// redis-server as its configuration file (a sentinel's must be a file it can rewrite).
	ConfigText string
}

// Server is a running redis-server.
type Server struct {
	// Addr is host:port of the server.
	Addr string
	// Port is the port alone.
	Port int
	// CAFile is the PEM certificate that signed the server's (TLS only).
	CAFile string

	t    testing.TB
	args []string
	cfg  Config
	dir  string
	tls  *tls.Config

	// mu guards proc.
	mu   sync.Mutex
	proc *os.Process
}

// Start starts a redis-server for the test and stops it when the test ends. It fails the
// test when redis-server is missing, unless WEIR_SKIP_REDIS=1, when it skips it.
func Start(t testing.TB, cfg Config) *Server {
	t.Helper()
	bin, err := lookPath("redis-server")
	if err != nil {
		if os.Getenv(SkipEnv) == "1" {
			t.Skipf("redis-server not found; skipped because %s=1", SkipEnv)
		}
		t.Fatalf("redis-server not found in PATH (install Debian's redis-server package, or set %s=1 to skip these tests): %v", SkipEnv, err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	s := &Server{
		Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Port: port,
		t:    t,
		cfg:  cfg,
		dir:  t.TempDir(),
	}
	s.args = []string{"--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", s.dir, "--daemonize", "no"}
	if cfg.TLS {
		certFile, keyFile, err := writeCert(s.dir)
		if err != nil {
			t.Fatalf("making a TLS certificate: %v", err)
		}
		s.CAFile = certFile
		s.tls, err = clientTLS(certFile)
		if err != nil {
			t.Fatalf("loading the TLS certificate: %v", err)
		}
		s.args = append(s.args, "--port", "0", "--tls-port", strconv.Itoa(port),
			"--tls-cert-file", certFile, "--tls-key-file", keyFile, "--tls-ca-cert-file", certFile,
			"--tls-auth-clients", "no")
	} else {
		s.args = append(s.args, "--port", strconv.Itoa(port))
	}
	s.args = append(s.args, cfg.Args...)
	if cfg.ConfigText != "" {
		conf := filepath.Join(s.dir, "redis.conf")
		if err := os.WriteFile(conf, []byte(cfg.ConfigText), 0o600); err != nil {
			t.Fatalf("writing the redis-server configuration: %v", err)
		}
		// The file comes first, before the options.
		s.args = append([]string{conf}, s.args...)
	}
	s.args = append([]string{bin}, s.args...)
	s.start()
	t.Cleanup(s.Stop)
	return s
}

// freePort asks the kernel for a free loopback port. Another process may take it before the
// server binds it; that shows as a server that does not start.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	return port, l.Close()
}

// lookPath finds an executable in PATH. (os/exec is not available to interpreted tests.)
func lookPath(name string) (string, error) {
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New(name + ": executable file not found in $PATH")
}

func (s *Server) start() {
	s.t.Helper()
	logPath := filepath.Join(s.dir, "redis.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		s.t.Fatalf("opening the redis-server log: %v", err)
	}
	proc, err := os.StartProcess(s.args[0], s.args, &os.ProcAttr{Files: []*os.File{nil, logFile, logFile}})
	logFile.Close()
	if err != nil {
		s.t.Fatalf("starting redis-server: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		defer func() { recover() }()
		proc.Wait()
		close(exited)
	}()
	s.mu.Lock()
	s.proc = proc
	s.mu.Unlock()

	deadline := time.Now().Add(startWait)
	for {
		reply, err := s.Do("PING")
		if err == nil && reply == "PONG" {
			return
		}
		// wait.Ready, not a select statement: Yaegi v0.16.1 shares a select's cases between
		// every goroutine running it (docs/yaegi.md), and servers start in parallel.
		if wait.Ready(exited) {
			s.t.Fatalf("redis-server exited at start: %s", readLog(logPath))
		}
		if time.Now().After(deadline) {
			s.Stop()
			s.t.Fatalf("redis-server on %s did not answer PING within %v (last: %v, %v): %s", s.Addr, startWait, reply, err, readLog(logPath))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func readLog(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// Stop kills the server and waits until its port is closed. Stopping a stopped server does
// nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	proc := s.proc
	s.proc = nil
	s.mu.Unlock()
	if proc == nil {
		return
	}
	proc.Kill()
	// start's goroutine reaps the process.
	deadline := time.Now().Add(startWait)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", s.Addr, 100*time.Millisecond)
		if err != nil {
			return
		}
		c.Close()
		time.Sleep(5 * time.Millisecond)
	}
}

// Restart starts the server again on the same port, empty.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.start()
}

// Error is an error reply from the server. Tell it apart with a type assertion: errors.As
// with an interpreted target type panics in Yaegi.
type Error struct {
	// Msg is the reply's text, e.g. "ERR unknown command".
	Msg string
}

func (e *Error) Error() string { return e.Msg }

// Do sends one command on a new connection (authenticated as Config says) and returns the
// reply: a string for status and bulk replies, an int64 for integers, nil for a nil reply,
// []interface{} for arrays, and an *Error for an error reply.
func (s *Server) Do(args ...string) (interface{}, error) {
	var c net.Conn
	var err error
	d := &net.Dialer{Timeout: time.Second}
	if s.tls != nil {
		c, err = tls.DialWithDialer(d, "tcp", s.Addr, s.tls)
	} else {
		c, err = d.Dial("tcp", s.Addr)
	}
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(c)
	if s.cfg.Password != "" {
		auth := []string{"AUTH", s.cfg.Password}
		if s.cfg.User != "" {
			auth = []string{"AUTH", s.cfg.User, s.cfg.Password}
		}
		if _, err := roundTrip(c, r, auth); err != nil {
			return nil, fmt.Errorf("AUTH: %w", err)
		}
	}
	return roundTrip(c, r, args)
}

// MustDo is Do that fails the test on an error.
func (s *Server) MustDo(args ...string) interface{} {
	s.t.Helper()
	reply, err := s.Do(args...)
	if err != nil {
		s.t.Fatalf("redis %q: %v", args, err)
	}
	return reply
}

func roundTrip(c net.Conn, r *bufio.Reader, args []string) (interface{}, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		return nil, err
	}
	return readReply(r)
}

func readReply(r *bufio.Reader) (interface{}, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || !strings.HasSuffix(line, "\r\n") {
		return nil, fmt.Errorf("bad reply line %q", line)
	}
	kind, text := line[0], line[1:len(line)-2]
	switch kind {
	case '+':
		return text, nil
	case '-':
		return nil, &Error{Msg: text}
	case ':':
		return strconv.ParseInt(text, 10, 64)
	case '$', '*':
		n, err := strconv.Atoi(text)
		if err != nil {
			return nil, err
		}
		if n < 0 {
			// The null bulk string or array.
			return nil, nil
		}
		if kind == '$' {
			buf := make([]byte, n+2)
			if _, err := io.ReadFull(r, buf); err != nil {
				return nil, err
			}
			return string(buf[:n]), nil
		}
		items := make([]interface{}, n)
		for i := range items {
			item, err := readReply(r)
			if e, ok := err.(*Error); ok {
				item = e
			} else if err != nil {
				return nil, err
			}
			items[i] = item
		}
		return items, nil
	}
	return nil, fmt.Errorf("bad reply line %q", line)
}
