package core

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/weirproxy/weir/core/flight"
	"github.com/weirproxy/weir/core/httpcache"
	"github.com/weirproxy/weir/core/setting"
	"github.com/weirproxy/weir/core/store"
)

// The private cache stage (private.*): on a path under private.paths, a GET or HEAD that
// carries the user's identity (private.identity) is answered from, and its answer stored
// in, a cache of that user's alone, under a key that holds an HMAC of the identity, never
// the identity itself. It runs where the shared cache missed (serveFrom, serveSharedAt):
// the shared cache stores nothing under private.paths (bucketOf), so the hit path's one
// lookup never finds anything there (FR-PRV-2), and a middleware without private.paths pays
// nothing for this stage on the hit path.

// Defaults of private.*, applied by Settings.withDefaults.
const (
	// DefaultPrivateTTL is private.ttl: the freshness of a private answer whose origin
	// states none. Short: a user's page changes as the user acts.
	DefaultPrivateTTL = time.Minute
	// DefaultPrivateMaxSize is private.maxSize, the private cache's own memory budget.
	DefaultPrivateMaxSize = 8 << 20
	// DefaultPrivateIdentity is private.identity: the Authorization header.
	DefaultPrivateIdentity = "header:Authorization"
)

// Private keys: privateNS, privateIDLen hex digits of HMAC-SHA256(secret, identity), "/",
// then the shared cache's key of the URL. The namespace starts with no scheme, so that no
// shared key is ever one, and the purges of URLs, hosts and prefixes, which name schemes,
// never reach into it.
const (
	privateNS = "private/"
	// privateIDLen is 128 bits of the HMAC, in hex: no two identities meet under one key
	// short of a collision of 2^64 tries.
	privateIDLen = 32
	// privateSecretLen is the length of the random secret made when no private.secretFile
	// is set.
	privateSecretLen = 32
	// privateDetail is the Cache-Status detail of an answer from the private cache.
	privateDetail = "private"
)

// Errors of the private cache's settings.
var (
	// ErrIdentity marks a private.identity outside its two forms.
	ErrIdentity = errors.New(`must be "cookie:<name>" or "header:<Name>", such as "cookie:session" or "header:Authorization"`)
	// errPrivateOff marks an operator's purge of a user on a middleware without private.paths.
	errPrivateOff = errors.New("purge: user: the private cache is off (private.paths)")
)

// PrivateSettings are private.*: the private cache. Zero: off.
type PrivateSettings struct {
	// Paths are the path patterns (setting.Pattern) whose answers are per user. Empty: the
	// private cache is off.
	Paths []string
	// Identity is where a user's identity is read: "cookie:<name>" or "header:<Name>".
	// Empty: DefaultPrivateIdentity.
	Identity string
	// TTL is the freshness of a private answer that states none. Zero: DefaultPrivateTTL.
	TTL time.Duration
	// MaxSize is the private cache's memory budget, in bytes. Zero: DefaultPrivateMaxSize.
	MaxSize int64
	// SecretFile is a file whose content keys the identities' HMAC, the same on every
	// instance of a fleet. Empty: a random secret made when the engine is built, kept across
	// reloads.
	SecretFile string
	// Shared stores private entries in the shared store (StoreURL), which needs SecretFile.
	// False: in this instance's memory.
	Shared bool
	// secret is what SecretFile holds, read by withSecrets; empty without one.
	secret string
}

// ParseIdentity reads private.identity: it returns the cookie's name or the header's
// (canonical) name, the other empty. Empty is DefaultPrivateIdentity. Its error is
// ErrIdentity, which the caller wraps with the field and the value.
func ParseIdentity(v string) (string, string, error) {
	if v == "" {
		v = DefaultPrivateIdentity
	}
	i := strings.IndexByte(v, ':')
	if i <= 0 || i == len(v)-1 || !tokenOnly(v[i+1:]) {
		return "", "", ErrIdentity
	}
	name := v[i+1:]
	switch strings.ToLower(v[:i]) {
	case "cookie":
		return name, "", nil
	case "header":
		return "", http.CanonicalHeaderKey(name), nil
	}
	return "", "", ErrIdentity
}

// tokenOnly tells whether s is an RFC 9110 token (section 5.6.2), what a header field's
// and a cookie's names are made of.
func tokenOnly(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		// One case each: Yaegi v0.16.1 evaluates only the first of a case list in a switch
		// without a tag (docs/yaegi.md).
		switch {
		case c >= 'a' && c <= 'z':
		case c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// validate checks private.*; storeSet tells whether a shared store is configured.
func (p PrivateSettings) validate(storeSet bool) error {
	if len(p.Paths) > MaxPathPatterns {
		return fmt.Errorf("%w: private.paths: %d patterns, at most %d", ErrSettings, len(p.Paths), MaxPathPatterns)
	}
	for _, v := range p.Paths {
		if _, err := setting.ParsePattern(v); err != nil {
			return fmt.Errorf("%w: private.paths: %q %v", ErrSettings, v, err)
		}
	}
	if _, _, err := ParseIdentity(p.Identity); err != nil {
		return fmt.Errorf("%w: private.identity: %q %v", ErrSettings, p.Identity, err)
	}
	if p.TTL < 0 {
		return fmt.Errorf("%w: private.ttl: %s must not be negative", ErrSettings, p.TTL)
	}
	if p.MaxSize < 0 {
		return fmt.Errorf("%w: private.maxSize: %d must not be negative", ErrSettings, p.MaxSize)
	}
	if p.Shared && !storeSet {
		return fmt.Errorf("%w: private.shared: true needs store.url, a store to share the private entries through", ErrSettings)
	}
	if p.Shared && p.SecretFile == "" {
		return fmt.Errorf("%w: private.shared: true needs private.secretFile, the key every instance hashes identities with", ErrSettings)
	}
	return nil
}

// withDefaults fills private.*'s zero fields.
func (p PrivateSettings) withDefaults() PrivateSettings {
	if p.Identity == "" {
		p.Identity = DefaultPrivateIdentity
	}
	if p.TTL <= 0 {
		p.TTL = DefaultPrivateTTL
	}
	if p.MaxSize <= 0 {
		p.MaxSize = DefaultPrivateMaxSize
	}
	return p
}

// privateCache is the private cache as the engine keeps it across reloads: its secret and
// its store.
type privateCache struct {
	// secret keys the identities' HMAC; fromFile marks one read from private.secretFile.
	secret   []byte
	fromFile bool
	// st is where private entries live: mem, or the engine's shared store (private.shared).
	st  store.Store
	mem *store.Memory
	// conf is private.* as this cache was built with it, without the secret.
	conf string
}

// keepPrivate gives e the private cache s asks for: old's when nothing it depends on
// changed, else a new one, which keeps old's random secret (a reload does not make every
// user's entries unreachable) unless private.secretFile names one.
func keepPrivate(e, old *engine, s Settings) error {
	p := s.Private
	if len(p.Paths) == 0 {
		return nil
	}
	conf := fmt.Sprintf("paths=%q identity=%s ttl=%s size=%d entry=%d shared=%t file=%s",
		p.Paths, p.Identity, p.TTL, p.MaxSize, s.MaxEntrySize, p.Shared, p.SecretFile)
	o := old.private
	if o != nil && o.conf == conf && o.fromFile == (p.secret != "") &&
		(!o.fromFile || hmac.Equal(o.secret, []byte(p.secret))) && (!p.Shared || o.st == e.store) {
		e.private = o
		return nil
	}
	c := &privateCache{conf: conf}
	switch {
	case p.secret != "":
		c.secret = []byte(p.secret)
		c.fromFile = true
	case o != nil && !o.fromFile:
		c.secret = o.secret
	default:
		c.secret = make([]byte, privateSecretLen)
		if _, err := rand.Read(c.secret); err != nil {
			return fmt.Errorf("private: making a secret: %w", err)
		}
	}
	if p.Shared {
		c.st = e.store
	} else {
		c.mem = store.NewMemory(store.MemorySettings{MaxSize: p.MaxSize, MaxEntrySize: s.MaxEntrySize})
		c.st = c.mem
		warmAssertions(c.st)
	}
	e.private = c
	return nil
}

// privateStage is the private cache as one Handler serves it.
type privateStage struct {
	c     *privateCache
	paths []setting.Pattern
	// cookie or header names where the identity is read (the other is empty).
	cookie string
	header string
	// policy is the Handler's with private.ttl and the private cache's rules.
	policy httpcache.Policy
}

// newPrivateStage is the stage of e's private cache, with s's settings (validated); nil
// when the private cache is off.
func newPrivateStage(e *engine, s Settings, base httpcache.Policy) *privateStage {
	if e.private == nil {
		return nil
	}
	p := &privateStage{c: e.private}
	for _, v := range s.Private.Paths {
		if pat, err := setting.ParsePattern(v); err == nil {
			p.paths = append(p.paths, pat)
		}
	}
	p.cookie, p.header, _ = ParseIdentity(s.Private.Identity)
	// No stale answers: a private entry lives as long as it is fresh, and no longer.
	p.policy = httpcache.Policy{DefaultTTL: s.Private.TTL, MaxEntrySize: base.MaxEntrySize, Private: true}
	return p
}

// identityOf is r's identity as p reads it: "" for none. A cookie named twice is both of
// its values. With a cookie for identity, a request that also carries Authorization has
// none: its credentials may name another user than its cookie, and it is served as a
// request with credentials outside the private cache is (FR-COA-8).
func identityOf(p *privateStage, r *http.Request) string {
	if p.header != "" {
		return strings.Join(r.Header[p.header], "\n")
	}
	if len(r.Header["Authorization"]) > 0 {
		return ""
	}
	var vals []string
	for _, c := range r.Cookies() {
		if c.Name == p.cookie && c.Value != "" {
			vals = append(vals, c.Value)
		}
	}
	if len(vals) == 0 {
		return ""
	}
	return strings.Join(vals, "\n")
}

// privatePrefix is the start of every private key of the identity id: privateNS, the
// HMAC's first privateIDLen hex digits, "/".
func privatePrefix(secret []byte, id string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(id))
	return privateNS + hex.EncodeToString(m.Sum(nil))[:privateIDLen] + "/"
}

// privateKey is the private key of the URL whose shared key is key, for the identity id
// (FR-PRV-3).
func privateKey(secret []byte, id, key string) string {
	return privatePrefix(secret, id) + key
}

// privateVariantKey is httpcache.VariantKey for the private cache (secret set): the varied
// fields' values, which may be the identity itself (Vary: Cookie, Vary: Authorization), are
// in the key as an HMAC, as the identity is (FR-PRV-3). With secret nil, VariantKey.
func privateVariantKey(secret []byte, base string, names []string, r *http.Request) string {
	v := httpcache.VariantKey(base, names, r)
	if secret == nil {
		return v
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(v[len(base):]))
	return base + "\x00vary" + hex.EncodeToString(m.Sum(nil))[:privateIDLen]
}

// privateRequest serves r, whose normal key is key, from the private cache, or through its
// fetch, when its path is under private.paths and it carries an identity, and reports
// whether it did. A function, not a method: one frame on the paths that call it
// (docs/yaegi.md).
func privateRequest(h *Handler, w http.ResponseWriter, r *http.Request, key string) bool {
	p := h.private
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	if setting.MatchPattern(keyPath(key), p.paths) < 0 {
		return false
	}
	id := identityOf(p, r)
	if id == "" {
		return false
	}
	pkey := privateKey(p.c.secret, id, key)
	now := h.s.Now()
	if ent := privateLookup(h, p, r, pkey, now); ent != nil && now.Before(ent.FreshUntil) && !requestNoCache(r) {
		h.write(w, r, &answer{ent: ent, hit: true, detail: privateDetail})
		return true
	}
	if r.Method == http.MethodHead || r.ContentLength != 0 || len(r.Header["Upgrade"]) > 0 {
		pass(h, w, r, httpcache.Partition(r), []string{statusFwd + fwdURIMiss + paramDetail + privateDetail})
		return true
	}
	// Coalesced with the same identity's requests for the URL alone: the flight's key is
	// the private key (FR-PRV-4).
	c, leader := flight.Join(h.e.flights, pkey)
	if !leader {
		h.follow(w, r, c, pkey, nil, statusFwd+fwdURIMiss+paramCollapsed)
		return true
	}
	// As miss does: a flight that ended since the lookup has stored its answer.
	if ent := privateLookup(h, p, r, pkey, now); ent != nil && now.Before(ent.FreshUntil) && !requestNoCache(r) {
		res := &fetchResult{status: ent.Status, header: ent.Header, body: ent.Body, entry: ent}
		flight.RunHere(h.e.flights, pkey, c, func() (interface{}, error) { return res, nil })
		h.write(w, r, &answer{ent: ent, hit: true, detail: privateDetail})
		return true
	}
	lead(h, w, r, c, pkey, "", nil, statusFwd+fwdURIMiss, p)
	return true
}

// privateGet reads one private key; a store that fails reads as a miss.
func privateGet(h *Handler, p *privateStage, key string, now time.Time) *store.Entry {
	ctx, cancel := context.WithTimeout(context.Background(), h.s.StoreTimeout)
	ent, err := p.c.st.Get(ctx, key)
	cancel()
	if err != nil || ent == nil || ent.Pass || now.After(ent.KeepUntil) {
		return nil
	}
	return ent
}

// privateLookup finds the private entry r selects under key, following a variant index.
func privateLookup(h *Handler, p *privateStage, r *http.Request, key string, now time.Time) *store.Entry {
	ent := privateGet(h, p, key, now)
	if ent == nil || !ent.VaryIndex {
		return ent
	}
	ent = privateGet(h, p, privateVariantKey(p.c.secret, httpcache.GenerationKey(key, ent), ent.Vary, r), now)
	if ent == nil || ent.VaryIndex {
		return nil
	}
	return ent
}

// privateFetch is fetch for the private cache: through the gate, stored under key in the
// private store when the private policy allows, never marked hit-for-pass nor remembered
// by the negative cache (both shared by every user). An answer with Weir-Purge-User drops
// the user's entries and is not stored.
func privateFetch(h *Handler, p *privateStage, req *http.Request, cancel context.CancelFunc, key string, sk *sink) *fetchResult {
	defer cancel()
	oa, refused := gatedFetch(h, req, httpcache.Partition(req), wayRecord, &p.policy, sk, false)
	if oa == nil {
		return &fetchResult{refused: *refused}
	}
	rec := oa.rec
	if oa.truncated {
		return &fetchResult{status: rec.status, truncated: true}
	}
	res := &fetchResult{status: rec.status, header: rec.header, body: rec.body, reason: rec.reason}
	switch {
	case rec.mode == modeStream:
		res.streamed = true
		return res
	case rec.mode == modeDecline:
		res.declined = true
		return res
	case rec.mode == modeDiscard:
		res.reason = httpcache.ReasonTooLarge
		return res
	case httpcache.IsOriginError(rec.status):
		res.originError = true
		return res
	case !rec.storable || oa.purged:
		return res
	}
	ent := httpcache.NewEntry(&p.policy, rec.status, rec.header, rec.body, rec.cc, oa.reqTime, oa.respTime)
	// Kept as long as fresh: a private entry is never revalidated nor served stale.
	ent.KeepUntil = ent.FreshUntil
	res.entry = ent
	if !ent.FreshUntil.After(oa.respTime) {
		// Fresh for no time (no-cache, max-age=0): shared with the flight, not stored.
		return res
	}
	if len(ent.Vary) > 0 {
		res.varKey = httpcache.VariantKey(key, ent.Vary, req)
	}
	res.stored = putIn(h, p.c.st, key, req, ent, p.c.secret)
	if !res.stored {
		res.reason = httpcache.ReasonTooLarge
	}
	return res
}

// purgeUserOf drops every private entry of r's identity, on an answer that carried
// Weir-Purge-User (a logout), wherever r's path is (FR-PRV-5). Nothing without the private cache or
// without an identity.
func purgeUserOf(h *Handler, r *http.Request) {
	p := h.private
	if p == nil {
		return
	}
	id := identityOf(p, r)
	if id == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), sitePurgeTimeout)
	defer cancel()
	if _, err := purgePrivate(p.c, ctx, privatePrefix(p.c.secret, id), ""); err != nil {
		// The hashed prefix, never the identity.
		h.s.Log(fmt.Sprintf("middleware %s: could not purge a user's private entries: %v", h.e.name, err))
	}
}

// purgePrivate drops from c the private entries under prefix (one identity's), or, with
// key set, the one URL's entry with its variants.
func purgePrivate(c *privateCache, ctx context.Context, prefix, key string) (int, error) {
	pu, ok := c.st.(store.Purger)
	if !ok {
		return 0, fmt.Errorf("purge: %w", store.ErrPurgeUnsupported)
	}
	if key != "" {
		return pu.PurgeKey(ctx, prefix+key)
	}
	return pu.PurgePrefix(ctx, prefix)
}

// purgeUser is the operator's purge of the private entries of the identity user (its value
// as the client sends it: a cookie's value, an Authorization header's), every one, or with
// rawURL that URL's alone.
func (o operator) purgeUser(ctx context.Context, user, rawURL string) (int, error) {
	c := o.e.private
	if c == nil {
		return 0, errPrivateOff
	}
	if user == "" {
		return 0, errors.New("purge: user: the identity's value is needed")
	}
	prefix := privatePrefix(c.secret, user)
	if rawURL == "" {
		return purgePrivate(c, ctx, prefix, "")
	}
	key, err := o.keyOf(rawURL)
	if err != nil {
		return 0, err
	}
	return purgePrivate(c, ctx, prefix, key)
}
