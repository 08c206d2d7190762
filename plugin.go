// Package weir is the Traefik middleware plugin for Weir, an origin-protecting HTTP cache.
//
// This file is Traefik's contract only: CreateConfig, New, and the configuration they decode.
// config.go turns the configuration into the core's Settings; the core serves.
package weir

import (
	"context"
	"net/http"

	"github.com/weirproxy/weir/core"
)

// Config is the middleware's configuration as operators write it in YAML, TOML or Docker
// labels. From labels every value arrives as a string, so sizes and durations are strings
// ("32MiB", "10s") parsed in New.
type Config struct {
	Key       KeyConfig       `json:"key,omitempty"`
	Cache     CacheConfig     `json:"cache,omitempty"`
	Coalesce  CoalesceConfig  `json:"coalesce,omitempty"`
	Timeouts  TimeoutsConfig  `json:"timeouts,omitempty"`
	Limiter   LimiterConfig   `json:"limiter,omitempty"`
	Breaker   BreakerConfig   `json:"breaker,omitempty"`
	Negative  NegativeConfig  `json:"negative,omitempty"`
	MissRate  MissRateConfig  `json:"missRate,omitempty"`
	Store     StoreConfig     `json:"store,omitempty"`
	Admin     AdminConfig     `json:"admin,omitempty"`
	Log       LogConfig       `json:"log,omitempty"`
	Budgets   BudgetsConfig   `json:"budgets,omitempty"`
	Admission AdmissionConfig `json:"admission,omitempty"`
	Clients   ClientsConfig   `json:"clients,omitempty"`
	Warm      WarmConfig      `json:"warm,omitempty"`
	Stale     StaleConfig     `json:"stale,omitempty"`
	Refusal   RefusalConfig   `json:"refusal,omitempty"`
	Private   PrivateConfig   `json:"private,omitempty"`
	// Pacing spaces the requests that reach a host, or every host of a domain, evenly: one
	// string each, "feeds.example.com=3/10s" (rates N/10s, N/1s or N/1m). A list, not a map:
	// hosts hold dots, which labels would split into nested keys.
	Pacing []string `json:"pacing,omitempty"`
	// Unknown holds the sections and options Weir does not know, which New refuses, naming
	// the closest it knows: Traefik's decoder (mapstructure) drops a key that matches no
	// field unless a field takes the remainder (",remain"), so a misspelt option would
	// otherwise leave its default in place unseen. Each section has one of its own.
	Unknown map[string]interface{} `json:"-" mapstructure:",remain"`
}

// RefusalConfig is how Weir's refusals (503 and 429 with Retry-After) read to browsers.
type RefusalConfig struct {
	// Body is an HTML page sent to clients that prefer HTML in place of the line of text, at
	// most 64 KiB: {detail} becomes the reason, {retryAfter} the seconds to wait, {status} the
	// status ("": the line of text). Clients that prefer JSON get {"error": ...,
	// "retryAfter": ...} either way.
	Body string `json:"body,omitempty"`
	// Unknown holds the options of this section Weir does not know, which New refuses
	// (mapstructure's remain: Traefik's decoder would otherwise drop them unseen).
	Unknown map[string]interface{} `json:"-" mapstructure:",remain"`
}

// StaleConfig is the operator's stale policy: how long a stored answer whose origin sent no
// stale directive of its own may still be served after it went stale, when the origin fails
// (ifError) or while it is refreshed in the background (whileRevalidate). The origin's own
// stale-if-error and stale-while-revalidate come first; must-revalidate, proxy-revalidate,
// s-maxage and no-cache turn the policy off for that answer.
type StaleConfig struct {
	// IfError is the stale-if-error window given to answers without one ("1h"; "0s": off).
	IfError string `json:"ifError,omitempty"`
	// WhileRevalidate is the stale-while-revalidate window given to answers without one
	// ("30s"; "0s": off).
	WhileRevalidate string `json:"whileRevalidate,omitempty"`
	// Unknown holds the options of this section Weir does not know, which New refuses
	// (mapstructure's remain: Traefik's decoder would otherwise drop them unseen).
	Unknown map[string]interface{} `json:"-" mapstructure:",remain"`
}

// ClientsConfig is the slow clients' limits: a client that pauses its request body longer
// loses its connection rather than hold an origin slot. Never a limit on a whole transfer.
type ClientsConfig struct {
	// BodyIdle is the longest pause in a request body ("60s").
	BodyIdle string `json:"bodyIdle,omitempty"`
	// Unknown holds the options of this section Weir does not know, which New refuses
	// (mapstructure's remain: Traefik's decoder would otherwise drop them unseen).
	Unknown map[string]interface{} `json:"-" mapstructure:",remain"`
}

// WarmConfig is warming: paths fetched into the cache on every host listed when the engine
// starts, when warm changes and after a purge of everything, so that the first visitor
// finds them stored. Off unless paths and hosts are set.
type WarmConfig struct {
	// Paths are the paths warmed, each starting with "/", at most 32.
	Paths []string `json:"paths,omitempty"`
	// Hosts are the hosts they are warmed on: "www.example.com" (warmed as http://, an
	// entry point without TLS) or "https://www.example.com" (an entry point with TLS).
	Hosts []string `json:"hosts,omitempty"`
	// Timeout bounds a warming run ("30s").
	Timeout string `json:"timeout,omitempty"`
	// Unknown holds the options of this section Weir does not know, which New refuses
	// (mapstructure's remain: Traefik's decoder would otherwise drop them unseen).
	Unknown map[string]interface{} `json:"-" mapstructure:",remain"`
}

// AdmissionConfig is admission control: past a knee of requests in flight through the
// middleware, or of scheduler lag, the requests that make the load get an immediate 503
// with Retry-After as their heads arrive. Off unless kneeInFlight is set.
type AdmissionConfig struct {
	// KneeInFlight is the requests in flight past which hosts over their share and names no
	// router expects are refused; past twice as many, everything but Protect ("": off).
	KneeInFlight string `json:"kneeInFlight,omitempty"`
	// HostKneeInFlight is one host's share past the knee (kneeInFlight/4).
	HostKneeInFlight string `json:"hostKneeInFlight,omitempty"`
	// LagKnee is the scheduler lag (how late a 10ms ticker fires) that passes the knee
	// ("10ms"); LagLimit the one past which only Protect is taken ("50ms").
	LagKnee  string `json:"lagKnee,omitempty"`
	LagLimit string `json:"lagLimit,omitempty"`
	// Protect lists path prefixes taken even past the limit, such as the health check;
	// admin.path always is.
	Protect []string `json:"protect,omitempty"`
	// Unknown holds the options of this section Weir does not know, which New refuses
	// (mapstructure's remain: Traefik's decoder would otherwise drop them unseen).
	Unknown map[string]interface{} `json:"-" mapstructure:",remain"`
}

// BudgetsConfig is the request budgets: token buckets per client and per Host, spent before
// any lookup; a request over budget gets 429 with Retry-After. Off unless a rate is set.
type BudgetsConfig struct {
	// Client is each client's rate, "200/10s" (N/10s, N/1s or N/1m); IPv6 clients count as
	// their /64 ("": no client budget).
	Client string `json:"client,omitempty"`
	// Host is each Host's rate ("": no host budget).
	Host string `json:"host,omitempty"`
	// Burst is how much of its rate each bucket saves up while quiet ("2s" of "200/10s" is
	// 40 requests at once; "": one request).
	Burst string `json:"burst,omitempty"`
	// ClientSource says where the client's address is read: "remoteAddr" (the connection,
	// the default), "header:X-Real-IP" (a field set by a trusted proxy in front) or
	// "forwardedDepth:1" (X-Forwarded-For, the Nth from the right, as Traefik's
	// ipStrategy.depth).
	ClientSource string `json:"clientSource,omitempty"`
	// Exempt lists CIDRs whose clients no budget counts.
	Exempt []string `json:"exempt,omitempty"`
	// Shared counts the budgets with every Traefik instance sharing store.url, in batches
	// on the store's clock ("false": each instance counts alone). A store that fails leaves
	// each instance counting alone, never refusing for it.
	Shared string `json:"shared,omitempty"`
	// Unknown holds the options of this section Weir does not know, which New refuses
	// (mapstructure's remain: Traefik's decoder would otherwise drop them unseen).
	Unknown map[string]interface{} `json:"-" mapstructure:",remain"`
}

// KeyConfig says how requests map to cache keys.
type KeyConfig struct {
	// QueryDrop lists query parameters left out of the key (tracking parameters).
	QueryDrop []string `json:"queryDrop,omitempty"`
	// Scheme is where the key's scheme comes from: "tls" (the connection to Traefik, the
	// default) or "forwarded" (X-Forwarded-Proto, as Traefik's entry point passes it on:
	// from peers in its forwardedHeaders.trustedIPs, else set from the connection). Behind
	// a proxy that terminates TLS, "tls" keys https and http requests alike.
	Scheme string `json:"scheme,omitempty"`
	// Unknown holds the options of this section Weir does not know, which New refuses
	// (mapstructure's remain: Traefik's decoder would otherwise drop them unseen).
	Unknown map[string]interface{} `json:"-" mapstructure:",remain"`
}

// CacheConfig bounds what is stored.
type CacheConfig struct {
	// MaxSize is the memory store's byte budget ("32MiB", the default).
	MaxSize string `json:"maxSize,omitempty"`
	// MaxEntrySize is the largest answer stored ("2MiB", the default); larger ones stream
	// through.
	MaxEntrySize string `json:"maxEntrySize,omitempty"`
	// DefaultTTL is the freshness given to storable answers that state none ("" or "0s":
	// none, the default).
	DefaultTTL string `json:"defaultTTL,omitempty"`
	// Paths are the path patterns whose answers may be stored ("/static/", "*.js",
	// "/blog/*.html"); a request for any other path keeps coalescing and every protection,
	// and its answer is never stored. Empty: every path.
	Paths []string `json:"paths,omitempty"`
	// TTLs give the paths a pattern matches their own default freshness, pattern=duration
	// ("/static/*=1h", "*.js=1d"; d is a day): for storable answers that state none, in
	// place of DefaultTTL; the first match wins.
	TTLs []string `json:"ttls,omitempty"`
	// AllowPurge makes a PURGE request drop the URI's entry without reaching the origin
	// ("false": PURGE passes to the origin like any other method). Restrict who can send
	// PURGE (an IP allow list middleware on a dedicated router) before turning it on.
	AllowPurge string `json:"allowPurge,omitempty"`
	// Unknown holds the options of this section Weir does not know, which New refuses
	// (mapstructure's remain: Traefik's decoder would otherwise drop them unseen).
	Unknown map[string]interface{} `json:"-" mapstructure:",remain"`
}

// PrivateConfig is the private cache: answers stored for one user alone, under a key
// that holds an HMAC of the user's identity, never the identity itself.
type PrivateConfig struct {
	// Paths are the path patterns (cache.paths' grammar) whose answers are per user ("/account",
	// "/cart/*"); setting them turns the private cache on ("": off, the default). The shared
	// cache stores nothing under them.
	Paths []string `json:"paths,omitempty"`
	// Identity is where a user's identity is read: "cookie:<name>" or "header:<Name>"
	// ("header:Authorization", the default).
	Identity string `json:"identity,omitempty"`
	// TTL is the freshness of a private answer whose origin states none ("1m").
	TTL string `json:"ttl,omitempty"`
	// MaxSize is the private cache's own memory budget ("8MiB").
	MaxSize string `json:"maxSize,omitempty"`
	// SecretFile is a file holding the key of the identities' HMAC, the same on every
	// instance of a fleet ("": a random key made at start, this instance's alone).
	SecretFile string `json:"secretFile,omitempty"`
	// Shared stores private answers in the shared store (store.url) under their hashed keys
	// ("false": in this instance's memory). It needs store.url and secretFile.
	Shared string `json:"shared,omitempty"`
	// Unknown holds the options of this section Weir does not know, which New refuses
	// (mapstructure's remain: Traefik's decoder would otherwise drop them unseen).
	Unknown map[string]interface{} `json:"-" mapstructure:",remain"`
}

// CoalesceConfig tunes request coalescing.
type CoalesceConfig struct {
	// LeaderMaxAge: an older flight takes no new followers ("10s").
	LeaderMaxAge string `json:"leaderMaxAge,omitempty"`
	// FollowerMaxWait bounds a follower's wait ("10s").
	FollowerMaxWait string `json:"followerMaxWait,omitempty"`
	// HitForMissTTL: a key whose answer could not be shared skips coalescing this long ("30s").
	HitForMissTTL string `json:"hitForMissTTL,omitempty"`
	// Unknown holds the options of this section Weir does not know, which New refuses
	// (mapstructure's remain: Traefik's decoder would otherwise drop them unseen).
	Unknown map[string]interface{} `json:"-" mapstructure:",remain"`
}

// TimeoutsConfig bounds waits.
type TimeoutsConfig struct {
	// Origin bounds a fetch made on behalf of the cache ("30s").
	Origin string `json:"origin,omitempty"`
	// Store bounds every call to a remote store ("50ms").
	Store string `json:"store,omitempty"`
	// Unknown holds the options of this section Weir does not know, which New refuses
	// (mapstructure's remain: Traefik's decoder would otherwise drop them unseen).
	Unknown map[string]interface{} `json:"-" mapstructure:",remain"`
}

// LimiterConfig is the origin concurrency budget. Every origin fetch holds a slot: misses,
// background refreshes, pass-through and bypassed requests. Counts are strings so that
// labels and YAML read the same.
type LimiterConfig struct {
	// MaxConcurrent origin fetches without a request body ("64").
	MaxConcurrent string `json:"maxConcurrent,omitempty"`
	// MaxQueue waiters for a slot ("1024"); more are shed with 503.
	MaxQueue string `json:"maxQueue,omitempty"`
	// MaxQueueWait is the longest wait for a slot ("2s").
	MaxQueueWait string `json:"maxQueueWait,omitempty"`
	// MaxPerPartition slots for one scheme+host+path ("16").
	MaxPerPartition string `json:"maxPerPartition,omitempty"`
	// MaxQueuePerPartition waiters for one scheme+host+path, of MaxQueue; more are shed with
	// 503 (default: MaxQueue/8, "128", or MaxPerPartition when that is more).
	MaxQueuePerPartition string `json:"maxQueuePerPartition,omitempty"`
	// MaxPerHost slots for one host ("0": no cap).
	MaxPerHost string `json:"maxPerHost,omitempty"`
	// MaxUpload origin fetches with a request body, in a pool of their own ("16").
	MaxUpload string `json:"maxUpload,omitempty"`
	// Unknown holds the options of this section Weir does not know, which New refuses
	// (mapstructure's remain: Traefik's decoder would otherwise drop them unseen).
	Unknown map[string]interface{} `json:"-" mapstructure:",remain"`
}

// BreakerConfig is the circuit breaker that stops all origin traffic while the origin fails.
type BreakerConfig struct {
	// Scope is "host" (one breaker per upstream host, the default), "domain" (one per
	// registrable domain) or "engine" (one for every host the middleware serves).
	Scope string `json:"scope,omitempty"`
	// Window over which fetches are counted ("10s").
	Window string `json:"window,omitempty"`
	// MinRequests completed in the window before it may open ("20").
	MinRequests string `json:"minRequests,omitempty"`
	// FailureRatio at or above which it opens ("0.5").
	FailureRatio string `json:"failureRatio,omitempty"`
	// MaxFailures in the window open it whatever the ratio and MinRequests ("0": off).
	MaxFailures string `json:"maxFailures,omitempty"`
	// OpenFor is the first open period ("5s", give or take 20%); it doubles on each failed
	// probe up to MaxOpenFor ("60s").
	OpenFor    string `json:"openFor,omitempty"`
	MaxOpenFor string `json:"maxOpenFor,omitempty"`
	// CountStatus500 counts a 500 as a failure ("false": a 500 is the origin answering).
	CountStatus500 string `json:"countStatus500,omitempty"`
	// CountStatus429 counts a 429 as a failure, and obeys its Retry-After ("true").
	CountStatus429 string `json:"countStatus429,omitempty"`
	// SlowCall makes an answer slower than it a slow call ("": none is); SlowCallRatio of
	// slow calls in the window opens the breaker ("0.5").
	SlowCall      string `json:"slowCall,omitempty"`
	SlowCallRatio string `json:"slowCallRatio,omitempty"`
	// Probes that must succeed in a row to close it ("1"), ProbeInterval apart ("1s", give or
	// take 20%).
	Probes        string `json:"probes,omitempty"`
	ProbeInterval string `json:"probeInterval,omitempty"`
	// Paths are path prefixes ("/search"), each with a breaker of its own within its scope.
	Paths []string `json:"paths,omitempty"`
	// Overrides give scope keys parameters of their own, one string each:
	// "api.example.com: window=30s failureRatio=0.3" (names: window, minRequests,
	// failureRatio, maxFailures, openFor, maxOpenFor, slowCall, slowCallRatio, probes,
	// probeInterval). A list, not a map: hosts hold dots, which labels would split into
	// nested keys.
	Overrides []string `json:"overrides,omitempty"`
	// Unknown holds the options of this section Weir does not know, which New refuses
	// (mapstructure's remain: Traefik's decoder would otherwise drop them unseen).
	Unknown map[string]interface{} `json:"-" mapstructure:",remain"`
}

// NegativeConfig is the negative cache: a key whose fetch failed on origin health with
// nothing stored answers the same failure for TTL without contacting the origin.
type NegativeConfig struct {
	// TTL of a negative entry ("2s").
	TTL string `json:"ttl,omitempty"`
	// MaxEntries remembered at once ("10000").
	MaxEntries string `json:"maxEntries,omitempty"`
	// Unknown holds the options of this section Weir does not know, which New refuses
	// (mapstructure's remain: Traefik's decoder would otherwise drop them unseen).
	Unknown map[string]interface{} `json:"-" mapstructure:",remain"`
}

// MissRateConfig is the miss-rate detector, which sees a flood of distinct keys on one path
// (a cache-busting query flood) and logs a miss_rate_anomaly warning.
type MissRateConfig struct {
	// Window over which lookups are counted ("10s").
	Window string `json:"window,omitempty"`
	// MinMisses in a window before a path may be anomalous ("500").
	MinMisses string `json:"minMisses,omitempty"`
	// Ratio of misses to lookups at or above which it is ("0.9").
	Ratio string `json:"ratio,omitempty"`
	// Throttle gives an anomalous path one origin fetch per window ("false": report only).
	Throttle string `json:"throttle,omitempty"`
	// Bypass sends an anomalous path's first request for each URL to the origin without
	// storing or coalescing it ("true"); asked again, a URL is cached as usual.
	Bypass string `json:"bypass,omitempty"`
	// Unknown holds the options of this section Weir does not know, which New refuses
	// (mapstructure's remain: Traefik's decoder would otherwise drop them unseen).
	Unknown map[string]interface{} `json:"-" mapstructure:",remain"`
}

// StoreConfig names a store shared by every Traefik instance, instead of process memory.
type StoreConfig struct {
	// URL is redis://[user:password@]host:port/db or rediss://... for TLS ("": memory).
	URL string `json:"url,omitempty"`
	// URLFile is a file holding the URL, such as a Docker or Kubernetes secret, read when
	// the middleware is built, surrounding whitespace trimmed ("": none; not with url).
	URLFile string `json:"urlFile,omitempty"`
	// KeyPrefix prefixes every key ("weir:").
	KeyPrefix string `json:"keyPrefix,omitempty"`
	// NearCache keeps copies of entries read from the store in this Traefik, within
	// cache.maxSize, while the server pushes their invalidations ("true").
	NearCache string `json:"nearCache,omitempty"`
	// Unknown holds the options of this section Weir does not know, which New refuses
	// (mapstructure's remain: Traefik's decoder would otherwise drop them unseen).
	Unknown map[string]interface{} `json:"-" mapstructure:",remain"`
}

// AdminConfig is the operator's API, page and metrics, and who may use them.
type AdminConfig struct {
	// Path is where they answer, on every router the middleware is attached to ("/_weir";
	// "": off, the default). Requests under it never reach the origin.
	Path string `json:"path,omitempty"`
	// Token is the bearer token (Authorization: Bearer <token>, or the page's sign-in form)
	// that opens the admin and PURGE, at least 24 characters ("": none; admin.path and
	// cache.allowPurge need it).
	Token string `json:"token,omitempty"`
	// TokenFile is a file holding the token, such as a Docker or Kubernetes secret, read
	// when the middleware is built, surrounding whitespace trimmed ("": none; not with
	// token).
	TokenFile string `json:"tokenFile,omitempty"`
	// Allow narrows who may present the token to the connections from these CIDRs (none by
	// default: any address). Matched against the connection's address, never a forwarded
	// header. It needs the token: it no longer replaces it.
	Allow []string `json:"allow,omitempty"`
	// Hosts are the Host names the admin answers for; a request to any other gets 404, as
	// if no admin were there (none by default: every host).
	Hosts []string `json:"hosts,omitempty"`
	// Unknown holds the options of this section Weir does not know, which New refuses
	// (mapstructure's remain: Traefik's decoder would otherwise drop them unseen).
	Unknown map[string]interface{} `json:"-" mapstructure:",remain"`
}

// LogConfig shapes Weir's event lines: a breaker opening or closing, the store breaker, the
// near cache, a miss-rate anomaly, a configuration applied or rejected, and shed requests
// summed once a second. Never one line per request.
type LogConfig struct {
	// Format is "logfmt" (the default) or "json".
	Format string `json:"format,omitempty"`
	// Unknown holds the options of this section Weir does not know, which New refuses
	// (mapstructure's remain: Traefik's decoder would otherwise drop them unseen).
	Unknown map[string]interface{} `json:"-" mapstructure:",remain"`
}

// CreateConfig returns the configuration Traefik decodes the operator's values onto.
func CreateConfig() *Config {
	return &Config{}
}

// New builds the middleware for one router. Traefik calls it again on every configuration
// change; the cache behind name survives that.
func New(ctx context.Context, next http.Handler, config *Config, name string) (http.Handler, error) {
	s, err := config.settings()
	if err != nil {
		err = configError(err)
		core.ConfigRejected(name, config.Log.Format, err)
		return nil, err
	}
	// Not `return core.New(...)`: Yaegi v0.16.1 loses the error when a call's results are
	// returned through an interface-typed result (docs/yaegi.md).
	h, err := core.New(name, s, next)
	if err != nil {
		err = configError(err)
		core.ConfigRejected(name, config.Log.Format, err)
		return nil, err
	}
	return h.Front(), nil
}
