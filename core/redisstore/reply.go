package redisstore

import (
	"time"

	"github.com/gomodule/redigo/redis"
)

// do sends one command on c, waiting at most timeout for the reply, and returns the reply
// the same way compiled and interpreted (see statusReply).
func do(c redis.Conn, timeout time.Duration, cmd string, args ...interface{}) (interface{}, error) {
	return statusReply(redis.DoWithTimeout(c, timeout, cmd, args...))
}

// sendOn sends cmd with args on c, and then next when it is not nil (doThen), puts c back
// (Close), and reports whether c broke on the way.
func sendOn(c redis.Conn, timeout time.Duration, cmd string, args, next []interface{}) (reply interface{}, broken bool, err error) {
	if next == nil {
		reply, err = do(c, timeout, cmd, args...)
	} else {
		reply, err = doThen(c, timeout, cmd, args, next)
	}
	broken = c.Err() != nil
	c.Close()
	return reply, broken, err
}

// doThen sends cmd and then next (a command name, then its arguments) on c in one round
// trip, and returns next's reply as do returns one, or the error reply to cmd if it failed.
// Each reply is received on its own, through statusReply: redigo's Do, reading several, keeps
// the first error reply as its error, which under Yaegi is the first status reply.
func doThen(c redis.Conn, timeout time.Duration, cmd string, args []interface{}, next []interface{}) (interface{}, error) {
	nextCmd, _ := next[0].(string)
	if err := c.Send(cmd, args...); err != nil {
		return nil, err
	}
	if err := c.Send(nextCmd, next[1:]...); err != nil {
		return nil, err
	}
	if err := c.Flush(); err != nil {
		return nil, err
	}
	// Both replies are read, whatever the first: the connection goes back to the pool.
	_, err := statusReply(redis.ReceiveWithTimeout(c, timeout))
	reply, nextErr := statusReply(redis.ReceiveWithTimeout(c, timeout))
	if err != nil {
		return nil, err
	}
	return reply, nextErr
}

// statusReply makes a status reply a reply, not an error, under Yaegi as compiled.
//
// redigo reads a "+OK" status line into the string "OK" and an "-ERR ..." line into
// redis.Error, a named string type, and Do returns a redis.Error reply as its error. Yaegi,
// which runs this code in Traefik, cannot tell a named string type from string: a type
// assertion to either matches both. So interpreted, Do returns every status reply as an
// error (SET gives err "OK"), and a type switch takes an error reply for a string.
//
// Once redigo has parsed a reply, only its text tells the two apart. The status replies of
// the commands this store sends are OK (SET, AUTH, SELECT), PONG (PING) and QUEUED (a
// command inside MULTI), and no Redis error reply reads as one of those words: error replies
// start with a code such as ERR, WRONGTYPE or NOAUTH followed by a message. So an error whose
// text is exactly one of them is that status reply, whichever way the code runs; anything
// else stays an error. For the same reason this package never type-asserts redis.Error, and
// sends no command whose array reply can nest status or error replies (EXEC, pipelines): the
// scripts of purge.go return integers and bulk strings only.
//
// On an error reply redigo returns the redis.Error as the reply too; statusReply returns a
// nil reply with any error.
func statusReply(reply interface{}, err error) (interface{}, error) {
	if err != nil {
		switch msg := err.Error(); msg {
		case "OK", "PONG", "QUEUED":
			return msg, nil
		}
		return nil, err
	}
	return reply, nil
}
