package core

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/store"
)

func TestNewRejectsNegativeSettings(t *testing.T) {
	tests := []struct {
		desc  string
		s     Settings
		field string
	}{
		{desc: "DefaultTTL", s: Settings{DefaultTTL: -time.Second}, field: "cache.defaultTTL"},
		{desc: "LeaderMaxAge", s: Settings{LeaderMaxAge: -time.Second}, field: "coalesce.leaderMaxAge"},
		{desc: "FollowerMaxWait", s: Settings{FollowerMaxWait: -time.Second}, field: "coalesce.followerMaxWait"},
		{desc: "HitForMissTTL", s: Settings{HitForMissTTL: -time.Second}, field: "coalesce.hitForMissTTL"},
		{desc: "OriginTimeout", s: Settings{OriginTimeout: -time.Second}, field: "timeouts.origin"},
		{desc: "StoreTimeout", s: Settings{StoreTimeout: -time.Second}, field: "timeouts.store"},
		{desc: "MaxSize", s: Settings{MaxSize: -1}, field: "cache.maxSize"},
		{desc: "MaxEntrySize", s: Settings{MaxEntrySize: -1}, field: "cache.maxEntrySize"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			h, err := New(uniqueEngineName(t), tc.s, http.NotFoundHandler())
			if h != nil || !errors.Is(err, ErrSettings) {
				t.Fatalf("New = %v, %v; want nil and an error wrapping ErrSettings", h, err)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Errorf("error %q does not name %s", err, tc.field)
			}
		})
	}
}

func TestSettingsDefaults(t *testing.T) {
	tests := []struct {
		desc  string
		in    Settings
		check func(t *testing.T, s Settings)
	}{
		{desc: "zero", in: Settings{}, check: func(t *testing.T, s Settings) {
			if s.MaxSize != store.DefaultMaxSize || s.MaxEntrySize != store.DefaultMaxEntrySize {
				t.Errorf("sizes = %d, %d; want the store's defaults", s.MaxSize, s.MaxEntrySize)
			}
			if s.LeaderMaxAge != DefaultLeaderMaxAge || s.FollowerMaxWait != DefaultFollowerMaxWait ||
				s.HitForMissTTL != DefaultHitForMissTTL || s.OriginTimeout != DefaultOriginTimeout || s.StoreTimeout != DefaultStoreTimeout {
				t.Errorf("durations = %+v, want the defaults", s)
			}
			if s.Clients.BodyIdle != DefaultBodyIdle || s.Warm.Timeout != DefaultWarmTimeout {
				t.Errorf("clients.bodyIdle, warm.timeout = %s, %s; want %s, %s", s.Clients.BodyIdle, s.Warm.Timeout, DefaultBodyIdle, DefaultWarmTimeout)
			}
			if s.DefaultTTL != 0 {
				t.Errorf("DefaultTTL = %s, want 0: no TTL invented", s.DefaultTTL)
			}
			if s.Now == nil || s.Log == nil {
				t.Error("Now or Log left nil")
			}
		}},
		{desc: "entry limit capped by the budget", in: Settings{MaxSize: 1000, MaxEntrySize: 5000}, check: func(t *testing.T, s Settings) {
			if s.MaxEntrySize != 1000 {
				t.Errorf("MaxEntrySize = %d, want 1000", s.MaxEntrySize)
			}
		}},
		{desc: "waits capped by the origin timeout", in: Settings{OriginTimeout: time.Second, LeaderMaxAge: time.Minute, FollowerMaxWait: time.Minute},
			check: func(t *testing.T, s Settings) {
				if s.LeaderMaxAge != time.Second || s.FollowerMaxWait != time.Second {
					t.Errorf("LeaderMaxAge, FollowerMaxWait = %s, %s; want 1s each", s.LeaderMaxAge, s.FollowerMaxWait)
				}
			}},
		{desc: "set values kept", in: Settings{LeaderMaxAge: 3 * time.Second, HitForMissTTL: time.Minute, DefaultTTL: time.Hour},
			check: func(t *testing.T, s Settings) {
				if s.LeaderMaxAge != 3*time.Second || s.HitForMissTTL != time.Minute || s.DefaultTTL != time.Hour {
					t.Errorf("settings = %+v, want the values set", s)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			tc.check(t, tc.in.withDefaults())
		})
	}
}
