package redistest

import "testing"

func TestServer(t *testing.T) {
	tests := []struct {
		desc string
		cfg  Config
	}{
		{desc: "plain", cfg: Config{}},
		{desc: "password", cfg: Config{Args: []string{"--requirepass", "s3cret"}, Password: "s3cret"}},
		{desc: "TLS", cfg: Config{TLS: true}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			s := Start(t, tc.cfg)
			if s.Port == 6379 {
				t.Fatalf("started on the machine's Redis port")
			}
			if got := s.MustDo("SET", "k", "v\x00\r\n"); got != "OK" {
				t.Errorf("SET = %v, want OK", got)
			}
			if got := s.MustDo("GET", "k"); got != "v\x00\r\n" {
				t.Errorf("GET = %q, want %q", got, "v\x00\r\n")
			}
			if got := s.MustDo("GET", "missing"); got != nil {
				t.Errorf("GET missing = %v, want nil", got)
			}
			if got := s.MustDo("DBSIZE"); got != int64(1) {
				t.Errorf("DBSIZE = %v, want 1", got)
			}
			_, err := s.Do("NOSUCHCOMMAND")
			if _, ok := err.(*Error); !ok {
				t.Errorf("unknown command: err = %v, want an *Error", err)
			}
			s.Restart()
			if got := s.MustDo("DBSIZE"); got != int64(0) {
				t.Errorf("DBSIZE after restart = %v, want 0", got)
			}
			s.Stop()
			if _, err := s.Do("PING"); err == nil {
				t.Errorf("PING after Stop succeeded")
			}
		})
	}
}

func TestSentinel(t *testing.T) {
	st := StartSentinel(t, 1, 2)
	if got := st.Master(t); got != st.Primary.Addr {
		t.Fatalf("master = %s, want the primary %s", got, st.Primary.Addr)
	}
	st.Primary.MustDo("SET", "k", "v")
	now := st.Failover(t)
	if now != st.Replicas[0].Addr {
		t.Fatalf("master after a failover = %s, want the replica %s", now, st.Replicas[0].Addr)
	}
	if got := st.Replicas[0].MustDo("GET", "k"); got != "v" {
		t.Errorf("GET k on the new primary = %v, want v", got)
	}
}
