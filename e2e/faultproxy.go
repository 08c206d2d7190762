package e2e

import (
	"fmt"
	"math/rand"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// FaultMode is what a FaultProxy does to the calls passing through it.
type FaultMode int

// Fault modes.
const (
	// FaultPass forwards every call untouched.
	FaultPass FaultMode = iota
	// FaultDelay holds every call for the proxy's delay before forwarding it.
	FaultDelay
	// FaultFailHalf closes the connection instead of forwarding, for half the calls chosen
	// at random: the client sees its call fail and its connection broken.
	FaultFailHalf
	// FaultFailAll closes the connection instead of forwarding, for every call: the server
	// is reachable but never gets a command.
	FaultFailAll
)

func (m FaultMode) String() string {
	switch m {
	case FaultPass:
		return "pass"
	case FaultDelay:
		return "delay"
	case FaultFailHalf:
		return "fail-half"
	case FaultFailAll:
		return "fail-all"
	}
	return fmt.Sprintf("FaultMode(%d)", int(m))
}

// proxyDialTimeout bounds the proxy's connection to its target.
const proxyDialTimeout = 2 * time.Second

// FaultStats counts what a FaultProxy did since it started.
type FaultStats struct {
	// Connections accepted from clients.
	Connections int64
	// Calls are the chunks clients sent, each read in one go: for a request-reply protocol
	// such as Redis's, one command each.
	Calls int64
	// Delayed calls were held before being forwarded (FaultDelay).
	Delayed int64
	// Failed calls were answered by closing the connection (FaultFailHalf, FaultFailAll, or
	// a target that refused the proxy's connection).
	Failed int64
}

func (s FaultStats) String() string {
	return fmt.Sprintf("%d connections, %d calls, %d delayed, %d failed", s.Connections, s.Calls, s.Delayed, s.Failed)
}

// FaultProxy is a TCP proxy on 127.0.0.1 in front of a server (a Redis) that can slow down
// or break the calls passing through it, so a test can see what its client does with a
// store that is slow or flaky without the store itself misbehaving.
//
// A call is a chunk the client sends in one write: it suits request-reply protocols whose
// requests are small, as Weir's GET, SET and DEL are.
type FaultProxy struct {
	// Addr is the proxy's host:port, where clients connect.
	Addr string

	target string
	ln     net.Listener

	connections, calls, delayed, failed int64

	// mu guards the mode, the random source and the open connections.
	mu     sync.Mutex
	mode   FaultMode
	delay  time.Duration
	rnd    *rand.Rand
	conns  map[net.Conn]bool
	closed bool

	wg sync.WaitGroup
}

// NewFaultProxy listens on a free 127.0.0.1 port and forwards to target (host:port), in
// FaultPass mode.
func NewFaultProxy(target string) (*FaultProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fault proxy: %w", err)
	}
	p := &FaultProxy{
		Addr:   ln.Addr().String(),
		target: target,
		ln:     ln,
		rnd:    rand.New(rand.NewSource(1)),
		conns:  make(map[net.Conn]bool),
	}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// URL is a redis:// URL for database db through the proxy.
func (p *FaultProxy) URL(db int) string { return fmt.Sprintf("redis://%s/%d", p.Addr, db) }

// SetMode changes what the proxy does to the calls that arrive from now on; delay is used
// by FaultDelay only. Connections stay open across a change.
func (p *FaultProxy) SetMode(mode FaultMode, delay time.Duration) {
	p.mu.Lock()
	p.mode = mode
	p.delay = delay
	p.mu.Unlock()
}

// Stats counts what the proxy did so far.
func (p *FaultProxy) Stats() FaultStats {
	return FaultStats{
		Connections: atomic.LoadInt64(&p.connections),
		Calls:       atomic.LoadInt64(&p.calls),
		Delayed:     atomic.LoadInt64(&p.delayed),
		Failed:      atomic.LoadInt64(&p.failed),
	}
}

// Close stops listening, closes every connection and waits for the proxy's goroutines.
func (p *FaultProxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *FaultProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		atomic.AddInt64(&p.connections, 1)
		if !p.track(c) {
			c.Close()
			return
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

// track registers c so Close can end it; false once the proxy is closed.
func (p *FaultProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = true
	return true
}

func (p *FaultProxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

// serve relays one client connection: replies are copied back untouched, calls pass
// through decide.
func (p *FaultProxy) serve(client net.Conn) {
	defer p.wg.Done()
	defer p.untrack(client)
	server, err := net.DialTimeout("tcp", p.target, proxyDialTimeout)
	if err != nil {
		// The target is down: the client's first call fails as on a refused connection.
		atomic.AddInt64(&p.failed, 1)
		return
	}
	if !p.track(server) {
		server.Close()
		return
	}
	defer p.untrack(server)

	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		buf := make([]byte, 32<<10)
		for {
			n, err := server.Read(buf)
			if n > 0 {
				if _, werr := client.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		// Either side gone ends both.
		client.Close()
		server.Close()
	}()

	buf := make([]byte, 32<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			atomic.AddInt64(&p.calls, 1)
			mode, delay, fail := p.decide()
			if fail {
				atomic.AddInt64(&p.failed, 1)
				return
			}
			if mode == FaultDelay && delay > 0 {
				atomic.AddInt64(&p.delayed, 1)
				time.Sleep(delay)
			}
			if _, werr := server.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// decide reads the mode for one call and whether to fail it; in FaultFailHalf it tosses
// a coin.
func (p *FaultProxy) decide() (mode FaultMode, delay time.Duration, fail bool) {
	p.mu.Lock()
	mode, delay = p.mode, p.delay
	switch mode {
	case FaultFailHalf:
		fail = p.rnd.Intn(2) == 0
	case FaultFailAll:
		fail = true
	}
	p.mu.Unlock()
	return mode, delay, fail
}
