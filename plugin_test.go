package weir

import (
	"context"
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
		{"negative ttl", func(c *Config) { c.Negative.TTL = "later" }, "negative.ttl", "later"},
		{"negative size", func(c *Config) { c.Negative.MaxEntries = "x" }, "negative.maxEntries", "x"},
		{"miss ratio", func(c *Config) { c.MissRate.Ratio = "2" }, "missRate.ratio", "2"},
		{"miss throttle", func(c *Config) { c.MissRate.Throttle = "sometimes" }, "missRate.throttle", "sometimes"},
		{"store url", func(c *Config) { c.Store.URL = "ftp://cache:21" }, "store.url", "ftp://cache:21"},
		{"near cache", func(c *Config) { c.Store.NearCache = "often" }, "store.nearCache", "often"},
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
	s, err := c.settings()
	if err != nil {
		t.Fatalf("settings: %v", err)
	}
	if got, want := strings.Join(s.QueryDrop, " "), "utm_source utm_medium"; got != want {
		t.Errorf("QueryDrop = %q, want %q", got, want)
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
	if got, want := s.FollowerMaxWait, 1500*time.Millisecond; got != want {
		t.Errorf("FollowerMaxWait = %s, want %s", got, want)
	}
	if got, want := s.Limiter.MaxConcurrent, 32; got != want {
		t.Errorf("Limiter.MaxConcurrent = %d, want %d", got, want)
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
