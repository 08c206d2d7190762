package redisstore

import (
	"errors"
	"testing"

	"github.com/gomodule/redigo/redis"
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
