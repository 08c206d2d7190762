package core

import (
	"github.com/weirproxy/weir/core/httpcache"
	"github.com/weirproxy/weir/core/setting"
)

// reasonUnstoredPath is the Cache-Status detail of an answer to a path outside cache.paths:
// shared with the requests coalesced on its fetch, never stored.
const reasonUnstoredPath = "path-not-cached"

// buckets are cache.paths and cache.ttls, parsed once per Handler. They are read where an
// answer is fetched, never on the hit path: a path outside cache.paths has nothing stored to
// hit, and a stored entry carries the freshness its path gave it.
type buckets struct {
	// paths are the patterns of the paths stored; nil: every path.
	paths []setting.Pattern
	// private are private.paths: answers there are per user, and the shared cache stores
	// none of them, for any request (private.go).
	private []setting.Pattern
	// ttls are cache.ttls' patterns, policies the policy each gives: the Handler's with
	// DefaultTTL replaced.
	ttls     []setting.Pattern
	policies []httpcache.Policy
}

// newBuckets parses s's cache.paths, cache.ttls and private.paths (validated already) over
// base, the Handler's policy. Nil when none is set: the fetch then pays one nil test.
func newBuckets(s Settings, base httpcache.Policy) *buckets {
	if len(s.CachePaths) == 0 && len(s.CacheTTLs) == 0 && len(s.Private.Paths) == 0 {
		return nil
	}
	b := &buckets{}
	for _, v := range s.Private.Paths {
		if p, err := setting.ParsePattern(v); err == nil {
			b.private = append(b.private, p)
		}
	}
	for _, v := range s.CachePaths {
		p, err := setting.ParsePattern(v)
		if err == nil {
			b.paths = append(b.paths, p)
		}
	}
	for _, t := range s.CacheTTLs {
		p, err := setting.ParsePattern(t.Pattern)
		if err != nil {
			continue
		}
		pol := base
		pol.DefaultTTL = t.TTL
		b.ttls = append(b.ttls, p)
		b.policies = append(b.policies, pol)
	}
	return b
}

// bucketOf returns the policy for an answer stored under key, and whether cache.paths (and
// private.paths, under which the shared cache stores nothing) let it be stored. A function
// of the fetch's, not a method: one frame per origin fetch.
func bucketOf(h *Handler, key string) (*httpcache.Policy, bool) {
	b := h.buckets
	if b == nil {
		return &h.policy, true
	}
	path := keyPath(key)
	keep := (len(b.paths) == 0 || setting.MatchPattern(path, b.paths) >= 0) && setting.MatchPattern(path, b.private) < 0
	pol := &h.policy
	if i := setting.MatchPattern(path, b.ttls); i >= 0 {
		pol = &b.policies[i]
	}
	return pol, keep
}

// keyPath is the path of a cache key as the key holds it: escaped as the client sent it
// (httpcache.Keyer), without the query. Patterns match it, so that "/static%2Fa.js" is
// not under "/static/", as the origin may not take it to be either.
func keyPath(key string) string {
	_, _, path := httpcache.SplitKey(key)
	return path
}
