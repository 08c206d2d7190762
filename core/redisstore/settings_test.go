package redisstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseURL(t *testing.T) {
	tests := []struct {
		desc     string
		url      string
		addr     string
		user     string
		password string
		db       int
		tls      bool
	}{
		{desc: "host only", url: "redis://cache", addr: "cache:6379"},
		{desc: "host and port", url: "redis://127.0.0.1:7000", addr: "127.0.0.1:7000"},
		{desc: "IPv6", url: "redis://[::1]:7000/", addr: "[::1]:7000"},
		{desc: "password", url: "redis://:p%40ss@cache", addr: "cache:6379", password: "p@ss"},
		{desc: "user and password", url: "redis://alice:pw@cache", addr: "cache:6379", user: "alice", password: "pw"},
		{desc: "database", url: "redis://cache/2", addr: "cache:6379", db: 2},
		{desc: "TLS", url: "rediss://cache:6380/1?serverName=redis.internal", addr: "cache:6380", db: 1, tls: true},
		{desc: "scheme in capitals", url: "REDIS://cache", addr: "cache:6379"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			srv, err := parseURL(tc.url)
			if err != nil {
				t.Fatalf("parseURL(%q): %v", tc.url, err)
			}
			if srv.addr != tc.addr || srv.user != tc.user || srv.password != tc.password || srv.db != tc.db || (srv.tls != nil) != tc.tls {
				t.Errorf("parseURL(%q) = %s %q %q db %d TLS %v; want %s %q %q db %d TLS %v", tc.url,
					srv.addr, srv.user, srv.password, srv.db, srv.tls != nil, tc.addr, tc.user, tc.password, tc.db, tc.tls)
			}
		})
	}
}

func TestParseURLTLSOptions(t *testing.T) {
	srv, err := parseURL("rediss://10.0.0.1:6380?serverName=redis.internal&insecureSkipVerify=true")
	if err != nil {
		t.Fatalf("parseURL: %v", err)
	}
	if srv.tls.ServerName != "redis.internal" || !srv.tls.InsecureSkipVerify {
		t.Errorf("TLS config = server name %q, skip verify %v; want redis.internal, true", srv.tls.ServerName, srv.tls.InsecureSkipVerify)
	}
	srv, err = parseURL("rediss://cache")
	if err != nil {
		t.Fatalf("parseURL: %v", err)
	}
	if srv.tls.ServerName != "cache" || srv.tls.InsecureSkipVerify || srv.tls.RootCAs != nil {
		t.Errorf("default TLS config = %q, %v, %v; want the host, verified against the system's roots", srv.tls.ServerName, srv.tls.InsecureSkipVerify, srv.tls.RootCAs)
	}
}

func TestSettingsErrors(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		desc string
		s    Settings
		want string
	}{
		{desc: "empty URL", s: Settings{}, want: `store.url: "": scheme must be redis, rediss, redis-cluster, rediss-cluster, redis-sentinel or rediss-sentinel`},
		{desc: "wrong scheme", s: Settings{URL: "ftp://x"}, want: `store.url: "ftp://x": scheme must be redis, rediss, redis-cluster, rediss-cluster, redis-sentinel or rediss-sentinel`},
		{desc: "no host", s: Settings{URL: "redis:///2"}, want: `store.url: "redis:///2": needs a host, as in redis://host:6379`},
		{desc: "opaque", s: Settings{URL: "redis:cache"}, want: `store.url: "redis:cache": needs a host, as in redis://host:6379`},
		{desc: "bad port", s: Settings{URL: "redis://cache:99999"}, want: `store.url: "redis://cache:99999": port "99999" out of range`},
		{desc: "bad database", s: Settings{URL: "redis://cache/x"}, want: `store.url: "redis://cache/x": database "/x" must be a number, as in /2`},
		{desc: "negative database", s: Settings{URL: "redis://cache/-1"}, want: `store.url: "redis://cache/-1": database "/-1" must be a number, as in /2`},
		{desc: "user without password", s: Settings{URL: "redis://alice@cache"}, want: `store.url: "redis://alice@cache": user "alice" needs a password`},
		{desc: "sentinel without a master name", s: Settings{URL: "redis-sentinel://s1,s2:26380"}, want: `store.url: "redis-sentinel://s1,s2:26380": needs the name the sentinels monitor the primary by, as in redis-sentinel://host:26379/mymaster`},
		{desc: "sentinel password redacted", s: Settings{URL: "redis-sentinel://:secret@s1/m/x?sentinelPassword=other"}, want: `store.url: "redis-sentinel://:xxxxx@s1/m/x?sentinelPassword=xxxxx": database "/x" must be a number, as in /m/2`},
		{desc: "password redacted", s: Settings{URL: "redis://:secret@cache/x"}, want: `store.url: "redis://:xxxxx@cache/x": database "/x" must be a number, as in /2`},
		{desc: "not a URL", s: Settings{URL: "redis://:secret@cache:port:x"}, want: `store.url: not a URL: invalid port ":x" after host`},
		{desc: "TLS option without TLS", s: Settings{URL: "redis://cache?insecureSkipVerify=true"}, want: `store.url: "redis://cache?insecureSkipVerify=true": option insecureSkipVerify needs the rediss, rediss-cluster or rediss-sentinel scheme`},
		{desc: "unknown option", s: Settings{URL: "rediss://cache?verify=no"}, want: `store.url: "rediss://cache?verify=no": unknown option verify (want caFile, serverName or insecureSkipVerify)`},
		{desc: "bad bool", s: Settings{URL: "rediss://cache?insecureSkipVerify=maybe"}, want: `store.url: "rediss://cache?insecureSkipVerify=maybe": insecureSkipVerify "maybe" must be true or false`},
		{desc: "missing CA file", s: Settings{URL: "rediss://cache?caFile=" + filepath.Join(dir, "none.pem")}, want: "no such file"},
		{desc: "CA file without PEM", s: Settings{URL: "rediss://cache?caFile=" + notPEM}, want: "caFile: no PEM certificate in " + notPEM},
		{desc: "negative size", s: Settings{URL: "redis://cache", MaxEntrySize: -1}, want: "store.maxEntrySize: -1: must not be negative"},
		{desc: "negative pool size", s: Settings{URL: "redis://cache", MaxActive: -2}, want: "store.maxActive: -2: must not be negative"},
		{desc: "negative timeout", s: Settings{URL: "redis://cache", Timeout: -time.Second}, want: "store.timeout: -1s: must not be negative"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			st, err := New(tc.s)
			if err == nil {
				st.Close()
				t.Fatalf("New(%+v) succeeded, want an error", tc.s)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New error = %q, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("New error %q shows the password", err)
			}
		})
	}
}

func TestSettingsDefaults(t *testing.T) {
	s, err := Settings{URL: "redis://cache"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if s.KeyPrefix != DefaultKeyPrefix || s.MaxEntrySize != DefaultMaxEntrySize || s.MaxIdle != DefaultMaxIdle ||
		s.MaxActive != DefaultMaxActive || s.IdleTimeout != DefaultIdleTimeout || s.Timeout != DefaultTimeout || s.Now == nil {
		t.Errorf("withDefaults() = %+v", s)
	}
}
