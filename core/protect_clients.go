package core

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// Slow clients (clients.bodyIdle): a client that pauses its request body for longer loses
// its connection rather than hold an origin slot. The limit is on each pause, never on the
// whole body, so an upload that keeps moving is never cut however long it takes.
//
// It is not a read deadline on the connection: http.ResponseController cannot reach
// Traefik's connection, since Traefik v3.6 hands every router's handler a writer of its
// recovery middleware that has no Unwrap method (SetReadDeadline fails with "feature not
// supported"). So each read of the body runs on a goroutine of its own while the request's
// goroutine waits for it at most clients.bodyIdle; past that, the proxy's read fails, the
// proxy gives the origin up and returns, and the slot goes back. The client's connection is
// then taken over (Hijack, which also aborts the read still waiting on it) and closed; a
// connection that cannot be taken over (HTTP/2) has its answer aborted, which resets the
// stream.
//
// Only requests with a body are watched: every other request pays nothing for it.

// DefaultBodyIdle is clients.bodyIdle's default: the longest pause in a request body.
const DefaultBodyIdle = 60 * time.Second

// errBodyIdle is what the proxy reads from a body its client paused for too long.
var errBodyIdle = errors.New("weir: the client paused its request body longer than clients.bodyIdle")

// ClientSettings are clients.*. Zero fields are their defaults.
type ClientSettings struct {
	// BodyIdle is the longest pause in a request body. Zero: DefaultBodyIdle.
	BodyIdle time.Duration
}

// idleBody is a request body whose every read waits at most idle for the client.
type idleBody struct {
	body io.ReadCloser
	idle time.Duration
	// afterFunc arms the timer of a read (limit.Settings.AfterFunc in tests).
	afterFunc func(d time.Duration, f func()) (stop func() bool)
	// buf receives each read on its goroutine: never the caller's buffer, which the
	// caller may reuse once a read it gave up on returns.
	buf []byte
	// timedOut is 1 once the client paused for longer than idle: a read of it is still
	// under way, and no other read or Close may start. Atomic: the proxy reads the body on
	// its transport's goroutine, and the request's goroutine asks afterwards.
	timedOut int32
	counter  *int64
}

// readResult is one read of an idleBody's goroutine.
type readResult struct {
	n   int
	err error
}

// watchBody bounds the pauses in r's body by clients.bodyIdle and returns the watch, which
// says afterwards whether the client paused too long.
func watchBody(h *Handler, r *http.Request) *idleBody {
	b := &idleBody{body: r.Body, idle: h.s.Clients.BodyIdle, afterFunc: h.s.Limiter.AfterFunc,
		counter: &h.e.metrics.bodyIdle.N}
	if b.afterFunc == nil {
		b.afterFunc = realAfterFunc
	}
	r.Body = b
	return b
}

// realAfterFunc is time.AfterFunc as an afterFunc. A func literal in a variable: Yaegi
// v0.16.1 cannot hand a top-level function or a compiled method value on as a func value
// (docs/yaegi.md).
var realAfterFunc = func(d time.Duration, f func()) (stop func() bool) {
	t := time.AfterFunc(d, f)
	return func() bool { return t.Stop() }
}

// Read reads from the client on a goroutine of its own and waits for it at most idle. The
// wait is a plain receive from a channel both the read and the timer send to, not a
// select (docs/yaegi.md: a select was seen to take a case that was not ready).
func (b *idleBody) Read(p []byte) (int, error) {
	if atomic.LoadInt32(&b.timedOut) != 0 {
		return 0, errBodyIdle
	}
	if len(p) == 0 {
		return 0, nil
	}
	if cap(b.buf) < len(p) {
		b.buf = make([]byte, len(p))
	}
	buf := b.buf[:len(p)]
	res := &readResult{}
	ev := make(chan int, 2)
	go readBody(b.body, buf, res, ev)
	stop := b.afterFunc(b.idle, func() { ev <- 2 })
	if <-ev == 2 {
		atomic.StoreInt32(&b.timedOut, 1)
		atomic.AddInt64(b.counter, 1)
		return 0, errBodyIdle
	}
	stop()
	copy(p, buf[:res.n])
	return res.n, res.err
}

// readBody is one read of body into buf, reported on ev. A panic is the read's error: a
// panic in a goroutine would take Traefik down.
func readBody(body io.Reader, buf []byte, res *readResult, ev chan int) {
	defer func() {
		if p := recover(); p != nil {
			res.n = 0
			res.err = fmt.Errorf("weir: request body read panicked: %v", p)
			ev <- 1
		}
	}()
	n, err := body.Read(buf)
	res.n = n
	res.err = err
	ev <- 1
}

// Close closes the body, unless a read of it is still under way: the server's body waits
// for that read under its lock, and the request's goroutine must go on to cut the
// connection, which ends the read.
func (b *idleBody) Close() error {
	if bodyCut(b) {
		return nil
	}
	return b.body.Close()
}

// bodyCut tells whether b's client paused for longer than its idle; nil, no body watched,
// is false. A function, not a method: it is called with a nil b, and in Yaegi a function
// call costs a fraction of a method call (docs/yaegi.md).
func bodyCut(b *idleBody) bool {
	return b != nil && atomic.LoadInt32(&b.timedOut) != 0
}

// cutClient drops the connection of a client that paused its body too long: taken over and
// closed, or, where it cannot be taken over (HTTP/2), the answer aborted.
func cutClient(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	conn, _, err := rc.Hijack()
	if err != nil {
		abortAnswer()
		return
	}
	conn.Close()
}
