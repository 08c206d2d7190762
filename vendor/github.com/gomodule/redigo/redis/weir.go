package redis

import (
	"io"
	"reflect"
	"strconv"
	"time"
)

// Weir: the read path of a shared cache, written for an interpreter (Yaegi), where every
// call and every expression costs microseconds: one function takes an idle connection,
// writes one command already in RESP form, reads its bulk string reply, and puts the
// connection back, without the layers of GetContext, activeConn, DoWithTimeout and
// readReply. Whatever it cannot do this way it declines, for the caller to go through
// GetContext.

// Outcomes of DoBulk besides a reply.
const (
	// BulkDone: the reply (nil for a nil bulk string) or an error reply (Error) was read;
	// the connection went back to the pool.
	BulkDone = 0
	// BulkDeclined: nothing was sent; send the command through GetContext.
	BulkDeclined = 1
	// BulkBroken: the connection failed (err says how) and was closed.
	BulkBroken = 2
)

// DoBulk sends req, one command written out in RESP whose reply is a bulk string (GET), on
// the connection at the front of p's idle list, with deadline for its write and its reply.
// It declines (BulkDeclined) when p has no slot free at once (MaxActive, with Wait), has
// no idle connection, or needs what only GetContext does: a pool without Wait and
// MaxActive, TestOnBorrow, MaxConnLifetime, an idle connection past IdleTimeout (which
// GetContext prunes), a connection not made by NewConn or Dial, or a closed pool. now is
// the time the connection is put back at, for IdleTimeout.
//
// A reply other than a bulk string is an error: an error reply returns as Error (the
// connection is fine), anything else breaks the connection.
func DoBulk(p *Pool, req string, now, deadline time.Time) ([]byte, int, error) {
	if !p.Wait || p.MaxActive <= 0 || p.TestOnBorrow != nil || p.TestOnBorrowContext != nil || p.MaxConnLifetime != 0 {
		return nil, BulkDeclined, nil
	}
	p.mu.Lock()
	pc := p.idle.front
	var c *conn
	if pc != nil && !p.closed && (p.IdleTimeout <= 0 || now.Sub(p.idle.back.t) < p.IdleTimeout) {
		c, _ = pc.c.(*conn)
	}
	if c == nil {
		p.mu.Unlock()
		return nil, BulkDeclined, nil
	}
	// A slot, as waitVacantConn takes one, without waiting. An idle connection was put
	// back after a GetContext, whose lazyInit made p.ch: read under p.mu, after that put,
	// without calling lazyInit, whose func literal passed to sync.Once costs an
	// interpreter a wrapper made on every call.
	// TryRecv, not a select statement with a default: Yaegi v0.16.1 shares a select's cases
	// between every goroutine running it, so a call could take another pool's slot.
	if _, ok := reflect.ValueOf(p.ch).TryRecv(); !ok {
		p.mu.Unlock()
		return nil, BulkDeclined, nil
	}
	p.idle.popFront()
	p.mu.Unlock()

	// The connection came back idle: nothing pending, nothing buffered (activeConn.Close).
	// One deadline for the write and the reply; every other use sets its own.
	err := c.conn.SetDeadline(deadline)
	if err == nil {
		_, err = io.WriteString(c.conn, req)
	}
	var line, reply []byte
	if err == nil {
		line, err = c.br.ReadSlice('\n')
	}
	// errReply: err is an error reply, read whole, after which the connection is fine. Not
	// a type assertion to Error: Yaegi matches a named string type with any other
	// (protocolError).
	errReply := false
	n := len(line) - 2
	switch {
	case err != nil:
	case n < 1:
		err = protocolError("short response line")
	case line[n] != '\r':
		err = protocolError("bad response line terminator")
	case line[0] == '-':
		err = Error(line[1:n])
		errReply = true
	case line[0] != '$':
		err = protocolError("unexpected response line")
	default:
		n, err = strconv.Atoi(string(line[1:n]))
		if err != nil || n < -1 {
			err = protocolError("malformed length")
		} else if n >= 0 {
			// The bulk string and its CRLF in one read.
			reply = make([]byte, n+2)
			_, err = io.ReadFull(c.br, reply)
			if err == nil && (reply[n] != '\r' || reply[n+1] != '\n') {
				err = protocolError("bad bulk string format")
			}
			reply = reply[:n:n]
		}
	}
	if err != nil && !errReply {
		c.fatal(err)
		p.put(pc, true)
		return nil, BulkBroken, err
	}
	// put, with the connection's last use at now.
	p.mu.Lock()
	if p.closed || p.idle.count >= p.MaxIdle {
		p.mu.Unlock()
		pc.c.Close()
		p.mu.Lock()
		p.active--
	} else {
		pc.t = now
		p.idle.pushFront(pc)
	}
	// Never more slots than MaxActive (see put).
	if !p.closed && len(p.ch) < cap(p.ch) {
		p.ch <- struct{}{}
	}
	p.mu.Unlock()
	return reply, BulkDone, err
}
