package redisstore

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gomodule/redigo/redis"
	"github.com/weirproxy/weir/internal/redistest"
)

func TestStatusReply(t *testing.T) {
	errNet := errors.New("read tcp: connection reset by peer")
	tests := []struct {
		desc      string
		reply     interface{}
		err       error
		wantReply interface{}
		wantErr   string
	}{
		{desc: "status compiled", reply: "OK", wantReply: "OK"},
		{desc: "status interpreted", reply: redis.Error("OK"), err: redis.Error("OK"), wantReply: "OK"},
		{desc: "PONG interpreted", reply: redis.Error("PONG"), err: redis.Error("PONG"), wantReply: "PONG"},
		{desc: "QUEUED interpreted", reply: redis.Error("QUEUED"), err: redis.Error("QUEUED"), wantReply: "QUEUED"},
		{desc: "error reply", reply: redis.Error("ERR unknown command"), err: redis.Error("ERR unknown command"), wantErr: "ERR unknown command"},
		{desc: "error reply that mentions OK", reply: redis.Error("ERR OK"), err: redis.Error("ERR OK"), wantErr: "ERR OK"},
		{desc: "network error", err: errNet, wantErr: errNet.Error()},
		{desc: "bulk reply", reply: []byte("OK"), wantReply: []byte("OK")},
		{desc: "integer reply", reply: int64(1), wantReply: int64(1)},
		{desc: "nil reply", reply: nil, wantReply: nil},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			reply, err := statusReply(tc.reply, tc.err)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr || reply != nil {
					t.Fatalf("statusReply = %v, %v; want nil, %q", reply, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("statusReply error %v, want %v", err, tc.wantReply)
			}
			if b, ok := tc.wantReply.([]byte); ok {
				if got, ok := reply.([]byte); !ok || string(got) != string(b) {
					t.Fatalf("statusReply = %v, want %v", reply, tc.wantReply)
				}
				return
			}
			if reply != tc.wantReply {
				t.Fatalf("statusReply = %v (%T), want %v", reply, reply, tc.wantReply)
			}
		})
	}
}

// doThen returns the second command's reply, or the first's error reply, and reads both: the
// connection stays in step for the next command. Under Yaegi the first command's status
// reply ("OK") is an error to redigo, which doThen must not take for a failure.
func TestDoThen(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	st := newStore(t, Settings{URL: "redis://" + srv.Addr})
	c, err := st.pool.Load().(*redis.Pool).GetContext(testCtx(t))
	if err != nil {
		t.Fatalf("connection: %v", err)
	}
	defer c.Close()
	tests := []struct {
		desc      string
		cmd       string
		args      []interface{}
		next      []interface{}
		wantReply string
		wantErr   string
	}{
		{desc: "status then bulk", cmd: "SET", args: []interface{}{"k", "v"}, next: []interface{}{"GET", "k"}, wantReply: "v"},
		{desc: "status then status", cmd: "SET", args: []interface{}{"k", "v"}, next: []interface{}{"PING"}, wantReply: "PONG"},
		{desc: "error then status", cmd: "SET", args: []interface{}{"k"}, next: []interface{}{"PING"}, wantErr: "ERR wrong number of arguments for 'set' command"},
		{desc: "status then error", cmd: "SET", args: []interface{}{"k", "v"}, next: []interface{}{"LPUSH", "k", "x"}, wantErr: "WRONGTYPE Operation against a key holding the wrong kind of value"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			reply, err := doThen(c, callWait, tc.cmd, tc.args, tc.next)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Errorf("doThen = %v, %v; want error %q", reply, err, tc.wantErr)
				}
			} else if err != nil || fmt.Sprintf("%s", reply) != tc.wantReply {
				t.Errorf("doThen = %q, %v; want %q", reply, err, tc.wantReply)
			}
			if pong, err := do(c, callWait, "PING"); pong != "PONG" || err != nil {
				t.Errorf("PING after doThen = %v, %v; want PONG: the replies are out of step", pong, err)
			}
		})
	}
}
