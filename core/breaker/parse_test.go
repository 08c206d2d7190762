package breaker

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseOverride(t *testing.T) {
	tests := []struct {
		desc string
		in   string
		key  string
		o    Override
		err  string // substring of the error; "" for none
	}{
		{desc: "one setting", in: "api.example.com: window=30s", key: "api.example.com", o: Override{Window: 30 * time.Second}},
		{desc: "every setting", in: "api.example.com: window=1m minRequests=50 failureRatio=0.3 openFor=10s maxOpenFor=2m",
			key: "api.example.com", o: Override{Window: time.Minute, MinRequests: 50, FailureRatio: 0.3, OpenFor: 10 * time.Second, MaxOpenFor: 2 * time.Minute}},
		{desc: "host with port", in: "api.example.com:8443: openFor=10s", key: "api.example.com", o: Override{OpenFor: 10 * time.Second}},
		{desc: "IPv6 with port", in: "[2001:DB8:0::1]:8443: minRequests=5", key: "[2001:db8::1]", o: Override{MinRequests: 5}},
		{desc: "bare IPv6", in: "2001:db8::1: minRequests=5", key: "[2001:db8::1]", o: Override{MinRequests: 5}},
		{desc: "IPv4 with port", in: "192.0.2.7:80: failureRatio=1", key: "192.0.2.7", o: Override{FailureRatio: 1}},
		{desc: "case folded, trailing dot", in: "API.Example.COM.: window=20s", key: "api.example.com", o: Override{Window: 20 * time.Second}},
		{desc: "names in any case", in: "a: WINDOW=20s minrequests=3 FailureRatio=0.5 openfor=1s MaxOpenFor=1s", key: "a",
			o: Override{Window: 20 * time.Second, MinRequests: 3, FailureRatio: 0.5, OpenFor: time.Second, MaxOpenFor: time.Second}},
		{desc: "slow calls and probes", in: "api.example.com: slowCall=2s slowCallRatio=0.4 probes=3 probeInterval=500ms", key: "api.example.com",
			o: Override{SlowCall: 2 * time.Second, SlowCallRatio: 0.4, Probes: 3, ProbeInterval: 500 * time.Millisecond}},
		{desc: "max failures", in: "api.example.com: maxFailures=3 window=60s", key: "api.example.com",
			o: Override{MaxFailures: 3, Window: time.Minute}},
		{desc: "max failures in any case", in: "a: MAXFAILURES=2", key: "a", o: Override{MaxFailures: 2}},
		{desc: "spaces and tabs", in: "  a:\twindow=20s   openFor=1s  ", key: "a", o: Override{Window: 20 * time.Second, OpenFor: time.Second}},
		{desc: "space before the colon", in: "a : openFor=1s", key: "a", o: Override{OpenFor: time.Second}},
		{desc: "key alone declares", in: "api.example.com", key: "api.example.com"},
		{desc: "key and port alone", in: "api.example.com:8443", key: "api.example.com"},
		{desc: "key and colon alone", in: "api.example.com:", key: "api.example.com"},
		{desc: "key and colon and space", in: "api.example.com: ", key: "api.example.com"},

		{desc: "empty", in: "", err: "no key before the colon"},
		{desc: "no key", in: ": window=30s", err: "no key before the colon"},
		{desc: "colon without space", in: "api.example.com:window=30s", err: `no ": " between the key and its settings`},
		{desc: "no colon", in: "api.example.com window=30s", err: `no ": " between the key and its settings`},
		{desc: "a URL", in: "https://api.example.com: window=30s", err: `key "https://api.example.com": "/" is not allowed`},
		{desc: "space in the key", in: "api example.com: window=30s", err: `key "api example.com": " " is not allowed`},
		{desc: "non-ASCII key", in: "bücher.example: window=30s", err: `is not allowed: want a host, as ASCII (punycode)`},
		{desc: "no host", in: ".: window=30s", err: `key "." names no host`},
		{desc: "unknown name", in: "a: threshold=0.3", err: `"threshold": unknown name: want window, minRequests, failureRatio, maxFailures, openFor, maxOpenFor, slowCall, slowCallRatio, probes or probeInterval`},
		{desc: "no equals", in: "a: window", err: `"window": want name=value`},
		{desc: "no name", in: "a: =30s", err: `"=30s": want name=value`},
		{desc: "no value", in: "a: window=", err: `window: "" is not a duration such as 30s`},
		{desc: "bad duration", in: "a: openFor=10", err: `openFor: "10" is not a duration such as 30s`},
		{desc: "bad count", in: "a: minRequests=1.5", err: `minRequests: "1.5" is not a whole number`},
		{desc: "bad ratio", in: "a: failureRatio=30%", err: `failureRatio: "30%" is not a number`},
		{desc: "zero", in: "a: minRequests=0", err: `minRequests: "0": zero is the group's default: leave minRequests out`},
		{desc: "zero duration", in: "a: window=0s", err: `window: "0s": zero is the group's default`},
		{desc: "given twice", in: "a: window=1s Window=2s", err: `"Window=2s": Window is given twice`},
		{desc: "tiny window", in: "a: window=1ms", err: "breaker.window: 1ms must be at least 10ms"},
		{desc: "negative", in: "a: minRequests=-1", err: "breaker.minRequests: -1 must not be negative"},
		{desc: "ratio above one", in: "a: failureRatio=1.5", err: "breaker.failureRatio: 1.5 must be between 0 and 1"},
		{desc: "ratio not a number", in: "a: failureRatio=NaN", err: "breaker.failureRatio: NaN must be between 0 and 1"},
		{desc: "bad max failures", in: "a: maxFailures=three", err: `maxFailures: "three" is not a whole number`},
		{desc: "zero max failures", in: "a: maxFailures=0", err: `maxFailures: "0": zero is the group's default: leave maxFailures out`},
		{desc: "negative max failures", in: "a: maxFailures=-1", err: "breaker.maxFailures: -1 must not be negative"},
		{desc: "bad probes", in: "a: probes=two", err: `probes: "two" is not a whole number`},
		{desc: "negative probes", in: "a: probes=-1", err: "breaker.probes: -1 must not be negative"},
		{desc: "slow ratio above one", in: "a: slowCallRatio=2", err: "breaker.slowCallRatio: 2 must be between 0 and 1"},
		{desc: "bad slow call", in: "a: slowCall=slow", err: `slowCall: "slow" is not a duration such as 30s`},
		{desc: "zero probe interval", in: "a: probeInterval=0s", err: `probeInterval: "0s": zero is the group's default`},
		{desc: "max below open", in: "a: openFor=1m maxOpenFor=10s", err: "breaker.maxOpenFor: 10s must not be less than breaker.openFor (1m0s)"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			key, o, err := ParseOverride(tc.in)
			if tc.err == "" {
				if err != nil || key != tc.key || o != tc.o {
					t.Fatalf("ParseOverride(%q) = %q, %+v, %v; want %q, %+v, nil", tc.in, key, o, err, tc.key, tc.o)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("ParseOverride(%q) = %v, want an error containing %q", tc.in, err, tc.err)
			}
			if !strings.HasPrefix(err.Error(), "breaker.overrides: ") || !errors.Is(err, ErrInvalidSetting) {
				t.Errorf("ParseOverride(%q) = %v, want it to name breaker.overrides and wrap ErrInvalidSetting", tc.in, err)
			}
			if key != "" || o != (Override{}) {
				t.Errorf("ParseOverride(%q) with an error = %q, %+v; want nothing", tc.in, key, o)
			}
		})
	}
}

// The part after the key reads alone as it does in an entry.
func TestParseOverrideParams(t *testing.T) {
	tests := []struct {
		desc string
		in   string
		want Override
		err  string
	}{
		{desc: "empty", in: "", want: Override{}},
		{desc: "spaces", in: " \t ", want: Override{}},
		{desc: "two", in: "openFor=10s failureRatio=0.25", want: Override{OpenFor: 10 * time.Second, FailureRatio: 0.25}},
		{desc: "bad", in: "openFor=10s minRequests=many", err: `minRequests: "many" is not a whole number: invalid setting`},
		{desc: "out of range", in: "failureRatio=2", err: "breaker.failureRatio: 2 must be between 0 and 1"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := ParseOverrideParams(tc.in)
			if tc.err == "" {
				if err != nil || got != tc.want {
					t.Fatalf("ParseOverrideParams(%q) = %+v, %v; want %+v, nil", tc.in, got, err, tc.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrInvalidSetting) || got != (Override{}) {
				t.Fatalf("ParseOverrideParams(%q) = %+v, %v; want an error containing %q", tc.in, got, err, tc.err)
			}
		})
	}
}

func TestParseOverrides(t *testing.T) {
	tests := []struct {
		desc  string
		scope string
		in    []string
		want  []KeyOverride
		err   string
	}{
		{desc: "none", scope: ScopeHost, in: nil, want: []KeyOverride{}},
		{desc: "in order", scope: ScopeHost, in: []string{"b.example: openFor=1s", "a.example"},
			want: []KeyOverride{{Key: "b.example", Override: Override{OpenFor: time.Second}}, {Key: "a.example"}}},
		{desc: "reduced to domains", scope: ScopeDomain, in: []string{"api.example.com: minRequests=5"},
			want: []KeyOverride{{Key: "example.com", Override: Override{MinRequests: 5}}}},
		{desc: "one entry names the entry", scope: ScopeHost, in: []string{"a", "b: window=1"},
			err: `breaker.overrides[1]: "b: window=1": window: "1" is not a duration`},
		{desc: "same host, another port", scope: ScopeHost, in: []string{"api.example.com: openFor=1s", "API.example.com:8443: openFor=2s"},
			err: `breaker.overrides[1]: "API.example.com:8443: openFor=2s" names the breaker of breaker.overrides[0] ("api.example.com" under scope host) again`},
		{desc: "two hosts of one domain", scope: ScopeDomain, in: []string{"a.example.com", "b.example.com"},
			err: `names the breaker of breaker.overrides[0] ("example.com" under scope domain) again`},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := ParseOverrides(tc.scope, tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrInvalidSetting) {
					t.Fatalf("ParseOverrides() = %v, want an error containing %q", err, tc.err)
				}
				return
			}
			if err != nil || len(got) != len(tc.want) {
				t.Fatalf("ParseOverrides() = %+v, %v; want %+v", got, err, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("ParseOverrides()[%d] = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// overrideSeeds are entries, good and bad, that FuzzParseOverride starts from and that
// TestParseOverrideSeeds checks where fuzzing does not run.
var overrideSeeds = []string{
	"", ":", ": ", "a", "a:", "a: ", "a:b", "a:b:", "a:b: window=1s", "[::1]:80: openFor=1s",
	"::1: minRequests=1", "[::ffff:1.2.3.4]: failureRatio=0.25", "a: window=1s window=1s",
	"a: maxOpenFor=1h openFor=59m", "A.B.: failureRatio=1e-3", "a: failureRatio=0x1p-2",
	"a: minRequests=+7", "a: window=1.5h", "a:\t\tminRequests=9", "[a:b", "[]: x=1", "a: =",
	"a: window=9223372036854775807ns", "a: minRequests=99999999999999999999", "\xff: window=1s",
}

func TestParseOverrideSeeds(t *testing.T) {
	checkSeeds(t, overrideSeeds, checkParseOverride)
}

func FuzzParseOverride(f *testing.F) {
	fuzzStrings(f, overrideSeeds, checkParseOverride)
}

// checkParseOverride checks what holds for any entry: an error wraps ErrInvalidSetting and
// returns nothing; otherwise the key is a host key as ScopeKey makes it, the override is
// valid, and the key with the override written out again reads back the same.
func checkParseOverride(t *testing.T, s string) {
	t.Helper()
	key, o, err := ParseOverride(s)
	if err != nil {
		if !errors.Is(err, ErrInvalidSetting) || key != "" || o != (Override{}) {
			t.Fatalf("ParseOverride(%q) = %q, %+v, %v; want nothing and an ErrInvalidSetting", s, key, o, err)
		}
		return
	}
	if key == "" || ScopeKey(ScopeHost, key) != key {
		t.Fatalf("ParseOverride(%q) key = %q, want a non-empty host key", s, key)
	}
	if err := o.Validate(); err != nil {
		t.Fatalf("ParseOverride(%q) = %+v, which Validate refuses: %v", s, o, err)
	}
	again := key + ": " + o.String()
	key2, o2, err := ParseOverride(again)
	if err != nil || key2 != key || o2 != o {
		t.Fatalf("ParseOverride(%q) = %q, %+v, %v; want %q, %+v as from %q", again, key2, o2, err, key, o, s)
	}
}
