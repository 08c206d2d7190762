package breaker

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestSettingsDefaults(t *testing.T) {
	d := Settings{}.withDefaults()
	if d.Window != 10*time.Second || d.MinRequests != 20 || d.FailureRatio != 0.5 ||
		d.OpenFor != 5*time.Second || d.MaxOpenFor != 60*time.Second || d.Jitter != 0.2 ||
		d.ProbeTimeout != DefaultProbeTimeout || d.MaxBreakers != DefaultMaxBreakers ||
		d.Scope != ScopeHost || d.Rand == nil || d.SlowCall != 0 || d.SlowCallRatio != DefaultSlowCallRatio ||
		d.Probes != DefaultProbes || d.ProbeInterval != DefaultProbeInterval || d.MaxFailures != 0 {
		t.Errorf("withDefaults() = %+v, want the documented defaults", d)
	}
	if r := d.Rand(); r < 0 || r >= 1 {
		t.Errorf("default Rand() = %v, want a number in [0, 1)", r)
	}
}

func TestSettingsValidate(t *testing.T) {
	tests := []struct {
		desc string
		s    Settings
		want string // substring of the error; "" for none
	}{
		{desc: "zero is valid", s: Settings{}},
		{desc: "all set", s: Settings{Window: time.Second, MinRequests: 5, FailureRatio: 1, OpenFor: time.Second,
			MaxOpenFor: time.Second, Jitter: 0.5, ProbeTimeout: time.Second, Scope: "Domain", MaxBreakers: 3}},
		{desc: "negative window", s: Settings{Window: -time.Second}, want: "breaker.window: -1s must be at least 10ms"},
		{desc: "tiny window", s: Settings{Window: time.Millisecond}, want: "breaker.window: 1ms"},
		{desc: "negative min requests", s: Settings{MinRequests: -1}, want: "breaker.minRequests: -1 must not be negative"},
		{desc: "ratio above one", s: Settings{FailureRatio: 1.5}, want: "breaker.failureRatio: 1.5 must be between 0 and 1"},
		{desc: "negative ratio", s: Settings{FailureRatio: -0.1}, want: "breaker.failureRatio: -0.1"},
		{desc: "max failures", s: Settings{MaxFailures: 3}},
		{desc: "negative max failures", s: Settings{MaxFailures: -1}, want: "breaker.maxFailures: -1 must not be negative"},
		{desc: "negative open for", s: Settings{OpenFor: -time.Second}, want: "breaker.openFor: -1s"},
		{desc: "negative max open for", s: Settings{MaxOpenFor: -time.Second}, want: "breaker.maxOpenFor: -1s"},
		{desc: "max below open", s: Settings{OpenFor: 90 * time.Second}, want: "breaker.maxOpenFor: 1m0s must not be less than breaker.openFor (1m30s)"},
		{desc: "jitter of one", s: Settings{Jitter: 1}, want: "breaker.jitter: 1 must be at least 0 and less than 1"},
		{desc: "negative jitter", s: Settings{Jitter: -0.2}, want: "breaker.jitter: -0.2"},
		{desc: "negative probe timeout", s: Settings{ProbeTimeout: -time.Second}, want: "breaker.probeTimeout: -1s"},
		{desc: "negative max breakers", s: Settings{MaxBreakers: -1}, want: "breaker.maxBreakers: -1"},
		{desc: "negative consecutive failures", s: Settings{ConsecutiveFailures: -1}, want: "breaker.consecutiveFailures: -1 must not be negative"},
		{desc: "consecutive failures", s: Settings{ConsecutiveFailures: 5}},
		{desc: "slow calls", s: Settings{SlowCall: time.Second, SlowCallRatio: 1, Probes: 3, ProbeInterval: time.Second}},
		{desc: "negative slow call", s: Settings{SlowCall: -time.Second}, want: "breaker.slowCall: -1s must not be negative"},
		{desc: "slow call ratio above one", s: Settings{SlowCallRatio: 2}, want: "breaker.slowCallRatio: 2 must be between 0 and 1"},
		{desc: "negative probes", s: Settings{Probes: -1}, want: "breaker.probes: -1 must not be negative"},
		{desc: "negative probe interval", s: Settings{ProbeInterval: -time.Second}, want: "breaker.probeInterval: -1s must not be negative"},
		{desc: "unknown scope", s: Settings{Scope: "region"}, want: `breaker.scope: "region" must be one of engine, host, domain`},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			err := tc.s.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tc.want)
			}
			if !errors.Is(err, ErrInvalidSetting) {
				t.Errorf("Validate() = %v, want it to wrap ErrInvalidSetting", err)
			}
		})
	}
}

func TestNewRejectsInvalidSettings(t *testing.T) {
	if b, err := New("k", Settings{FailureRatio: 2}); err == nil || b != nil {
		t.Errorf("New() = %v, %v, want nil and an error", b, err)
	}
	if g, err := NewGroup(Settings{Scope: "planet"}); err == nil || g != nil {
		t.Errorf("NewGroup() = %v, %v, want nil and an error", g, err)
	}
}

func TestParseScope(t *testing.T) {
	tests := []struct {
		desc    string
		in      string
		want    string
		wantErr bool
	}{
		{desc: "empty is host", in: "", want: ScopeHost},
		{desc: "engine", in: "engine", want: ScopeEngine},
		{desc: "host", in: "host", want: ScopeHost},
		{desc: "domain in capitals with spaces", in: " DOMAIN ", want: ScopeDomain},
		{desc: "unknown", in: "zone", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := ParseScope(tc.in)
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), `"`+tc.in+`"`) {
					t.Fatalf("ParseScope(%q) = %q, %v, want an error naming the value", tc.in, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseScope(%q) = %q, %v, want %q", tc.in, got, err, tc.want)
			}
		})
	}
}
