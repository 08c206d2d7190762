package core

import (
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/weirproxy/weir/core/admin"
	"github.com/weirproxy/weir/core/breaker"
	"github.com/weirproxy/weir/core/events"
	"github.com/weirproxy/weir/core/limit"
	"github.com/weirproxy/weir/core/missrate"
	"github.com/weirproxy/weir/core/neg"
	"github.com/weirproxy/weir/core/redisstore"
	"github.com/weirproxy/weir/core/setting"
	"github.com/weirproxy/weir/core/store"
)

// Defaults applied by Settings.withDefaults.
const (
	DefaultLeaderMaxAge    = 10 * time.Second
	DefaultFollowerMaxWait = 10 * time.Second
	DefaultHitForMissTTL   = 30 * time.Second
	DefaultOriginTimeout   = 30 * time.Second
	DefaultStoreTimeout    = 50 * time.Millisecond
)

// ErrSettings wraps every invalid setting.
var ErrSettings = errors.New("invalid setting")

// Settings configure one engine. Zero values mean the defaults above or, where said, off.
type Settings struct {
	// QueryDrop lists query parameters left out of cache keys. Empty: none.
	QueryDrop []string
	// KeyScheme is key.scheme, where a key's scheme comes from: KeySchemeTLS (the
	// connection) or KeySchemeForwarded (X-Forwarded-Proto). Empty: KeySchemeTLS.
	KeyScheme string
	// MaxSize is the memory store's byte budget. Zero: store.DefaultMaxSize.
	MaxSize int64
	// MaxEntrySize is the largest answer held and stored; larger ones stream through.
	// Zero: store.DefaultMaxEntrySize.
	MaxEntrySize int64
	// DefaultTTL is the freshness given to storable answers that state none. Zero: none.
	DefaultTTL time.Duration
	// CachePaths are the path patterns whose answers Weir may store (cache.paths, in
	// setting.Pattern's grammar). A request for a path outside them still takes the gate,
	// coalescing and every protection; its answer is shared with the requests coalesced on
	// it, never stored. Empty: every path.
	CachePaths []string
	// CacheTTLs give the paths a pattern matches a freshness of their own for storable
	// answers that state none (cache.ttls), in place of DefaultTTL; the first that matches
	// wins. Empty: DefaultTTL for every path.
	CacheTTLs []PathTTL
	// Private is the private cache (private.*): answers stored per user. Zero: off.
	Private PrivateSettings

	// LeaderMaxAge is how long a flight takes followers (FR-COA-3); capped by OriginTimeout.
	LeaderMaxAge time.Duration
	// FollowerMaxWait bounds a follower's wait (FR-COA-4); capped by OriginTimeout.
	FollowerMaxWait time.Duration
	// HitForMissTTL is how long a key whose answer could not be shared bypasses coalescing.
	HitForMissTTL time.Duration

	// OriginTimeout bounds a fetch that Weir makes on behalf of the cache.
	OriginTimeout time.Duration
	// StoreTimeout bounds every call to a remote store (FR-STF-1).
	StoreTimeout time.Duration

	// AllowPurge makes Weir answer PURGE requests by dropping the URI's entry, instead of
	// passing them to the origin. Off by default: anyone who reaches the router could purge.
	AllowPurge bool

	// AdminPath is where the admin API, page and metrics answer ("/_weir"; "/_weir/" is the
	// same path, its trailing slash trimmed). Empty: no admin.
	AdminPath string
	// AdminAccess says who may use the admin, and send PURGE: its Token (at least
	// admin.MinTokenLength characters) is always needed, its Allow narrows the addresses
	// that may present it, its Hosts the names the admin answers for. Its zero value lets no
	// one in: AdminPath and AllowPurge both need a token. Its Brake and callbacks are the
	// engine's own (newAdmin).
	AdminAccess admin.Access
	// AdminTokenFile is admin.tokenFile: a file (a Docker or Kubernetes secret) whose
	// content, surrounding whitespace trimmed, New takes as AdminAccess.Token. Empty: none;
	// setting it with AdminAccess.Token is an error.
	AdminTokenFile string

	// Limiter is the origin concurrency budget (FR-LIM-1..7); zero fields are its defaults.
	// It is updated live on reload.
	Limiter limit.Settings

	// Budgets are the request budgets (budgets.*); zero: off.
	Budgets BudgetSettings
	// Admission is admission control (admission.*); zero: off.
	Admission AdmissionSettings
	// Pacing spaces the requests that reach the hosts and domains it lists. Empty: none.
	Pacing []Pace
	// Clients are the slow clients' limits (clients.*); zero fields are their defaults.
	Clients ClientSettings
	// Stale is the operator's stale policy (stale.*); zero: off.
	Stale StaleSettings
	// RefusalBody is refusal.body: an HTML page for refusals to clients that prefer HTML, with
	// {detail}, {retryAfter} and {status} filled in. Empty: the line of text.
	RefusalBody string
	// Warm is warming (warm.*): paths fetched into the cache on start and after a purge of
	// everything. No hosts or no paths: off.
	Warm WarmSettings

	// Breaker is the circuit breaker (FR-CB-1..5); zero fields are its defaults. Its Scope
	// says whether one breaker watches the engine, each host (empty: the default) or each
	// registrable domain.
	Breaker breaker.Settings
	// BreakerOverrides give scope keys parameters of their own (breaker.overrides). Keys an
	// operator overrode on the admin page keep theirs across reloads.
	BreakerOverrides []breaker.KeyOverride
	// BreakerCountStatus500 makes a 500 count as a failure; by default it is the origin
	// answering.
	BreakerCountStatus500 bool
	// BreakerIgnoreStatus429 makes a 429 the origin answering, its Retry-After unheeded
	// (breaker.countStatus429: false); by default a 429 is a failure, and a 429 or 503 with
	// Retry-After opens the breaker for that long.
	BreakerIgnoreStatus429 bool
	// BreakerPaths are path prefixes (breaker.paths), each giving the requests under it a
	// breaker of its own within their scope (breaker.PathKey). Nil: one breaker per scope.
	BreakerPaths []string
	// Negative is the negative cache (FR-NEG-1..4); zero fields are its defaults.
	Negative neg.Settings
	// MissRate is the miss-rate detector (FR-MR-1, FR-MR-2); by default it only reports.
	MissRate missrate.Settings

	// StoreURL is the URL of a store shared by every Traefik instance: a single server
	// (redis://, rediss://), a Redis Cluster (redis-cluster://) or the primary Redis Sentinel
	// monitors (redis-sentinel://); see redisstore.Settings.URL. Empty: process memory.
	StoreURL string
	// StoreURLFile is store.urlFile: a file (a Docker or Kubernetes secret) whose content,
	// surrounding whitespace trimmed, New takes as StoreURL, so that a password in the URL
	// need not be written in Traefik's configuration. Empty: none; setting it with StoreURL
	// is an error.
	StoreURLFile string
	// StoreKeyPrefix prefixes every key in the shared store. Empty: "weir:".
	StoreKeyPrefix string
	// StoreNoNearCache turns off the shared store's near tier: every lookup then asks the
	// server. False: copies of entries read from the server are kept in this process, within
	// MaxSize, while the server pushes their invalidations (redisstore's near.go).
	StoreNoNearCache bool
	// Store, when set, is used instead of StoreURL (tests). Nil: StoreURL or process memory.
	Store store.Store
	// StoreID names Store's configuration, so that a reload pointing at another store
	// empties this engine's cache.
	StoreID string

	// LogFormat is log.format, the format of event lines: "logfmt" or "json". Empty: logfmt.
	LogFormat string
	// Events receives each event line (core/events). Nil: standard error, each line as it
	// is (it carries its own time).
	Events func(line string)

	// Now reads the clock. Nil: time.Now.
	Now func() time.Time
	// Log writes one log line. Nil: standard error with a "weir: " prefix.
	//
	// A func of one string, not a Printf-like variadic func: Yaegi v0.16.1 panics while
	// compiling a call of a variadic func-typed field with several arguments.
	Log func(msg string)
}

func (s Settings) withDefaults() Settings {
	// "/_weir/" is "/_weir": the bare path is the admin's as well (admin.Under).
	s.AdminPath = strings.TrimRight(s.AdminPath, "/")
	if s.MaxSize <= 0 {
		s.MaxSize = store.DefaultMaxSize
	}
	if s.MaxEntrySize <= 0 {
		s.MaxEntrySize = store.DefaultMaxEntrySize
	}
	if s.MaxEntrySize > s.MaxSize {
		s.MaxEntrySize = s.MaxSize
	}
	durations := []struct {
		v   *time.Duration
		def time.Duration
	}{
		{&s.OriginTimeout, DefaultOriginTimeout},
		{&s.LeaderMaxAge, DefaultLeaderMaxAge},
		{&s.FollowerMaxWait, DefaultFollowerMaxWait},
		{&s.HitForMissTTL, DefaultHitForMissTTL},
		{&s.StoreTimeout, DefaultStoreTimeout},
		{&s.Clients.BodyIdle, DefaultBodyIdle},
		{&s.Warm.Timeout, DefaultWarmTimeout},
	}
	for _, d := range durations {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	// A flight and a follower's wait are bounded by the fetch they wait for.
	if s.LeaderMaxAge > s.OriginTimeout {
		s.LeaderMaxAge = s.OriginTimeout
	}
	if s.FollowerMaxWait > s.OriginTimeout {
		s.FollowerMaxWait = s.OriginTimeout
	}
	// One spelling of each scope ("" and "Host" are "host"): the engine compares breaker
	// settings across reloads, and finds breakers with ScopeKey under this scope.
	if scope, err := breaker.ParseScope(s.Breaker.Scope); err == nil {
		s.Breaker.Scope = scope
	}
	if s.KeyScheme == "" {
		s.KeyScheme = KeySchemeTLS
	}
	s.Private = s.Private.withDefaults()
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.Events == nil {
		s.Events = stderrLine
	}
	if s.Log == nil {
		// A closure, not the method value logger.Print: Yaegi v0.16.1 cannot store a method
		// value of a compiled pointer type in a func variable.
		logger := log.New(os.Stderr, "weir: ", log.LstdFlags)
		s.Log = func(msg string) { logger.Print(msg) }
	}
	return s
}

// PathTTL is one item of cache.ttls: the freshness given to storable answers that state
// none, for the paths Pattern (setting.Pattern's grammar) matches. Zero TTL: none, whatever
// DefaultTTL says.
type PathTTL struct {
	Pattern string
	TTL     time.Duration
}

// MaxPathPatterns bounds cache.paths and cache.ttls each: every pattern is tried on an
// origin fetch.
const MaxPathPatterns = 64

// validateBuckets checks cache.paths and cache.ttls.
func (s Settings) validateBuckets() error {
	if len(s.CachePaths) > MaxPathPatterns {
		return fmt.Errorf("%w: cache.paths: %d patterns, at most %d", ErrSettings, len(s.CachePaths), MaxPathPatterns)
	}
	if len(s.CacheTTLs) > MaxPathPatterns {
		return fmt.Errorf("%w: cache.ttls: %d patterns, at most %d", ErrSettings, len(s.CacheTTLs), MaxPathPatterns)
	}
	for _, p := range s.CachePaths {
		if _, err := setting.ParsePattern(p); err != nil {
			return fmt.Errorf("%w: cache.paths: %q %v", ErrSettings, p, err)
		}
	}
	for _, t := range s.CacheTTLs {
		if _, err := setting.ParsePattern(t.Pattern); err != nil {
			return fmt.Errorf("%w: cache.ttls: %q %v", ErrSettings, t.Pattern, err)
		}
		if t.TTL < 0 {
			return fmt.Errorf("%w: cache.ttls: %q: %s must not be negative", ErrSettings, t.Pattern, t.TTL)
		}
	}
	return nil
}

// validate rejects values that are set but make no sense; zero values are defaults.
func (s Settings) validate() error {
	if err := s.validateBuckets(); err != nil {
		return err
	}
	checks := []struct {
		field string
		v     time.Duration
	}{
		{"cache.defaultTTL", s.DefaultTTL},
		{"coalesce.leaderMaxAge", s.LeaderMaxAge},
		{"coalesce.followerMaxWait", s.FollowerMaxWait},
		{"coalesce.hitForMissTTL", s.HitForMissTTL},
		{"timeouts.origin", s.OriginTimeout},
		{"timeouts.store", s.StoreTimeout},
		{"clients.bodyIdle", s.Clients.BodyIdle},
		{"stale.ifError", s.Stale.IfError},
		{"stale.whileRevalidate", s.Stale.WhileRevalidate},
	}
	for _, c := range checks {
		if c.v < 0 {
			return fmt.Errorf("%w: %s: %s must not be negative", ErrSettings, c.field, c.v)
		}
	}
	if err := s.Breaker.Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrSettings, err)
	}
	if _, err := breaker.ParsePaths(s.BreakerPaths); err != nil {
		return fmt.Errorf("%w: %v", ErrSettings, err)
	}
	if err := s.MissRate.Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrSettings, err)
	}
	if err := s.Negative.Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrSettings, err)
	}
	if err := s.Limiter.Validate(); err != nil {
		return fmt.Errorf("%w: limiter.%v", ErrSettings, err)
	}
	if _, err := events.ParseFormat(s.LogFormat); err != nil {
		return fmt.Errorf("%w: %v", ErrSettings, err)
	}
	if err := s.validateAdmin(); err != nil {
		return err
	}
	if len(s.RefusalBody) > maxRefusalBody {
		return fmt.Errorf("%w: refusal.body: %d bytes, at most %d", ErrSettings, len(s.RefusalBody), maxRefusalBody)
	}
	if err := s.Warm.validate(); err != nil {
		return err
	}
	if err := validateKeyScheme(s.KeyScheme); err != nil {
		return err
	}
	if err := s.Private.validate(s.StoreURL != "" || s.Store != nil); err != nil {
		return err
	}
	if s.Budgets.Shared && s.StoreURL == "" && s.Store == nil {
		return fmt.Errorf("%w: budgets.shared: true needs store.url, a store to share the budgets through", ErrSettings)
	}
	if s.MaxSize < 0 {
		return fmt.Errorf("%w: cache.maxSize: %d must not be negative", ErrSettings, s.MaxSize)
	}
	if s.MaxEntrySize < 0 {
		return fmt.Errorf("%w: cache.maxEntrySize: %d must not be negative", ErrSettings, s.MaxEntrySize)
	}
	return nil
}

// fingerprint names what this engine caches and how it keys: a reload that changes it
// empties the cache, one that does not keeps it.
func (s Settings) fingerprint() string {
	drop := append([]string(nil), s.QueryDrop...)
	sort.Strings(drop)
	// private.paths: the shared cache stores nothing under them (bucketOf), and must not
	// keep what it stored there before they were set.
	return fmt.Sprintf("drop=%s scheme=%s size=%d entry=%d ttl=%s paths=%q ttls=%v private=%q store=%s url=%s prefix=%s near=%t storeTimeout=%s",
		strings.Join(drop, ","), s.KeyScheme, s.MaxSize, s.MaxEntrySize, s.DefaultTTL, s.CachePaths, s.CacheTTLs, s.Private.Paths, s.StoreID, s.StoreURL, s.StoreKeyPrefix, !s.StoreNoNearCache, s.StoreTimeout)
}

// validateAdmin checks admin.path and admin.token, and that whatever empties or reveals the
// cache has the operator's token to check. admin.allow narrows who may present the token: it
// never stands in for it, since an address is not a secret (anyone on an allowed network, or
// any process on an allowed host, shares it).
func (s Settings) validateAdmin() error {
	a := s.AdminAccess
	if p := s.AdminPath; p != "" && (p[0] != '/' || strings.ContainsAny(p, "?#") || strings.Trim(p, "/") == "") {
		return fmt.Errorf("%w: admin.path: %q must be a path below the root such as \"/_weir\"", ErrSettings, p)
	}
	if a.Token != "" {
		if n := utf8.RuneCountInString(a.Token); n < admin.MinTokenLength {
			if s.AdminTokenFile != "" {
				return fmt.Errorf("%w: admin.tokenFile: %q holds %d characters; at least %d", ErrSettings, s.AdminTokenFile, n, admin.MinTokenLength)
			}
			return fmt.Errorf("%w: admin.token: %d characters; at least %d", ErrSettings, n, admin.MinTokenLength)
		}
	}
	if len(a.Allow) > 0 && a.Token == "" {
		return fmt.Errorf("%w: admin.allow: needs admin.token: the allow list narrows who may present the token, it no longer replaces it", ErrSettings)
	}
	if p := s.AdminPath; p != "" && !a.Configured() {
		return fmt.Errorf("%w: admin.path: %q needs admin.token (or admin.tokenFile), or no one could use it", ErrSettings, p)
	}
	if s.AllowPurge && !a.Configured() {
		return fmt.Errorf("%w: cache.allowPurge: true needs admin.token (or admin.tokenFile), so that no anonymous client can empty the cache", ErrSettings)
	}
	return nil
}

// maxSecretFile bounds what admin.tokenFile, store.urlFile and private.secretFile may hold: a secret, not a
// document.
const maxSecretFile = 64 << 10

// withSecrets reads admin.tokenFile and store.urlFile into the values they stand for. Their
// errors name the field and the path, never what the file holds.
func (s Settings) withSecrets() (Settings, error) {
	if s.AdminTokenFile != "" {
		if s.AdminAccess.Token != "" {
			return s, fmt.Errorf("%w: admin.tokenFile: %q is set with admin.token; set one of them", ErrSettings, s.AdminTokenFile)
		}
		token, err := readSecret("admin.tokenFile", s.AdminTokenFile)
		if err != nil {
			return s, err
		}
		s.AdminAccess.Token = token
	}
	if s.StoreURLFile != "" {
		if s.StoreURL != "" {
			return s, fmt.Errorf("%w: store.urlFile: %q is set with store.url; set one of them", ErrSettings, s.StoreURLFile)
		}
		u, err := readSecret("store.urlFile", s.StoreURLFile)
		if err != nil {
			return s, err
		}
		s.StoreURL = u
	}
	if s.Private.SecretFile != "" {
		secret, err := readSecret("private.secretFile", s.Private.SecretFile)
		if err != nil {
			return s, err
		}
		s.Private.secret = secret
	}
	return s, nil
}

// readSecret reads the file at path for field, surrounding whitespace trimmed.
func readSecret(field, path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %q cannot be read: %v", ErrSettings, field, path, pathErr(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err != nil {
		return "", fmt.Errorf("%w: %s: %q cannot be read: %v", ErrSettings, field, path, pathErr(err))
	}
	if len(data) > maxSecretFile {
		return "", fmt.Errorf("%w: %s: %q holds more than %d bytes; it should hold the secret alone", ErrSettings, field, path, maxSecretFile)
	}
	v := strings.TrimSpace(string(data))
	if v == "" {
		return "", fmt.Errorf("%w: %s: %q is empty", ErrSettings, field, path)
	}
	return v, nil
}

// pathErr is err without the path an *os.PathError repeats.
func pathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Check reports what New would refuse in s, with New's own message: the provider plugin
// checks its presets with it (through weir's Config.Check), so that a preset it publishes
// and the middleware that loads it can never disagree. It runs New's validation, then
// builds what New builds that can refuse a setting and holds neither a goroutine nor a
// connection: the breaker group with its overrides, the budgets, admission and pacing, and,
// for a store.url, the store without its near cache (which dials nothing before it is used),
// closed at once. No engine is built or registered.
func Check(s Settings) error {
	s, err := s.withSecrets()
	if err != nil {
		return err
	}
	if err := s.validate(); err != nil {
		return err
	}
	// With the defaults New applies before it builds the engine (engineFor).
	s = s.withDefaults()
	group, err := breaker.NewGroup(s.Breaker)
	if err != nil {
		return err
	}
	if err := applyOverrides(&engine{breakers: group}, &engine{}, s.BreakerOverrides); err != nil {
		return err
	}
	if _, err := newBudgets("check", s.Budgets, s.StoreTimeout, s.Now); err != nil {
		return err
	}
	if _, err := newAdmission(s.Admission); err != nil {
		return err
	}
	if _, err := buildPaceTable(nil, pacesByName(s.Pacing), nil, queueWait(s.Limiter.MaxQueueWait), s.Limiter.AfterFunc); err != nil {
		return err
	}
	if s.StoreURL == "" || s.Store != nil {
		return nil
	}
	rs, err := redisstore.New(redisstore.Settings{URL: s.StoreURL, KeyPrefix: s.StoreKeyPrefix, MaxEntrySize: int(s.MaxEntrySize)})
	if err != nil {
		return err
	}
	return rs.Close()
}
