package weir

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestNewRejectsBadValues(t *testing.T) {
	tests := []struct {
		desc  string
		set   func(c *Config)
		field string
		value string
	}{
		{"size", func(c *Config) { c.Cache.MaxSize = "lots" }, "cache.maxSize", "lots"},
		{"negative size", func(c *Config) { c.Cache.MaxEntrySize = "-1MiB" }, "cache.maxEntrySize", "-1MiB"},
		{"duration", func(c *Config) { c.Coalesce.LeaderMaxAge = "10 seconds" }, "coalesce.leaderMaxAge", "10 seconds"},
		{"negative duration", func(c *Config) { c.Timeouts.Origin = "-5s" }, "timeouts.origin", "-5s"},
		{"NaN duration", func(c *Config) { c.Coalesce.FollowerMaxWait = "NaN" }, "coalesce.followerMaxWait", "NaN"},
		{"huge duration", func(c *Config) { c.Coalesce.FollowerMaxWait = "1e300" }, "coalesce.followerMaxWait", "1e300"},
		{"NaN size", func(c *Config) { c.Cache.MaxSize = "NaN" }, "cache.maxSize", "NaN"},
		{"count", func(c *Config) { c.Limiter.MaxConcurrent = "many" }, "limiter.maxConcurrent", "many"},
		{"negative count", func(c *Config) { c.Limiter.MaxUpload = "-3" }, "limiter.maxUpload", "-3"},
		{"queue wait", func(c *Config) { c.Limiter.MaxQueueWait = "soon" }, "limiter.maxQueueWait", "soon"},
		{"queue share", func(c *Config) { c.Limiter.MaxQueuePerPartition = "half" }, "limiter.maxQueuePerPartition", "half"},
		{"zero queue share", func(c *Config) { c.Limiter.MaxQueuePerPartition = "0" }, "limiter.maxQueuePerPartition", "0"},
		{"negative queue share", func(c *Config) { c.Limiter.MaxQueuePerPartition = "-1" }, "limiter.maxQueuePerPartition", "-1"},
		{"queue share over the default queue", func(c *Config) { c.Limiter.MaxQueuePerPartition = "1025" }, "limiter.maxQueuePerPartition", "1025"},
		{"queue share over the queue", func(c *Config) {
			c.Limiter.MaxQueue = "100"
			c.Limiter.MaxQueuePerPartition = "101"
		}, "limiter.maxQueuePerPartition", "101"},
		{"breaker scope", func(c *Config) { c.Breaker.Scope = "galaxy" }, "breaker.scope", "galaxy"},
		{"breaker ratio", func(c *Config) { c.Breaker.FailureRatio = "1.5" }, "breaker.failureRatio", "1.5"},
		{"breaker flag", func(c *Config) { c.Breaker.CountStatus500 = "maybe" }, "breaker.countStatus500", "maybe"},
		{"breaker window", func(c *Config) { c.Breaker.Window = "-1s" }, "breaker.window", "-1s"},
		{"breaker 429 flag", func(c *Config) { c.Breaker.CountStatus429 = "perhaps" }, "breaker.countStatus429", "perhaps"},
		{"breaker max failures", func(c *Config) { c.Breaker.MaxFailures = "-1" }, "breaker.maxFailures", "-1"},
		{"breaker max failures not a count", func(c *Config) { c.Breaker.MaxFailures = "three" }, "breaker.maxFailures", "three"},
		{"breaker slow call", func(c *Config) { c.Breaker.SlowCall = "slow" }, "breaker.slowCall", "slow"},
		{"breaker slow call ratio", func(c *Config) { c.Breaker.SlowCallRatio = "0" }, "breaker.slowCallRatio", "0"},
		{"breaker probes", func(c *Config) { c.Breaker.Probes = "three" }, "breaker.probes", "three"},
		{"breaker probe interval", func(c *Config) { c.Breaker.ProbeInterval = "-2s" }, "breaker.probeInterval", "-2s"},
		{"breaker paths", func(c *Config) { c.Breaker.Paths = []string{"/ok,search"} }, "breaker.paths[1]", "search"},
		{"cache paths", func(c *Config) { c.Cache.Paths = []string{"/static/,static/"} }, "cache.paths", "static/"},
		{"cache paths star in a directory", func(c *Config) { c.Cache.Paths = []string{"/a/*/b"} }, "cache.paths", "/a/*/b"},
		{"cache ttls without a duration", func(c *Config) { c.Cache.TTLs = []string{"/static/*"} }, "cache.ttls", `"/static/*" must be pattern=duration such as "/static/*=1h"`},
		{"cache ttls bad duration", func(c *Config) { c.Cache.TTLs = []string{"*.js=soon"} }, "cache.ttls", "*.js=soon"},
		{"cache ttls negative", func(c *Config) { c.Cache.TTLs = []string{"*.js=-1d"} }, "cache.ttls", "*.js=-1d"},
		{"cache ttls bad pattern", func(c *Config) { c.Cache.TTLs = []string{"static=1h"} }, "cache.ttls", "static=1h"},
		{"negative ttl", func(c *Config) { c.Negative.TTL = "later" }, "negative.ttl", "later"},
		{"negative size", func(c *Config) { c.Negative.MaxEntries = "x" }, "negative.maxEntries", "x"},
		{"miss ratio", func(c *Config) { c.MissRate.Ratio = "2" }, "missRate.ratio", "2"},
		{"miss throttle", func(c *Config) { c.MissRate.Throttle = "sometimes" }, "missRate.throttle", "sometimes"},
		{"miss bypass", func(c *Config) { c.MissRate.Bypass = "maybe" }, "missRate.bypass", "maybe"},
		{"store url", func(c *Config) { c.Store.URL = "ftp://cache:21" }, "store.url", "ftp://cache:21"},
		{"near cache", func(c *Config) { c.Store.NearCache = "often" }, "store.nearCache", "often"},
		{"client budget", func(c *Config) { c.Budgets.Client = "200 per 10s" }, "budgets.client", "200 per 10s"},
		{"client budget period", func(c *Config) { c.Budgets.Client = "200/5s" }, "budgets.client", "200/5s"},
		{"zero host budget", func(c *Config) { c.Budgets.Host = "0/10s" }, "budgets.host", "0/10s"},
		{"budget burst", func(c *Config) { c.Budgets.Burst = "-2s" }, "budgets.burst", "-2s"},
		{"client source", func(c *Config) { c.Budgets.ClientSource = "cookie:id" }, "budgets.clientSource", "cookie:id"},
		{"forwarded depth", func(c *Config) { c.Budgets.ClientSource = "forwardedDepth:0" }, "budgets.clientSource", "forwardedDepth:0"},
		{"exempt", func(c *Config) { c.Budgets.Exempt = []string{"10.0.0.0/33"} }, "budgets.exempt", "10.0.0.0/33"},
		{"budgets shared flag", func(c *Config) { c.Budgets.Shared = "sometimes" }, "budgets.shared", "sometimes"},
		{"budgets shared without a store", func(c *Config) {
			c.Budgets.Client = "10/1s"
			c.Budgets.Shared = "true"
		}, "budgets.shared", "true"},
		{"admission knee", func(c *Config) { c.Admission.KneeInFlight = "lots" }, "admission.kneeInFlight", "lots"},
		{"admission lag", func(c *Config) { c.Admission.LagKnee = "soon" }, "admission.lagKnee", "soon"},
		{"admission lag order", func(c *Config) {
			c.Admission.KneeInFlight = "100"
			c.Admission.LagLimit = "5ms"
		}, "admission.lagLimit", "5ms"},
		{"admission protect", func(c *Config) { c.Admission.Protect = []string{"health"} }, "admission.protect", "health"},
		{"pacing without rate", func(c *Config) { c.Pacing = []string{"feeds.example.com"} }, "pacing", "feeds.example.com"},
		{"pacing rate", func(c *Config) { c.Pacing = []string{"feeds.example.com=3/7s"} }, "pacing", "feeds.example.com=3/7s"},
		// Refused by the core rather than by the configuration's parser: the same form.
		{"breaker window too short", func(c *Config) { c.Breaker.Window = "1ms" }, "breaker.window", "1ms"},
		{"breaker maxOpenFor under openFor", func(c *Config) {
			c.Breaker.OpenFor = "10s"
			c.Breaker.MaxOpenFor = "5s"
		}, "breaker.maxOpenFor", "5s"},
		{"breaker override", func(c *Config) { c.Breaker.Overrides = []string{"api.example.com: window=1ms"} }, "breaker.overrides[0]", "1ms"},
		{"admin path", func(c *Config) {
			c.Admin.Path = "weir"
			c.Admin.Token = "secret"
		}, "admin.path", "weir"},
		{"admin path without access", func(c *Config) { c.Admin.Path = "/_weir" }, "admin.path", "/_weir"},
		{"log format", func(c *Config) { c.Log.Format = "xml" }, "log.format", "xml"},
		{"purge without access", func(c *Config) { c.Cache.AllowPurge = "true" }, "cache.allowPurge", "true"},
		{"a token file with the token", func(c *Config) {
			c.Admin.Token = "a-token-of-at-least-24-chars"
			c.Admin.TokenFile = "/run/secrets/weir_admin_token"
		}, "admin.tokenFile", "/run/secrets/weir_admin_token"},
		{"admin hosts with a port", func(c *Config) { c.Admin.Hosts = []string{"ops.example.com:8443"} }, "admin.hosts", "ops.example.com:8443"},
		{"sentinel without a master", func(c *Config) { c.Store.URL = "redis-sentinel://a/" }, "store.url", "redis-sentinel://a/"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			c := CreateConfig()
			tt.set(c)
			_, err := New(context.Background(), http.NotFoundHandler(), c, "bad-"+tt.desc)
			if err == nil {
				t.Fatalf("New accepted %s=%q", tt.field, tt.value)
			}
			if !strings.Contains(err.Error(), tt.field) || !strings.Contains(err.Error(), tt.value) {
				t.Errorf("error %q does not name %s and %q", err, tt.field, tt.value)
			}
			// One form whichever part of Weir refused it: the prefix, then the field, and
			// no sentinel's text left at either end.
			if want := "weir: invalid configuration: " + tt.field; !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error %q, want it to begin %q", err, want)
			}
			if strings.Contains(err.Error(), "invalid setting") || strings.HasSuffix(err.Error(), "log format") {
				t.Errorf("error %q still carries a sentinel's text", err)
			}
			if !errors.Is(err, errConfig) {
				t.Errorf("error %q does not wrap errConfig", err)
			}
			// Check, what the provider plugin checks its presets with, refuses it with
			// New's own message.
			if checkErr := c.Check(); checkErr == nil || checkErr.Error() != err.Error() {
				t.Errorf("Check: err = %v, want New's %q", checkErr, err)
			}
		})
	}
}

// TestCheckAcceptsWhatNewAccepts: a configuration New builds, Check passes, a shared
// store's URL included (Check dials nothing).
func TestCheckAcceptsWhatNewAccepts(t *testing.T) {
	tests := []struct {
		desc string
		set  func(c *Config)
	}{
		{desc: "empty", set: func(c *Config) {}},
		{desc: "admin with access", set: func(c *Config) {
			c.Admin.Path = "/_weir"
			c.Admin.Token = "a-token-of-at-least-24-chars"
			c.Admin.Allow = []string{"127.0.0.1/32"}
		}},
		{desc: "a store nobody listens on", set: func(c *Config) { c.Store.URL = "redis://127.0.0.1:1/0" }},
		{desc: "a cluster", set: func(c *Config) { c.Store.URL = "redis-cluster://127.0.0.1:1,127.0.0.1:2/" }},
		{desc: "limiter slots, as ExampleConfig_Check", set: func(c *Config) { c.Limiter.MaxConcurrent = "8" }},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			c := CreateConfig()
			tc.set(c)
			if err := c.Check(); err != nil {
				t.Errorf("Check: %v, want nil", err)
			}
		})
	}
}

// TestZeroInMessages: where 0 is accepted, an error says what 0 means instead of asking for
// "at least 1", and 0 is indeed accepted.
func TestZeroInMessages(t *testing.T) {
	tests := []struct {
		desc string
		set  func(c *Config, v string)
		bad  string
		want string
	}{
		{"a count whose 0 is the default", func(c *Config, v string) { c.Limiter.MaxUpload = v }, "-3", "(0 or empty: the default)"},
		{"the host cap, whose 0 is no cap", func(c *Config, v string) { c.Limiter.MaxPerHost = v }, "-1", "(0 or empty: no cap)"},
		{"a duration whose 0 is the default", func(c *Config, v string) { c.Timeouts.Origin = v }, "-5s", "(0 or empty: the default)"},
		{"the default freshness, whose 0 is none", func(c *Config, v string) { c.Cache.DefaultTTL = v }, "-1", "(0 or empty: none)"},
		{"a size", func(c *Config, v string) { c.Cache.MaxSize = v }, "-1MiB", "(0 or empty: the default)"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			c := CreateConfig()
			tc.set(c, tc.bad)
			_, err := c.settings()
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "at least 1") {
				t.Errorf("settings with %q: error %v, want one saying %q", tc.bad, err, tc.want)
			}
			c = CreateConfig()
			tc.set(c, "0")
			if _, err := c.settings(); err != nil {
				t.Errorf("settings with \"0\": %v, want it accepted as the message says", err)
			}
		})
	}
}

func TestConfigFromLabelStrings(t *testing.T) {
	c := CreateConfig()
	// Docker labels deliver every value as a string, lists comma-separated.
	c.Key.QueryDrop = []string{"utm_source,utm_medium"}
	c.Cache.MaxSize = "64MiB"
	c.Cache.MaxEntrySize = "512KiB"
	c.Cache.DefaultTTL = "30"
	c.Coalesce.FollowerMaxWait = "1500ms"
	c.Limiter.MaxConcurrent = "32"
	c.Store.NearCache = "false"
	c.Breaker.Paths = []string{"/search, /checkout/"}
	c.Breaker.CountStatus429 = "false"
	c.Breaker.SlowCall = "200ms"
	c.Breaker.SlowCallRatio = "0.3"
	c.Breaker.Probes = "3"
	c.Breaker.ProbeInterval = "2"
	c.Breaker.MaxFailures = " 3 "
	c.Cache.Paths = []string{"/static/, *.js"}
	c.Cache.TTLs = []string{"/static/*=1h, *.js=1d,/api/*=5, /q=a/*=1d12h"}
	s, err := c.settings()
	if err != nil {
		t.Fatalf("settings: %v", err)
	}
	if got, want := strings.Join(s.QueryDrop, " "), "utm_source utm_medium"; got != want {
		t.Errorf("QueryDrop = %q, want %q", got, want)
	}
	if got, want := strings.Join(s.BreakerPaths, " "), "/checkout/ /search"; got != want {
		t.Errorf("BreakerPaths = %q, want %q (longest first)", got, want)
	}
	if b := s.Breaker; !s.BreakerIgnoreStatus429 || b.SlowCall != 200*time.Millisecond || b.SlowCallRatio != 0.3 ||
		b.Probes != 3 || b.ProbeInterval != 2*time.Second || b.MaxFailures != 3 {
		t.Errorf("breaker settings = %+v, ignore 429 %v; want slowCall 200ms, ratio 0.3, 3 probes 2s apart, maxFailures 3, 429 ignored",
			b, s.BreakerIgnoreStatus429)
	}
	if !s.StoreNoNearCache {
		t.Errorf("StoreNoNearCache = false with store.nearCache \"false\", want true")
	}
	if got, want := s.MaxSize, int64(64<<20); got != want {
		t.Errorf("MaxSize = %d, want %d", got, want)
	}
	if got, want := s.MaxEntrySize, int64(512<<10); got != want {
		t.Errorf("MaxEntrySize = %d, want %d", got, want)
	}
	if got, want := s.DefaultTTL, 30*time.Second; got != want {
		t.Errorf("DefaultTTL = %s, want %s", got, want)
	}
	if got, want := strings.Join(s.CachePaths, " "), "/static/ *.js"; got != want {
		t.Errorf("CachePaths = %q, want %q", got, want)
	}
	if got, want := fmt.Sprint(s.CacheTTLs), "[{/static/* 1h0m0s} {*.js 24h0m0s} {/api/* 5s} {/q=a/* 36h0m0s}]"; got != want {
		t.Errorf("CacheTTLs = %s, want %s", got, want)
	}
	if got, want := s.FollowerMaxWait, 1500*time.Millisecond; got != want {
		t.Errorf("FollowerMaxWait = %s, want %s", got, want)
	}
	if got, want := s.Limiter.MaxConcurrent, 32; got != want {
		t.Errorf("Limiter.MaxConcurrent = %d, want %d", got, want)
	}
}

// TestBudgetsFromLabelStrings: budgets.* and pacing as labels deliver them.
func TestBudgetsFromLabelStrings(t *testing.T) {
	c := CreateConfig()
	c.Budgets.Client = "200/10s"
	c.Budgets.Host = "5000/1m"
	c.Budgets.Burst = "2s"
	c.Budgets.ClientSource = "forwardedDepth:2"
	c.Budgets.Exempt = []string{"10.0.0.0/8, 2001:db8::/32"}
	c.Pacing = []string{"Feeds.Example.com=3/10s,example.org=1/1s"}
	s, err := c.settings()
	if err != nil {
		t.Fatalf("settings: %v", err)
	}
	b := s.Budgets
	if b.Client.N != 200 || b.Client.Per != 10*time.Second || b.Host.N != 5000 || b.Host.Per != time.Minute {
		t.Errorf("rates = %+v, %+v; want 200/10s, 5000/1m", b.Client, b.Host)
	}
	if b.Burst != 2*time.Second || b.ForwardedDepth != 2 || b.ClientHeader != "" {
		t.Errorf("burst %s, depth %d, header %q; want 2s, 2, none", b.Burst, b.ForwardedDepth, b.ClientHeader)
	}
	if len(b.Exempt) != 2 || b.Exempt[1].String() != "2001:db8::/32" {
		t.Errorf("exempt = %v, want 10.0.0.0/8 and 2001:db8::/32", b.Exempt)
	}
	if len(s.Pacing) != 2 || s.Pacing[0].Name != "feeds.example.com" || s.Pacing[0].Rate.N != 3 || s.Pacing[1].Rate.Per != time.Second {
		t.Errorf("pacing = %+v, want feeds.example.com at 3/10s and example.org at 1/1s", s.Pacing)
	}
	c.Budgets.ClientSource = "header:X-Real-IP"
	if s, err = c.settings(); err != nil || s.Budgets.ClientHeader != "X-Real-IP" {
		t.Errorf("header:X-Real-IP: header %q, error %v; want X-Real-IP", s.Budgets.ClientHeader, err)
	}
}

// TestLimiterQueuePerPartitionFromConfig: limiter.maxQueuePerPartition reaches the limiter's
// settings as written; unset, the limiter's own default (maxQueue/8) applies.
func TestLimiterQueuePerPartitionFromConfig(t *testing.T) {
	tests := []struct {
		desc     string
		maxQueue string
		share    string
		want     int
	}{
		{desc: "unset: the limiter's default", share: "", want: 0},
		{desc: "a number", share: "64", want: 64},
		{desc: "spaces around it", share: " 32 ", want: 32},
		{desc: "one", share: "1", want: 1},
		{desc: "the whole default queue", share: "1024", want: 1024},
		{desc: "the whole of a queue set", maxQueue: "100", share: "100", want: 100},
		{desc: "more than the default queue, within a larger one", maxQueue: "5000", share: "2000", want: 2000},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			c := CreateConfig()
			c.Limiter.MaxQueue = tc.maxQueue
			c.Limiter.MaxQueuePerPartition = tc.share
			s, err := c.settings()
			if err != nil {
				t.Fatalf("settings with limiter.maxQueuePerPartition %q: %v", tc.share, err)
			}
			if got := s.Limiter.MaxQueuePerPartition; got != tc.want {
				t.Errorf("Limiter.MaxQueuePerPartition = %d, want %d", got, tc.want)
			}
			if _, err := New(context.Background(), http.NotFoundHandler(), c, "queue-share-"+tc.desc); err != nil {
				t.Errorf("New with limiter.maxQueuePerPartition %q: %v", tc.share, err)
			}
		})
	}
}

func TestNewServesThroughTheCache(t *testing.T) {
	calls := 0
	origin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		w.Header().Set("Cache-Control", "max-age=60")
		w.Write([]byte("hello"))
	})
	h, err := New(context.Background(), origin, CreateConfig(), "plugin-serves")
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	for i, want := range []string{"Weir; fwd=uri-miss; stored", "Weir; hit; ttl=60"} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://example.com/p", nil))
		if got := w.Header().Get("Cache-Status"); !strings.HasPrefix(got, strings.TrimSuffix(want, "60")) {
			t.Errorf("request %d: Cache-Status = %q, want %q", i, got, want)
		}
	}
	if calls != 1 {
		t.Errorf("origin calls = %d, want 1", calls)
	}
}

// The plugin catalog loads Weir with no outside service: New must succeed with the shared
// store unreachable, and requests must still be served: from the origin once, then from
// the instance's own memory, which keeps caching while the store is lost (store.Fallback).
func TestNewWithStoreDown(t *testing.T) {
	c := CreateConfig()
	c.Store.URL = "redis://127.0.0.1:1/0"
	calls := 0
	origin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		w.Header().Set("Cache-Control", "max-age=60")
		w.Write([]byte("from origin"))
	})
	h, err := New(context.Background(), origin, c, "plugin-store-down")
	if err != nil {
		t.Fatalf("New with the store down: %v", err)
	}
	for i := 0; i < 3; i++ {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://example.com/down", nil))
		if w.Code != http.StatusOK || w.Body.String() != "from origin" {
			t.Fatalf("request %d: %d %q, want 200 from origin", i, w.Code, w.Body.String())
		}
	}
	if calls != 1 {
		t.Errorf("origin calls = %d, want 1 (kept in memory while the store is down)", calls)
	}
}
