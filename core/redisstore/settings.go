package redisstore

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/weirproxy/weir/core/setting"
)

// Defaults for Settings.
const (
	DefaultKeyPrefix    = "weir:"
	DefaultMaxEntrySize = 2 << 20
	DefaultMaxIdle      = 8
	DefaultMaxActive    = 64
	DefaultIdleTimeout  = 5 * time.Minute
	DefaultTimeout      = time.Second
	defaultPort         = "6379"
	defaultSentinelPort = "26379"
)

// Settings configures a Store.
type Settings struct {
	// URL names the server: redis://[[user]:password@]host[:port][/db], or rediss://... to
	// speak TLS. Port defaults to 6379, db to 0. A user needs a password (Redis 6 ACL users);
	// a password alone authenticates as the default user. TLS takes these query options:
	// caFile=PATH trusts the PEM certificates in PATH instead of the system's roots,
	// serverName=NAME checks the certificate for NAME instead of the host, and
	// insecureSkipVerify=true checks no certificate at all (for tests only).
	// redis-cluster://[[user]:password@]host1[:port],host2[:port]/ (rediss-cluster:// for
	// TLS, each node's certificate checked for its own host unless serverName is given)
	// names a Redis Cluster by some of its nodes, from which the others are found
	// (cluster.go); a cluster has database 0 only.
	// redis-sentinel://[[user]:password@]sentinel1[:port],sentinel2[:port]/master[/db]
	// (rediss-sentinel:// for TLS to the sentinels and the data nodes) names the primary
	// that Redis Sentinel monitors as master, asked of the sentinels in turn and followed
	// through failovers (sentinel.go). Sentinel ports default to 26379; user and password
	// authenticate to the data nodes, the options sentinelUser and sentinelPassword to
	// the sentinels. Required.
	URL string
	// KeyPrefix is put before every cache key, so that Weir's keys keep apart from others in
	// the same database. Empty: DefaultKeyPrefix.
	KeyPrefix string
	// MaxEntrySize is the largest encoded entry stored, in bytes; Set refuses larger ones
	// with store.ErrTooLarge. Zero: DefaultMaxEntrySize (2 MiB).
	MaxEntrySize int
	// MaxIdle is how many idle connections are kept for reuse. Zero: DefaultMaxIdle.
	MaxIdle int
	// MaxActive bounds the connections open at once; a call beyond it waits for one to be
	// free, within its context's deadline. Zero: DefaultMaxActive.
	MaxActive int
	// IdleTimeout closes connections idle for longer. Zero: DefaultIdleTimeout.
	IdleTimeout time.Duration
	// Timeout bounds each call (a dial, a command's write, a command's reply) when the
	// caller's context allows longer or has no deadline; the engine's contexts usually carry
	// the tighter timeouts.store. Zero: DefaultTimeout.
	Timeout time.Duration
	// Now reads the clock, for entries' time to live. Nil: time.Now.
	Now func() time.Time
	// NearMaxSize is the byte budget of the near tier, copies of entries kept in this
	// process while the server tracks changes to them (near.go). Zero: no near tier; every
	// Get asks the server.
	NearMaxSize int64
	// OnNearChange, when set, is told when the near tier comes into use (live) and when it
	// stops (with the reason), once per change, on the tracking goroutine.
	OnNearChange func(live bool, err error)
	// OnInvalid, when set, is told of each stored entry that Get found invalid or malformed
	// (store.ErrInvalid, store.ErrMalformed), reported as a miss and deleted: once per
	// entry read, on the caller's goroutine. Entries of a newer layout
	// (store.ErrUnknownVersion) are misses left in place, counted by Unreadable only.
	OnInvalid func(key string, err error)
}

// withDefaults checks s and fills in the defaults. Errors name the field as operators write
// it, and its value.
func (s Settings) withDefaults() (Settings, error) {
	checks := []struct {
		ok    bool
		field string
		value interface{}
	}{
		{s.MaxEntrySize >= 0, "store.maxEntrySize", s.MaxEntrySize},
		{s.MaxIdle >= 0, "store.maxIdle", s.MaxIdle},
		{s.MaxActive >= 0, "store.maxActive", s.MaxActive},
		{s.IdleTimeout >= 0, "store.idleTimeout", s.IdleTimeout},
		{s.Timeout >= 0, "store.timeout", s.Timeout},
	}
	for _, c := range checks {
		if !c.ok {
			return s, fmt.Errorf("%s: %v: must not be negative", c.field, c.value)
		}
	}
	s.MaxEntrySize = setting.Int(s.MaxEntrySize, DefaultMaxEntrySize)
	s.MaxIdle = setting.Int(s.MaxIdle, DefaultMaxIdle)
	s.MaxActive = setting.Int(s.MaxActive, DefaultMaxActive)
	s.IdleTimeout = setting.Duration(s.IdleTimeout, DefaultIdleTimeout)
	s.Timeout = setting.Duration(s.Timeout, DefaultTimeout)
	if s.KeyPrefix == "" {
		s.KeyPrefix = DefaultKeyPrefix
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	return s, nil
}

// server is where and how to connect, parsed from Settings.URL.
type server struct {
	addr     string
	user     string
	password string
	db       int
	tls      *tls.Config // nil: plain TCP
	// cluster is set for a Redis Cluster, whose first known nodes are nodes (addr is the
	// first of them).
	cluster bool
	nodes   []string
	// sentinel is set for a primary found through Redis Sentinel: nodes are the sentinels,
	// master the name they monitor it by, and sentinelUser and sentinelPassword
	// authenticate to them.
	sentinel         bool
	master           string
	sentinelUser     string
	sentinelPassword string
	// serverName is set when the URL named the name to check certificates for; a cluster's
	// or a sentinel setup's nodes are checked for their own hosts otherwise.
	serverName bool
}

// URL schemes.
const (
	schemePlain       = "redis"
	schemeTLS         = "rediss"
	schemeCluster     = "redis-cluster"
	schemeClusterTLS  = "rediss-cluster"
	schemeSentinel    = "redis-sentinel"
	schemeSentinelTLS = "rediss-sentinel"
)

// clusterPlaceholder stands for a cluster's or sentinels' list of nodes while net/url parses the rest,
// since it refuses a host list ("[::1]:7000,[::1]:7001").
const clusterPlaceholder = "cluster.invalid"

// splitNodes takes the list of nodes out of a cluster URL: it returns the URL with
// clusterPlaceholder for them, and the list as written.
func splitNodes(raw string) (string, string) {
	i := strings.Index(raw, "://")
	if i < 0 {
		return raw, ""
	}
	rest := raw[i+3:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndexByte(rest[:end], '@') + 1
	return raw[:i+3] + rest[:at] + clusterPlaceholder + rest[end:], rest[at:end]
}

// parseURL reads Settings.URL. Errors show the URL with its password redacted.
func parseURL(raw string) (server, error) {
	var srv server
	nodes := ""
	lower := strings.ToLower(raw)
	for _, scheme := range []string{schemeCluster, schemeClusterTLS, schemeSentinel, schemeSentinelTLS} {
		if strings.HasPrefix(lower, scheme+"://") {
			raw, nodes = splitNodes(raw)
			break
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		if ue, ok := err.(*url.Error); ok {
			err = ue.Err // the whole error would repeat the URL, password and all
		}
		return srv, fmt.Errorf("store.url: not a URL: %w", err)
	}
	fail := func(format string, args ...interface{}) (server, error) {
		shown := strings.Replace(redacted(u), clusterPlaceholder, nodes, 1)
		return server{}, fmt.Errorf("store.url: %q: %s", shown, fmt.Sprintf(format, args...))
	}
	switch u.Scheme {
	case schemePlain, schemeTLS:
	case schemeCluster, schemeClusterTLS:
		srv.cluster = true
	case schemeSentinel, schemeSentinelTLS:
		srv.sentinel = true
	default:
		return fail("scheme must be redis, rediss, redis-cluster, rediss-cluster, redis-sentinel or rediss-sentinel")
	}
	many := srv.cluster || srv.sentinel
	port := defaultPort
	if srv.sentinel {
		port = defaultSentinelPort
	}
	if u.Opaque != "" || u.Hostname() == "" || (many && nodes == "") {
		return fail("needs a host, as in %s://host:%s", u.Scheme, port)
	}
	if !many {
		nodes = u.Host
	}
	for _, node := range strings.Split(nodes, ",") {
		addr, err := nodeAddr(node, port)
		if err != nil {
			return fail("%v", err)
		}
		srv.nodes = append(srv.nodes, addr)
	}
	if !many && len(srv.nodes) != 1 {
		return fail("one host only; a list of nodes takes the redis-cluster or redis-sentinel scheme")
	}
	if !srv.sentinel {
		srv.addr = srv.nodes[0]
	}

	if u.User != nil {
		srv.user = u.User.Username()
		srv.password, _ = u.User.Password()
		if srv.password == "" && srv.user != "" {
			return fail("user %q needs a password", srv.user)
		}
	}

	dbPath := u.Path
	if srv.sentinel {
		// /master[/db]
		name := strings.TrimPrefix(u.Path, "/")
		dbPath = ""
		if i := strings.IndexByte(name, '/'); i >= 0 {
			name, dbPath = name[:i], name[i:]
		}
		if name == "" {
			return fail("needs the name the sentinels monitor the primary by, as in %s://host:26379/mymaster", u.Scheme)
		}
		srv.master = name
	}
	switch dbPath {
	case "", "/":
	default:
		db, err := strconv.Atoi(dbPath[1:])
		if err != nil || db < 0 || dbPath[0] != '/' {
			if srv.sentinel {
				return fail("database %q must be a number, as in /%s/2", dbPath, srv.master)
			}
			return fail("database %q must be a number, as in /2", dbPath)
		}
		srv.db = db
	}
	if srv.cluster && srv.db != 0 {
		return fail("a cluster has database 0 only")
	}

	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return fail("query: %v", err)
	}
	var tlsConfig *tls.Config
	switch u.Scheme {
	case schemeTLS, schemeClusterTLS, schemeSentinelTLS:
		host, _, _ := net.SplitHostPort(srv.nodes[0])
		tlsConfig = &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	}
	for name, vs := range q {
		v := vs[len(vs)-1]
		switch name {
		case "sentinelUser", "sentinelPassword":
			if !srv.sentinel {
				return fail("option %s needs the redis-sentinel or rediss-sentinel scheme", name)
			}
			if name == "sentinelUser" {
				srv.sentinelUser = v
			} else {
				srv.sentinelPassword = v
			}
			continue
		}
		if tlsConfig == nil {
			return fail("option %s needs the rediss, rediss-cluster or rediss-sentinel scheme", name)
		}
		switch name {
		case "caFile":
			pool, err := loadCAs(v)
			if err != nil {
				return fail("caFile: %v", err)
			}
			tlsConfig.RootCAs = pool
		case "serverName":
			tlsConfig.ServerName = v
			srv.serverName = true
		case "insecureSkipVerify":
			skip, err := strconv.ParseBool(v)
			if err != nil {
				return fail("insecureSkipVerify %q must be true or false", v)
			}
			tlsConfig.InsecureSkipVerify = skip
		default:
			return fail("unknown option %s (want caFile, serverName or insecureSkipVerify)", name)
		}
	}
	if srv.sentinelUser != "" && srv.sentinelPassword == "" {
		return fail("sentinelUser %q needs a sentinelPassword", srv.sentinelUser)
	}
	srv.tls = tlsConfig
	return srv, nil
}

// redacted is u as errors show it: its password, and the sentinels' (the sentinelPassword
// option), replaced with xxxxx.
func redacted(u *url.URL) string {
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil || q.Get("sentinelPassword") == "" {
		return u.Redacted()
	}
	q.Set("sentinelPassword", "xxxxx")
	shown := *u
	shown.RawQuery = q.Encode()
	return shown.Redacted()
}

// nodeAddr reads one host[:port] of a URL into host:port, the port def when none is given.
func nodeAddr(node, def string) (string, error) {
	host, port := node, ""
	if i := strings.LastIndexByte(node, ':'); i >= 0 && i > strings.LastIndexByte(node, ']') {
		host, port = node[:i], node[i+1:]
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "" {
		return "", fmt.Errorf("node %q needs a host", node)
	}
	if port == "" {
		port = def
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("port %q out of range", port)
	}
	return net.JoinHostPort(host, port), nil
}

func loadCAs(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, errors.New("no PEM certificate in " + path)
	}
	return pool, nil
}
