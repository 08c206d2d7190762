package core

import (
	"testing"
	"time"

	"github.com/weirproxy/weir/core/store"
)

func TestTTLSeconds(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		desc  string
		fresh time.Duration
		want  int64
	}{
		{desc: "whole seconds left", fresh: 60 * time.Second, want: 60},
		{desc: "rounds down while fresh", fresh: 1500 * time.Millisecond, want: 1},
		{desc: "under a second left", fresh: time.Millisecond, want: 0},
		{desc: "just stale", fresh: -time.Millisecond, want: -1},
		{desc: "stale by a second and a half", fresh: -1500 * time.Millisecond, want: -2},
		{desc: "stale by whole seconds", fresh: -10 * time.Second, want: -10},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			e := &store.Entry{FreshUntil: now.Add(tc.fresh)}
			if got := ttlSeconds(e, now); got != tc.want {
				t.Errorf("ttlSeconds = %d, want %d", got, tc.want)
			}
		})
	}
}
