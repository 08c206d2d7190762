package weir

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirproxy/weir/core"
)

// Labels hand New whatever string an operator (or a typo) wrote. Whatever they are, New must
// not panic; a refusal must name the field, and a middleware it builds must serve. The Fuzz
// function explores; TestConfigFuzzSeeds runs the same check on the seeds, also under Yaegi,
// which skips Fuzz functions.
//
// Sizes need no cap: the memory store allocates per entry, never its budget up front
// (core/store/memory.go), so a fuzzed "1GiB" maxSize costs a map header.

// labelField is one operator-facing key and how to set it on a Config.
type labelField struct {
	name string
	set  func(c *Config, v string)
}

// labelFields are the string-valued keys the fuzzer writes. key.queryDrop is fuzzed apart,
// as the comma list labels carry. store.url is left out: it dials a server.
var labelFields = []labelField{
	{"cache.maxSize", func(c *Config, v string) { c.Cache.MaxSize = v }},
	{"cache.maxEntrySize", func(c *Config, v string) { c.Cache.MaxEntrySize = v }},
	{"cache.defaultTTL", func(c *Config, v string) { c.Cache.DefaultTTL = v }},
	{"cache.allowPurge", func(c *Config, v string) { c.Cache.AllowPurge = v }},
	{"coalesce.leaderMaxAge", func(c *Config, v string) { c.Coalesce.LeaderMaxAge = v }},
	{"coalesce.followerMaxWait", func(c *Config, v string) { c.Coalesce.FollowerMaxWait = v }},
	{"coalesce.hitForMissTTL", func(c *Config, v string) { c.Coalesce.HitForMissTTL = v }},
	{"timeouts.origin", func(c *Config, v string) { c.Timeouts.Origin = v }},
	{"timeouts.store", func(c *Config, v string) { c.Timeouts.Store = v }},
	{"limiter.maxConcurrent", func(c *Config, v string) { c.Limiter.MaxConcurrent = v }},
	{"limiter.maxQueue", func(c *Config, v string) { c.Limiter.MaxQueue = v }},
	{"limiter.maxQueueWait", func(c *Config, v string) { c.Limiter.MaxQueueWait = v }},
	{"limiter.maxPerPartition", func(c *Config, v string) { c.Limiter.MaxPerPartition = v }},
	{"limiter.maxPerHost", func(c *Config, v string) { c.Limiter.MaxPerHost = v }},
	{"limiter.maxUpload", func(c *Config, v string) { c.Limiter.MaxUpload = v }},
	{"breaker.scope", func(c *Config, v string) { c.Breaker.Scope = v }},
	{"breaker.window", func(c *Config, v string) { c.Breaker.Window = v }},
	{"breaker.minRequests", func(c *Config, v string) { c.Breaker.MinRequests = v }},
	{"breaker.failureRatio", func(c *Config, v string) { c.Breaker.FailureRatio = v }},
	{"breaker.maxFailures", func(c *Config, v string) { c.Breaker.MaxFailures = v }},
	{"breaker.openFor", func(c *Config, v string) { c.Breaker.OpenFor = v }},
	{"breaker.maxOpenFor", func(c *Config, v string) { c.Breaker.MaxOpenFor = v }},
	{"breaker.countStatus500", func(c *Config, v string) { c.Breaker.CountStatus500 = v }},
	{"breaker.countStatus429", func(c *Config, v string) { c.Breaker.CountStatus429 = v }},
	{"breaker.slowCall", func(c *Config, v string) { c.Breaker.SlowCall = v }},
	{"breaker.slowCallRatio", func(c *Config, v string) { c.Breaker.SlowCallRatio = v }},
	{"breaker.probes", func(c *Config, v string) { c.Breaker.Probes = v }},
	{"breaker.probeInterval", func(c *Config, v string) { c.Breaker.ProbeInterval = v }},
	{"negative.ttl", func(c *Config, v string) { c.Negative.TTL = v }},
	{"negative.maxEntries", func(c *Config, v string) { c.Negative.MaxEntries = v }},
	{"missRate.window", func(c *Config, v string) { c.MissRate.Window = v }},
	{"missRate.minMisses", func(c *Config, v string) { c.MissRate.MinMisses = v }},
	{"missRate.ratio", func(c *Config, v string) { c.MissRate.Ratio = v }},
	{"missRate.throttle", func(c *Config, v string) { c.MissRate.Throttle = v }},
	{"missRate.bypass", func(c *Config, v string) { c.MissRate.Bypass = v }},
	{"limiter.maxQueuePerPartition", func(c *Config, v string) { c.Limiter.MaxQueuePerPartition = v }},
	{"admin.path", func(c *Config, v string) { c.Admin.Path = v }},
	{"admin.token", func(c *Config, v string) { c.Admin.Token = v }},
	{"log.format", func(c *Config, v string) { c.Log.Format = v }},
	{"budgets.client", func(c *Config, v string) { c.Budgets.Client = v }},
	{"budgets.host", func(c *Config, v string) { c.Budgets.Host = v }},
	{"budgets.burst", func(c *Config, v string) { c.Budgets.Burst = v }},
	{"budgets.clientSource", func(c *Config, v string) { c.Budgets.ClientSource = v }},
	{"admission.kneeInFlight", func(c *Config, v string) { c.Admission.KneeInFlight = v }},
	{"admission.hostKneeInFlight", func(c *Config, v string) { c.Admission.HostKneeInFlight = v }},
	{"admission.lagKnee", func(c *Config, v string) { c.Admission.LagKnee = v }},
	{"admission.lagLimit", func(c *Config, v string) { c.Admission.LagLimit = v }},
	{"clients.bodyIdle", func(c *Config, v string) { c.Clients.BodyIdle = v }},
	{"warm.timeout", func(c *Config, v string) { c.Warm.Timeout = v }},
	{"stale.ifError", func(c *Config, v string) { c.Stale.IfError = v }},
	{"stale.whileRevalidate", func(c *Config, v string) { c.Stale.WhileRevalidate = v }},
	{"refusal.body", func(c *Config, v string) { c.Refusal.Body = v }},
	{"private.identity", func(c *Config, v string) { c.Private.Identity = v }},
	{"private.ttl", func(c *Config, v string) { c.Private.TTL = v }},
	{"private.maxSize", func(c *Config, v string) { c.Private.MaxSize = v }},
}

// configSeed sets two fields (chosen by index, modulo the table) and key.queryDrop.
type configSeed struct {
	f1        uint8
	v1        string
	f2        uint8
	v2        string
	queryDrop string
}

var configSeeds = []configSeed{
	{0, "32MiB", 1, "2MiB", "utm_source,utm_medium"},
	{0, "1GiB", 1, "1GiB", ""},
	{0, "1e15", 1, "0", ",,, ,"},
	{0, "lots", 2, "30", ""},
	{1, "-1MiB", 3, "maybe", "a b, c%20d"},
	{2, "1e300", 4, "NaN", ""},
	{5, "Inf", 6, "-0", ""},
	{7, "1ns", 8, "1ns", ""},
	{9, "0", 10, "1", ""},
	{9, "9223372036854775807", 13, "-1", ""},
	{11, "0", 12, "1", ""},
	{14, "1", 11, "1e-9", ""},
	{15, "galaxy", 16, "1ms", ""},
	{15, " Host ", 16, "0", ""},
	{18, "1.5", 19, "60", ""},
	{19, "60", 20, "5s", ""},
	{18, "NaN", 21, "yes", ""},
	{22, "-5s", 23, "99999999999999999999", ""},
	{24, "25h", 25, "0", ""},
	{26, "0.0", 27, "ON", ""},
	{2, "1h\x00", 17, "\xff", "\x00,\xff"},
	{0, "0.5KiB", 1, " 512 b ", ""},
	{28, "0", 10, "", ""},
	{28, "9", 10, "8", ""},
	{28, "1024", 10, "", ""},
	{28, " 7 ", 13, "3", ""},
	{28, "1e3", 10, "1e3", ""},
}

func FuzzConfigFromLabels(f *testing.F) {
	for _, s := range configSeeds {
		f.Add(s.f1, s.v1, s.f2, s.v2, s.queryDrop)
	}
	f.Fuzz(func(t *testing.T, f1 uint8, v1 string, f2 uint8, v2 string, queryDrop string) {
		checkConfigFromLabels(t, configSeed{f1, v1, f2, v2, queryDrop})
	})
}

func TestConfigFuzzSeeds(t *testing.T) {
	for _, s := range configSeeds {
		checkConfigFromLabels(t, s)
	}
}

// fuzzNames makes every middleware name unique: engines live in a process-wide registry,
// which grows by one small engine per name for the length of a fuzz run.
var fuzzNames int64

func checkConfigFromLabels(t *testing.T, s configSeed) {
	t.Helper()
	a := labelFields[int(s.f1)%len(labelFields)]
	b := labelFields[int(s.f2)%len(labelFields)]
	c := CreateConfig()
	a.set(c, s.v1)
	b.set(c, s.v2)
	if s.queryDrop != "" {
		c.Key.QueryDrop = []string{s.queryDrop}
	}
	name := fmt.Sprintf("fuzz-%d", atomic.AddInt64(&fuzzNames, 1))
	h, err := New(context.Background(), http.NotFoundHandler(), c, name)
	if err != nil {
		checkConfigError(t, err, a, s.v1, b, s.v2)
		return
	}
	if h == nil {
		t.Fatalf("%s=%q %s=%q: New returned neither a handler nor an error", a.name, s.v1, b.name, s.v2)
	}
	w := serveBounded(t, h, httptest.NewRequest(http.MethodGet, "http://example.com/fuzz", nil))
	if w != nil && w.Code != http.StatusNotFound && w.Code < 500 {
		t.Errorf("%s=%q %s=%q: GET answered %d, want the origin's 404 or a 5xx", a.name, s.v1, b.name, s.v2, w.Code)
	}
}

// checkConfigError wants a refusal to name the field at fault and, for a value that did not
// parse, the value as written. A value that parsed but that the engine's own validation
// refuses (breaker.window "1ms" under its 10ms floor, maxOpenFor below openFor) is named as
// parsed ("1ms", "1m0s"), which need not be the operator's spelling ("0.001", "60").
func checkConfigError(t *testing.T, err error, a labelField, v1 string, b labelField, v2 string) {
	t.Helper()
	msg := err.Error()
	named := func(f labelField) bool { return strings.Contains(msg, f.name) }
	// The value is quoted with %q; look for it in the same form.
	quoted := func(v string) bool { return strings.Contains(msg, fmt.Sprintf("%q", v)) }
	switch {
	case !errors.Is(err, errConfig) || !strings.HasPrefix(msg, errConfig.Error()+": "):
		t.Errorf("%s=%q %s=%q: error %q is not a configuration error", a.name, v1, b.name, v2, msg)
	case errors.Is(err, core.ErrSettings):
		if !named(a) && !named(b) && !strings.Contains(msg, "limiter.") {
			t.Errorf("%s=%q %s=%q: error %q names neither field", a.name, v1, b.name, v2, msg)
		}
	default:
		if !(named(a) && quoted(v1)) && !(named(b) && quoted(v2)) {
			t.Errorf("%s=%q %s=%q: error %q names neither field with its value", a.name, v1, b.name, v2, msg)
		}
	}
}

// serveBounded serves r on h and fails with "hangs" if no answer comes. The serving
// goroutine recovers, so a panic fails the test rather than the process.
func serveBounded(t *testing.T, h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	done := make(chan interface{}, 1)
	go func() {
		defer func() { done <- recover() }()
		h.ServeHTTP(w, r)
	}()
	select {
	case p := <-done:
		if p != nil {
			t.Errorf("GET panicked: %v", p)
			return nil
		}
		return w
	case <-time.After(10 * time.Second):
		t.Fatalf("GET hangs")
		return nil
	}
}
