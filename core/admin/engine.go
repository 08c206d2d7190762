package admin

import (
	"context"
	"io"
	"time"
)

// Engine is what the admin shows and steers: one middleware's engine. Every method is safe
// to call from many goroutines; errors are the operator's to read, so they name what was
// wrong ("breaker.overrides: ..." style).
type Engine interface {
	// State is a snapshot of everything the page shows.
	State(now time.Time) State
	// OpenBreaker opens the breaker of scope key by hand for d (zero: its openFor),
	// restarting its clock.
	OpenBreaker(key string, d time.Duration) error
	// CloseBreaker closes it by hand and clears its window's counts.
	CloseBreaker(key string) error
	// SetOverride gives key its own parameters, written as in breaker.overrides after the
	// key: "window=30s failureRatio=0.3 openFor=10s".
	SetOverride(key, params string) error
	// RemoveOverride returns key to the defaults.
	RemoveOverride(key string) error
	// DeclareBreaker adds key before it ever trips, so that it is listed and can be tuned.
	DeclareBreaker(key string) error
	// SetPace paces a host or a domain (name, as in pacing) at rate ("3/10s"), over the
	// configuration's pace for it until ClearPace.
	SetPace(name, rate string) error
	// ClearPace drops the operator's pace of name: the configuration's is back in force.
	ClearPace(name string) error
	// Purge drops what p names and tells how many stored entries it dropped (-1: unknown).
	Purge(ctx context.Context, p Purge) (int, error)
	// WriteMetrics writes the Prometheus text exposition (format 0.0.4).
	WriteMetrics(w io.Writer) error
}

// Purge names what to drop; exactly one field is set, but URL may come with User.
type Purge struct {
	// URL drops one URL (absolute, "https://example.com/a?b=1") with all its variants.
	URL string `json:"url,omitempty"`
	// Prefix drops every URL starting with it ("https://example.com/static/").
	Prefix string `json:"prefix,omitempty"`
	// Host drops every URL of a host, under either scheme.
	Host string `json:"host,omitempty"`
	// Tag drops every answer that carried it in Surrogate-Key or Cache-Tag.
	Tag string `json:"tag,omitempty"`
	// All drops everything this middleware stored.
	All bool `json:"all,omitempty"`
	// User drops the private cache's entries of one user: every one, or with URL that URL's
	// alone. It is the identity's value as the client sends it (the session cookie's value,
	// the Authorization header), hashed at once and never kept nor shown.
	User string `json:"user,omitempty"`
}

// State is the engine as the page shows it.
type State struct {
	Middleware string    `json:"middleware"`
	Time       time.Time `json:"time"`
	Breakers   []Breaker `json:"breakers"`
	// Defaults are the breaker parameters every key has unless overridden.
	Defaults  []Param   `json:"defaults"`
	Limiter   Limiter   `json:"limiter"`
	Anomalies []Anomaly `json:"anomalies"`
	Store     Store     `json:"store"`
	// Pacing are the paces in force, by name.
	Pacing []Pace `json:"pacing"`
	// Refusals are the reasons a protection keeps a request from the origin, each with the
	// requests it refused since the middleware started.
	Refusals []Refusal `json:"refusals"`
}

// Refusal is one reason a protection refuses requests, as Cache-Status's detail and
// weir_shed_total name it.
type Refusal struct {
	Reason string `json:"reason"`
	// Status is the answer when no stale entry stands in: 503 or 429.
	Status int `json:"status"`
	// Count is how many requests it refused since the middleware started.
	Count int64 `json:"count"`
}

// Where a pace in force comes from (Pace.Origin).
const (
	OriginConfig   = "config"
	OriginOperator = "operator"
)

// Pace is one host's or domain's pace in force.
type Pace struct {
	Name string `json:"name"`
	// Rate is as pacing writes it: "3/10s".
	Rate string `json:"rate"`
	// Origin is OriginConfig or OriginOperator.
	Origin string `json:"origin"`
	// Configured is the configuration's rate for a name an operator paces; empty when it
	// has none.
	Configured string `json:"configured,omitempty"`
}

// Breaker is one scope key's breaker.
type Breaker struct {
	Key string `json:"key"`
	// State is "closed", "open" or "half-open".
	State string `json:"state"`
	// OpenLeft is how long it stays open, in seconds; zero unless open.
	OpenLeft float64 `json:"openLeftSeconds"`
	// OpenedBy is "auto" or "manual" while open; empty otherwise.
	OpenedBy string `json:"openedBy,omitempty"`
	// LastStatus is the status of the last failure it counted (0: none, or a transport
	// failure).
	LastStatus int    `json:"lastStatus,omitempty"`
	Trips      uint64 `json:"trips"`
	// Requests and Failures are the window's counts.
	Requests int `json:"requests"`
	Failures int `json:"failures"`
	// Slow is how many of them were slower than breaker.slowCall.
	Slow int `json:"slow,omitempty"`
	// ProbesOK is how many probes in a row succeeded while half-open, of breaker.probes.
	ProbesOK int `json:"probesOK,omitempty"`
	// Reason is why it last opened on its own ("failure-ratio", "max-failures",
	// "slow-calls", "retry-after", "probe-failed", "probe-slow"); empty before it ever did.
	Reason string `json:"reason,omitempty"`
	// Declared marks a key added by hand or given an override.
	Declared bool `json:"declared,omitempty"`
	// Params are its effective parameters.
	Params []Param `json:"params"`
}

// Param is one effective parameter.
type Param struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	// Override marks a value that is the key's own, not the default.
	Override bool `json:"override,omitempty"`
}

// Limiter is the origin concurrency budget's occupancy.
type Limiter struct {
	InFlight      int `json:"inFlight"`
	Queued        int `json:"queued"`
	MaxConcurrent int `json:"maxConcurrent"`
	MaxQueue      int `json:"maxQueue"`
	Uploads       int `json:"uploads"`
	MaxUpload     int `json:"maxUpload"`
	// Partitions are the busiest partitions (scheme + host + path), Hosts the busiest hosts.
	Partitions []Occupant `json:"partitions"`
	Hosts      []Occupant `json:"hosts"`
}

// Occupant is a partition's or a host's share of the limiter.
type Occupant struct {
	Key      string `json:"key"`
	InFlight int    `json:"inFlight"`
	Queued   int    `json:"queued"`
}

// Anomaly is a partition the miss-rate detector finds anomalous.
type Anomaly struct {
	Partition string  `json:"partition"`
	Misses    int     `json:"misses"`
	Lookups   int     `json:"lookups"`
	Ratio     float64 `json:"ratio"`
	Throttled bool    `json:"throttled"`
}

// Store is the cache store's state.
type Store struct {
	// Kind is "memory" or "redis".
	Kind string `json:"kind"`
	// Breaker is the store breaker's state: "closed", "open" or "half-open" ("" for memory).
	Breaker string `json:"breaker,omitempty"`
	// NearCache is "live", "lost" or "off" for a shared store.
	NearCache string `json:"nearCache,omitempty"`
	// Entries and Bytes are what this process holds (the memory store or the near cache).
	Entries int   `json:"entries"`
	Bytes   int64 `json:"bytes"`
}
