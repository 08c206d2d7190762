package weir

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/weirproxy/weir/core"
	"github.com/weirproxy/weir/core/admin"
	"github.com/weirproxy/weir/core/admit"
	"github.com/weirproxy/weir/core/breaker"
	"github.com/weirproxy/weir/core/budget"
	"github.com/weirproxy/weir/core/events"
	"github.com/weirproxy/weir/core/limit"
	"github.com/weirproxy/weir/core/neg"
	"github.com/weirproxy/weir/core/setting"
)

// errConfig wraps every configuration error, which names the field and the value.
var errConfig = errors.New("weir: invalid configuration")

// Check reports what New would refuse in the configuration, with the field and the value
// named, without building a middleware: Weir's provider plugin checks every preset it
// publishes with it, the parse and validation New runs, so the two can never disagree.
func (c *Config) Check() error {
	s, err := c.settings()
	if err != nil {
		return configError(err)
	}
	if err := core.Check(s); err != nil {
		return configError(err)
	}
	return nil
}

// sentinelTexts are the texts of the sentinel errors that the core and its packages wrap
// their setting errors in. Flattened into the core's message by `%w: %v`, they stood at both
// ends of what Traefik logged ("invalid setting: breaker.window: 1ms must be at least 10ms:
// invalid setting"): configError takes them off, so that every refusal reads as
// errConfig's prefix, the field, the value and why.
var sentinelTexts = []string{
	core.ErrSettings.Error(), breaker.ErrInvalidSetting.Error(), admin.ErrSettings.Error(),
	admit.ErrSettings.Error(), budget.ErrSettings.Error(), neg.ErrInvalidSetting.Error(),
	events.ErrFormat.Error(),
}

// configError gives an error that New or Check refuses a configuration with its one form:
// "weir: invalid configuration: <field>: <value> ...", whichever part of Weir found it. It
// wraps errConfig and err both (`%.0w` wraps err and prints none of it), so that
// errors.Is still tells a value the engine refused (core.ErrSettings) from one that did
// not parse.
func configError(err error) error {
	msg := strings.TrimPrefix(err.Error(), errConfig.Error()+": ")
	for trimmed := true; trimmed; {
		trimmed = false
		for _, t := range sentinelTexts {
			if m := strings.TrimPrefix(msg, t+": "); m != msg {
				msg, trimmed = m, true
			}
			if m := strings.TrimSuffix(msg, ": "+t); m != msg {
				msg, trimmed = m, true
			}
		}
	}
	return fmt.Errorf("%w: %s%.0w", errConfig, msg, err)
}

// settings validates the configuration into the core's Settings.
func (c *Config) settings() (core.Settings, error) {
	var s core.Settings
	var err error
	if err = c.unknownOptions(); err != nil {
		return s, err
	}
	s.QueryDrop = splitList(c.Key.QueryDrop)
	s.KeyScheme = c.Key.Scheme
	s.RefusalBody = c.Refusal.Body
	if s.MaxSize, err = parseSize("cache.maxSize", c.Cache.MaxSize); err != nil {
		return s, err
	}
	if s.MaxEntrySize, err = parseSize("cache.maxEntrySize", c.Cache.MaxEntrySize); err != nil {
		return s, err
	}
	durations := []struct {
		field string
		value string
		dst   *time.Duration
	}{
		{"cache.defaultTTL", c.Cache.DefaultTTL, &s.DefaultTTL},
		{"coalesce.leaderMaxAge", c.Coalesce.LeaderMaxAge, &s.LeaderMaxAge},
		{"coalesce.followerMaxWait", c.Coalesce.FollowerMaxWait, &s.FollowerMaxWait},
		{"coalesce.hitForMissTTL", c.Coalesce.HitForMissTTL, &s.HitForMissTTL},
		{"timeouts.origin", c.Timeouts.Origin, &s.OriginTimeout},
		{"timeouts.store", c.Timeouts.Store, &s.StoreTimeout},
		{"limiter.maxQueueWait", c.Limiter.MaxQueueWait, &s.Limiter.MaxQueueWait},
		{"breaker.window", c.Breaker.Window, &s.Breaker.Window},
		{"breaker.openFor", c.Breaker.OpenFor, &s.Breaker.OpenFor},
		{"breaker.maxOpenFor", c.Breaker.MaxOpenFor, &s.Breaker.MaxOpenFor},
		{"breaker.slowCall", c.Breaker.SlowCall, &s.Breaker.SlowCall},
		{"breaker.probeInterval", c.Breaker.ProbeInterval, &s.Breaker.ProbeInterval},
		{"negative.ttl", c.Negative.TTL, &s.Negative.TTL},
		{"missRate.window", c.MissRate.Window, &s.MissRate.Window},
		{"budgets.burst", c.Budgets.Burst, &s.Budgets.Burst},
		{"admission.lagKnee", c.Admission.LagKnee, &s.Admission.LagKnee},
		{"admission.lagLimit", c.Admission.LagLimit, &s.Admission.LagLimit},
		{"clients.bodyIdle", c.Clients.BodyIdle, &s.Clients.BodyIdle},
		{"stale.ifError", c.Stale.IfError, &s.Stale.IfError},
		{"stale.whileRevalidate", c.Stale.WhileRevalidate, &s.Stale.WhileRevalidate},
		{"warm.timeout", c.Warm.Timeout, &s.Warm.Timeout},
	}
	for _, d := range durations {
		v, err := parseDuration(d.field, d.value)
		if err != nil {
			return s, err
		}
		*d.dst = v
	}
	if err := c.protections(&s); err != nil {
		return s, err
	}
	if err := c.buckets(&s); err != nil {
		return s, err
	}
	if err := c.private(&s); err != nil {
		return s, err
	}
	counts := []struct {
		field string
		value string
		dst   *int
	}{
		{"limiter.maxConcurrent", c.Limiter.MaxConcurrent, &s.Limiter.MaxConcurrent},
		{"limiter.maxQueue", c.Limiter.MaxQueue, &s.Limiter.MaxQueue},
		{"limiter.maxPerPartition", c.Limiter.MaxPerPartition, &s.Limiter.MaxPerPartition},
		{"limiter.maxQueuePerPartition", c.Limiter.MaxQueuePerPartition, &s.Limiter.MaxQueuePerPartition},
		{"limiter.maxPerHost", c.Limiter.MaxPerHost, &s.Limiter.MaxPerHost},
		{"limiter.maxUpload", c.Limiter.MaxUpload, &s.Limiter.MaxUpload},
		{"breaker.minRequests", c.Breaker.MinRequests, &s.Breaker.MinRequests},
		{"breaker.maxFailures", c.Breaker.MaxFailures, &s.Breaker.MaxFailures},
		{"breaker.probes", c.Breaker.Probes, &s.Breaker.Probes},
		{"negative.maxEntries", c.Negative.MaxEntries, &s.Negative.MaxEntries},
		{"missRate.minMisses", c.MissRate.MinMisses, &s.MissRate.MinMisses},
		{"admission.kneeInFlight", c.Admission.KneeInFlight, &s.Admission.KneeInFlight},
		{"admission.hostKneeInFlight", c.Admission.HostKneeInFlight, &s.Admission.HostKneeInFlight},
	}
	for _, n := range counts {
		v, err := parseCount(n.field, n.value)
		if err != nil {
			return s, err
		}
		*n.dst = v
	}
	if err := c.queueShare(s.Limiter); err != nil {
		return s, err
	}
	if err := c.budgets(&s); err != nil {
		return s, err
	}
	for _, p := range splitList(c.Admission.Protect) {
		if p[0] != '/' {
			return s, fmt.Errorf("%w: admission.protect: %q must be a path prefix such as \"/health\"", errConfig, p)
		}
		s.Admission.Protect = append(s.Admission.Protect, p)
	}
	s.Warm.Paths = splitList(c.Warm.Paths)
	s.Warm.Hosts = splitList(c.Warm.Hosts)
	return s, nil
}

// buckets reads cache.paths and cache.ttls. A pattern outside setting.Pattern's grammar is
// refused here with the value as the operator wrote it; the core checks them again.
func (c *Config) buckets(s *core.Settings) error {
	for _, p := range splitList(c.Cache.Paths) {
		if _, err := setting.ParsePattern(p); err != nil {
			return fmt.Errorf("%w: cache.paths: %q %v", errConfig, p, err)
		}
		s.CachePaths = append(s.CachePaths, p)
	}
	for _, v := range splitList(c.Cache.TTLs) {
		// The last "=": a path may hold one, a duration never does.
		i := strings.LastIndexByte(v, '=')
		if i < 0 {
			return fmt.Errorf("%w: cache.ttls: %q must be pattern=duration such as \"/static/*=1h\"", errConfig, v)
		}
		pattern := strings.TrimSpace(v[:i])
		if _, err := setting.ParsePattern(pattern); err != nil {
			return fmt.Errorf("%w: cache.ttls: %q must be pattern=duration such as \"/static/*=1h\": %q %v", errConfig, v, pattern, err)
		}
		ttl, err := parseTTL(strings.TrimSpace(v[i+1:]))
		if err != nil {
			return fmt.Errorf("%w: cache.ttls: %q must be pattern=duration such as \"/static/*=1h\": %v", errConfig, v, err)
		}
		s.CacheTTLs = append(s.CacheTTLs, core.PathTTL{Pattern: pattern, TTL: ttl})
	}
	return nil
}

// private reads private.*. The identity's form and the patterns are checked here with the
// values as the operator wrote them; the core checks them again.
func (c *Config) private(s *core.Settings) error {
	p := &s.Private
	for _, v := range splitList(c.Private.Paths) {
		if _, err := setting.ParsePattern(v); err != nil {
			return fmt.Errorf("%w: private.paths: %q %v", errConfig, v, err)
		}
		p.Paths = append(p.Paths, v)
	}
	p.Identity = strings.TrimSpace(c.Private.Identity)
	if _, _, err := core.ParseIdentity(p.Identity); err != nil {
		return fmt.Errorf("%w: private.identity: %q %v", errConfig, c.Private.Identity, err)
	}
	var err error
	if p.TTL, err = parseDuration("private.ttl", c.Private.TTL); err != nil {
		return err
	}
	if p.MaxSize, err = parseSize("private.maxSize", c.Private.MaxSize); err != nil {
		return err
	}
	p.SecretFile = strings.TrimSpace(c.Private.SecretFile)
	if p.Shared, err = parseBool("private.shared", c.Private.Shared); err != nil {
		return err
	}
	return nil
}

// parseTTL reads cache.ttls' duration: a Go duration that may count days ("1d",
// setting.ParseDays), or a bare number of seconds, as parseDuration reads them. 0: none.
func parseTTL(v string) (time.Duration, error) {
	if n, err := strconv.ParseFloat(v, 64); err == nil && !strings.ContainsAny(v, "xXpP_") {
		if n < 0 || math.IsNaN(n) || n > maxDurationSeconds {
			return 0, setting.ErrDuration
		}
		return time.Duration(n * float64(time.Second)), nil
	}
	return setting.ParseDays(v)
}

// queueShare checks limiter.maxQueuePerPartition, when set, against limiter.maxQueue: a
// share of the queue is a number of its places, at least one. Checked here rather than left
// to the limiter, so that the error quotes the value as the operator wrote it.
func (c *Config) queueShare(l limit.Settings) error {
	if strings.TrimSpace(c.Limiter.MaxQueuePerPartition) == "" {
		return nil
	}
	maxQueue := l.MaxQueue
	if maxQueue == 0 {
		maxQueue = limit.DefaultMaxQueue
	}
	if n := l.MaxQueuePerPartition; n < 1 || n > maxQueue {
		return fmt.Errorf("%w: limiter.maxQueuePerPartition: %q must be at least 1 and at most limiter.maxQueue (%d); empty: the default",
			errConfig, c.Limiter.MaxQueuePerPartition, maxQueue)
	}
	return nil
}

// protections reads the settings that are neither sizes, durations nor counts.
func (c *Config) protections(s *core.Settings) error {
	scope, err := breaker.ParseScope(strings.TrimSpace(c.Breaker.Scope))
	if err != nil {
		return fmt.Errorf("%w: breaker.scope: %q must be engine, host or domain", errConfig, c.Breaker.Scope)
	}
	s.Breaker.Scope = scope
	if s.BreakerOverrides, err = breaker.ParseOverrides(scope, splitList(c.Breaker.Overrides)); err != nil {
		return fmt.Errorf("%w: %v", errConfig, err)
	}
	if s.Breaker.FailureRatio, err = parseRatio("breaker.failureRatio", c.Breaker.FailureRatio); err != nil {
		return err
	}
	if s.Breaker.SlowCallRatio, err = parseRatio("breaker.slowCallRatio", c.Breaker.SlowCallRatio); err != nil {
		return err
	}
	if s.BreakerCountStatus500, err = parseBool("breaker.countStatus500", c.Breaker.CountStatus500); err != nil {
		return err
	}
	if strings.TrimSpace(c.Breaker.CountStatus429) != "" {
		count, err := parseBool("breaker.countStatus429", c.Breaker.CountStatus429)
		if err != nil {
			return err
		}
		s.BreakerIgnoreStatus429 = !count
	}
	if s.BreakerPaths, err = breaker.ParsePaths(splitList(c.Breaker.Paths)); err != nil {
		return fmt.Errorf("%w: %v", errConfig, err)
	}
	if v := strings.TrimSpace(c.MissRate.Ratio); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 || f > 1 {
			return fmt.Errorf("%w: missRate.ratio: %q must be a number above 0 and at most 1", errConfig, c.MissRate.Ratio)
		}
		s.MissRate.Ratio = f
	}
	if s.MissRate.Throttle, err = parseBool("missRate.throttle", c.MissRate.Throttle); err != nil {
		return err
	}
	if strings.TrimSpace(c.MissRate.Bypass) != "" {
		bypass, err := parseBool("missRate.bypass", c.MissRate.Bypass)
		if err != nil {
			return err
		}
		s.MissRate.NoBypass = !bypass
	}
	if s.AllowPurge, err = parseBool("cache.allowPurge", c.Cache.AllowPurge); err != nil {
		return err
	}
	s.LogFormat = strings.TrimSpace(c.Log.Format)
	s.AdminPath = strings.TrimSpace(c.Admin.Path)
	s.AdminAccess.Token = strings.TrimSpace(c.Admin.Token)
	s.AdminTokenFile = strings.TrimSpace(c.Admin.TokenFile)
	if s.AdminAccess.Allow, err = admin.ParseAllow(c.Admin.Allow); err != nil {
		return fmt.Errorf("%w: %v", errConfig, err)
	}
	if s.AdminAccess.Hosts, err = admin.ParseHosts(c.Admin.Hosts); err != nil {
		return fmt.Errorf("%w: %v", errConfig, err)
	}
	s.StoreURL = strings.TrimSpace(c.Store.URL)
	s.StoreURLFile = strings.TrimSpace(c.Store.URLFile)
	s.StoreKeyPrefix = c.Store.KeyPrefix
	if strings.TrimSpace(c.Store.NearCache) != "" {
		near, err := parseBool("store.nearCache", c.Store.NearCache)
		if err != nil {
			return err
		}
		s.StoreNoNearCache = !near
	}
	return nil
}

// parseRatio reads a number above 0 and at most 1. Empty means unset (the default).
func parseRatio(field, value string) (float64, error) {
	v := strings.TrimSpace(value)
	if v == "" {
		return 0, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f > 0 && f <= 1) {
		return 0, fmt.Errorf("%w: %s: %q must be a number above 0 and at most 1", errConfig, field, value)
	}
	return f, nil
}

// parseBool reads "true" or "false" (and 1/0, yes/no); empty means false.
func parseBool(field, value string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(value)) {
	case "", "false", "0", "no", "off":
		return false, nil
	case "true", "1", "yes", "on":
		return true, nil
	}
	return false, fmt.Errorf("%w: %s: %q is not true or false", errConfig, field, value)
}

// zeroMeans says what 0 (or empty) means for the counts and durations where it is not the
// default, so that an error message says what the operator may write instead.
var zeroMeans = map[string]string{
	"limiter.maxPerHost":    "no cap",
	"cache.defaultTTL":      "none",
	"breaker.maxFailures":   "off",
	"stale.ifError":         "off",
	"stale.whileRevalidate": "off",
}

// zeroMeaning is what 0 or empty means for field: the default unless zeroMeans says.
func zeroMeaning(field string) string {
	if m, ok := zeroMeans[field]; ok {
		return m
	}
	return "the default"
}

// parseCount reads a whole number, 0 or more. Empty or 0 means the default, or what
// zeroMeans says.
func parseCount(field, value string) (int, error) {
	v := strings.TrimSpace(value)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: %s: %q is not a whole number, 0 or more (0 or empty: %s)", errConfig, field, value, zeroMeaning(field))
	}
	return n, nil
}

// maxDurationSeconds bounds a bare number of seconds: about 292 years fit a time.Duration.
const maxDurationSeconds = 1e9

// parseDuration reads a Go duration ("10s", "1m30s"); a bare number is seconds, as labels
// often carry one. Empty or 0 means the default, or what zeroMeans says.
func parseDuration(field, value string) (time.Duration, error) {
	v := strings.TrimSpace(value)
	if v == "" {
		return 0, nil
	}
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("%w: %s: %q must not be negative (0 or empty: %s)", errConfig, field, value, zeroMeaning(field))
		}
		// NaN, infinities and values past time.Duration's range would convert to
		// whatever the platform makes of them.
		if math.IsNaN(n) || n > maxDurationSeconds {
			return 0, fmt.Errorf("%w: %s: %q is not a duration such as \"10s\"", errConfig, field, value)
		}
		return time.Duration(n * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %q is not a duration such as \"10s\"", errConfig, field, value)
	}
	if d < 0 {
		return 0, fmt.Errorf("%w: %s: %q must not be negative (0 or empty: %s)", errConfig, field, value, zeroMeaning(field))
	}
	return d, nil
}

// Size units, binary and decimal.
var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30},
	{"kb", 1000}, {"mb", 1000 * 1000}, {"gb", 1000 * 1000 * 1000},
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"b", 1},
}

// parseSize reads a byte count: "1048576", "512KiB", "32MiB", "1GB" (KiB, MiB, GiB are
// powers of 1024, KB, MB, GB of 1000). Empty or 0 means the default.
func parseSize(field, value string) (int64, error) {
	v := strings.ToLower(strings.TrimSpace(value))
	if v == "" {
		return 0, nil
	}
	mult := int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(v, u.suffix) {
			// Two assignments: Yaegi v0.16.1 loses one side of `v, mult = f(), x`.
			v = strings.TrimSpace(strings.TrimSuffix(v, u.suffix))
			mult = u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(n) || n < 0 || n*float64(mult) > 1<<50 {
		return 0, fmt.Errorf("%w: %s: %q is not a size such as \"32MiB\" (0 or empty: the default)", errConfig, field, value)
	}
	return int64(n * float64(mult)), nil
}

// splitList reads a list option: YAML gives a list, a label a comma-separated string (which
// Traefik hands over as a one-item list); blanks are dropped.
func splitList(list []string) []string {
	var out []string
	for _, item := range list {
		for _, v := range strings.Split(item, ",") {
			if v = strings.TrimSpace(v); v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}

// budgets reads budgets.* and pacing.
func (c *Config) budgets(s *core.Settings) error {
	b := &s.Budgets
	var err error
	if b.Client, err = parseRate("budgets.client", c.Budgets.Client); err != nil {
		return err
	}
	if b.Host, err = parseRate("budgets.host", c.Budgets.Host); err != nil {
		return err
	}
	if b.Shared, err = parseBool("budgets.shared", c.Budgets.Shared); err != nil {
		return err
	}
	src := strings.TrimSpace(c.Budgets.ClientSource)
	switch {
	case src == "" || strings.EqualFold(src, "remoteAddr"):
	case strings.HasPrefix(src, "header:") && strings.TrimSpace(src[len("header:"):]) != "":
		b.ClientHeader = strings.TrimSpace(src[len("header:"):])
	case strings.HasPrefix(src, "forwardedDepth:"):
		n, err := strconv.Atoi(strings.TrimSpace(src[len("forwardedDepth:"):]))
		if err != nil || n < 1 {
			return fmt.Errorf("%w: budgets.clientSource: %q needs a depth of at least 1, such as \"forwardedDepth:1\"", errConfig, c.Budgets.ClientSource)
		}
		b.ForwardedDepth = n
	default:
		return fmt.Errorf("%w: budgets.clientSource: %q must be remoteAddr, header:<field> or forwardedDepth:<n>", errConfig, c.Budgets.ClientSource)
	}
	for _, v := range splitList(c.Budgets.Exempt) {
		_, n, err := net.ParseCIDR(v)
		if err != nil {
			return fmt.Errorf("%w: budgets.exempt: %q is not a CIDR such as \"10.0.0.0/8\"", errConfig, v)
		}
		b.Exempt = append(b.Exempt, n)
	}
	for _, v := range splitList(c.Pacing) {
		i := strings.IndexByte(v, '=')
		name, ok := "", false
		if i > 0 {
			name, ok = core.PaceName(v[:i])
		}
		if !ok {
			return fmt.Errorf("%w: pacing: %q must be host=rate, such as \"feeds.example.com=3/10s\"", errConfig, v)
		}
		rate, err := parseRate("pacing", v[i+1:])
		if err != nil {
			return fmt.Errorf("%w: pacing: %q must be host=rate, such as \"feeds.example.com=3/10s\"", errConfig, v)
		}
		s.Pacing = append(s.Pacing, core.Pace{Name: name, Rate: rate})
	}
	return nil
}

// parseRate reads a rate, "200/10s" (N/10s, N/1s or N/1m). Empty means unset.
func parseRate(field, value string) (budget.Rate, error) {
	if strings.TrimSpace(value) == "" {
		return budget.Rate{}, nil
	}
	r, err := budget.ParseRate(value)
	if err != nil {
		return budget.Rate{}, fmt.Errorf("%w: %s: %q is not a rate such as \"200/10s\" (N/10s, N/1s or N/1m)", errConfig, field, value)
	}
	return r, nil
}
