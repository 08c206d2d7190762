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
	"time"
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
)

// Settings configures a Store.
type Settings struct {
	// URL names the server: redis://[[user]:password@]host[:port][/db], or rediss://... to
	// speak TLS. Port defaults to 6379, db to 0. A user needs a password (Redis 6 ACL users);
	// a password alone authenticates as the default user. TLS takes these query options:
	// caFile=PATH trusts the PEM certificates in PATH instead of the system's roots,
	// serverName=NAME checks the certificate for NAME instead of the host, and
	// insecureSkipVerify=true checks no certificate at all (for tests only). Required.
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
	ints := []struct {
		name string
		v    *int
		def  int
	}{
		{"store.maxEntrySize", &s.MaxEntrySize, DefaultMaxEntrySize},
		{"store.maxIdle", &s.MaxIdle, DefaultMaxIdle},
		{"store.maxActive", &s.MaxActive, DefaultMaxActive},
	}
	for _, f := range ints {
		if *f.v < 0 {
			return s, fmt.Errorf("%s: %d: must not be negative", f.name, *f.v)
		}
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	durations := []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"store.idleTimeout", &s.IdleTimeout, DefaultIdleTimeout},
		{"store.timeout", &s.Timeout, DefaultTimeout},
	}
	for _, f := range durations {
		if *f.v < 0 {
			return s, fmt.Errorf("%s: %v: must not be negative", f.name, *f.v)
		}
		if *f.v == 0 {
			*f.v = f.def
		}
	}
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
}

// parseURL reads Settings.URL. Errors show the URL with its password redacted.
func parseURL(raw string) (server, error) {
	var srv server
	u, err := url.Parse(raw)
	if err != nil {
		if ue, ok := err.(*url.Error); ok {
			err = ue.Err // the whole error would repeat the URL, password and all
		}
		return srv, fmt.Errorf("store.url: not a URL: %w", err)
	}
	fail := func(format string, args ...interface{}) (server, error) {
		return server{}, fmt.Errorf("store.url: %q: %s", u.Redacted(), fmt.Sprintf(format, args...))
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return fail("scheme must be redis or rediss")
	}
	if u.Opaque != "" || u.Hostname() == "" {
		return fail("needs a host, as in redis://host:6379")
	}
	port := u.Port()
	if port == "" {
		port = defaultPort
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fail("port %q out of range", port)
	}
	srv.addr = net.JoinHostPort(u.Hostname(), port)

	if u.User != nil {
		srv.user = u.User.Username()
		srv.password, _ = u.User.Password()
		if srv.password == "" && srv.user != "" {
			return fail("user %q needs a password", srv.user)
		}
	}

	switch u.Path {
	case "", "/":
	default:
		db, err := strconv.Atoi(u.Path[1:])
		if err != nil || db < 0 || u.Path[0] != '/' {
			return fail("database %q must be a number, as in /2", u.Path)
		}
		srv.db = db
	}

	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return fail("query: %v", err)
	}
	var tlsConfig *tls.Config
	if u.Scheme == "rediss" {
		tlsConfig = &tls.Config{ServerName: u.Hostname(), MinVersion: tls.VersionTLS12}
	}
	for name, vs := range q {
		v := vs[len(vs)-1]
		if tlsConfig == nil {
			return fail("option %s needs the rediss scheme", name)
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
	srv.tls = tlsConfig
	return srv, nil
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
