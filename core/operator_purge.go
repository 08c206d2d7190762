package core

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/weirproxy/weir/core/admin"
	"github.com/weirproxy/weir/core/hostkey"
	"github.com/weirproxy/weir/core/httpcache"
	"github.com/weirproxy/weir/core/store"
)

// Purges drop what an operator names (admin's purge, PURGE sent to the site) from the store
// that every instance sharing it reads, and from this instance's memory at once; the other
// instances' near caches hear of it from the store (redisstore's tracking).

// sitePurgeTimeout bounds a PURGE sent to the site: a URL with many variants is dropped in
// batches from a shared store.
const sitePurgeTimeout = 10 * time.Second

// tlsSeen marks a request built for an https URL's key: the key's scheme comes from r.TLS.
var tlsSeen = &tls.ConnectionState{}

// purger is e's store as a store.Purger; every store Weir builds is one.
func purger(e *engine) (store.Purger, error) {
	p, ok := e.store.(store.Purger)
	if !ok {
		return nil, fmt.Errorf("purge: %w", store.ErrPurgeUnsupported)
	}
	return p, nil
}

// purgeKey drops key with every variant stored under it, and its negative entry.
func purgeKey(e *engine, ctx context.Context, key string) (int, error) {
	e.neg.Forget(key)
	p, err := purger(e)
	if err != nil {
		return 0, err
	}
	return p.PurgeKey(ctx, key)
}

// purgeNamed drops what p names (admin.Engine's Purge, operator_console.go).
func (o operator) purgeNamed(ctx context.Context, p admin.Purge) (int, error) {
	e := o.e
	switch {
	case p.User != "":
		return o.purgeUser(ctx, p.User, strings.TrimSpace(p.URL))
	case p.URL != "":
		key, err := o.keyOf(p.URL)
		if err != nil {
			return 0, err
		}
		return purgeKey(e, ctx, key)
	case p.Tag != "":
		pu, err := purger(e)
		if err != nil {
			return 0, err
		}
		return pu.PurgeTag(ctx, strings.TrimSpace(p.Tag))
	case p.Prefix != "":
		if !strings.HasPrefix(p.Prefix, "http://") && !strings.HasPrefix(p.Prefix, "https://") {
			return 0, fmt.Errorf("prefix: %q must start with http:// or https://, as the URLs it drops", p.Prefix)
		}
		return purgePrefixes(e, ctx, []string{p.Prefix})
	case p.Host != "":
		host := strings.ToLower(strings.TrimSpace(p.Host))
		if strings.ContainsAny(host, "/ ?#") {
			return 0, fmt.Errorf("host: %q is not a host name", p.Host)
		}
		// The host with every port, unless the operator named one.
		anyPort := !strings.Contains(strings.TrimPrefix(host, "["), "]:") && (strings.HasPrefix(host, "[") || !strings.Contains(host, ":"))
		var prefixes []string
		for _, scheme := range []string{"http://", "https://"} {
			prefixes = append(prefixes, scheme+host+"/")
			if anyPort {
				prefixes = append(prefixes, scheme+host+":")
			}
		}
		n, err := purgePrefixes(e, ctx, prefixes)
		if err != nil || !anyPort {
			return n, err
		}
		m, err := purgeSpellings(e, ctx, host)
		return n + m, err
	case p.All:
		// Cached answers only: the store's keys of Weir's own (shared breaker deadlines)
		// start with no scheme. Then warm.paths are fetched again (warm.go).
		n, err := purgePrefixes(e, ctx, []string{"http://", "https://"})
		if err == nil && e.private != nil {
			// Every user's private entries too (private.go).
			var m int
			m, err = purgePrivate(e.private, ctx, privateNS, "")
			n += m
		}
		if err == nil {
			e.warm.start(warmOnPurge)
		}
		return n, err
	}
	return 0, fmt.Errorf("purge: nothing named")
}

// purgeSpellings drops what a purge of host by prefixes leaves: the answers stored under
// other spellings of it (EXAMPLE.com, example.com.), which Traefik routes as host and the
// cache keeps apart, its key holding the host as sent. Every key whose host has host's
// canonical key (hostkey.Canonical) goes: from this instance's memory, and from a shared
// store through a SCAN whose glob matches the host's letters in either case.
func purgeSpellings(e *engine, ctx context.Context, host string) (int, error) {
	canon := hostkey.Canonical(host)
	match := func(key string) bool {
		if !strings.HasPrefix(key, "http://") && !strings.HasPrefix(key, "https://") {
			return false
		}
		h, _ := splitKey(key)
		return hostkey.Canonical(h) == canon
	}
	n := 0
	if e.hot != nil {
		n = e.hot.DeleteFunc(match)
	}
	sw, ok := e.store.(sweeper)
	if !ok {
		return n, nil
	}
	m, err := sw.sweep(ctx, "http*://"+caseGlob(canon)+"*", match)
	return n + m, err
}

// caseGlob is a glob (SCAN's MATCH syntax) matching name whatever the case of its ASCII
// letters: "Ab." gives "[aA][bB].". An IPv6 literal, whose spellings differ in more than
// case, gives "\[" and leaves the rest to the caller's own test.
func caseGlob(name string) string {
	if strings.HasPrefix(name, "[") {
		return `\[`
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z':
			b.WriteString("[" + string(c) + string(c-'a'+'A') + "]")
		case c == '*' || c == '?' || c == '[' || c == ']' || c == '\\':
			b.WriteString(`\` + string(c))
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func purgePrefixes(e *engine, ctx context.Context, prefixes []string) (int, error) {
	pu, err := purger(e)
	if err != nil {
		return 0, err
	}
	total := 0
	for _, prefix := range prefixes {
		n, err := pu.PurgePrefix(ctx, prefix)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// keyOf is the cache key of an absolute URL, as a GET for it would be keyed.
func (o operator) keyOf(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("url: %q is not an absolute http or https URL", raw)
	}
	r, err := http.NewRequest(http.MethodGet, u.String(), nil)
	if err != nil {
		return "", fmt.Errorf("url: %q: %w", raw, err)
	}
	r.RequestURI = u.RequestURI()
	if u.Scheme == "https" {
		r.TLS = tlsSeen
	}
	k := httpcache.NewKeyer(o.s.QueryDrop)
	return httpcache.Key(&k, r), nil
}

// methodPurge drops a URI's entry from the cache (and the shared store, for every instance
// using it) without contacting the origin, when cache.allowPurge is set.
const methodPurge = "PURGE"

func (h *Handler) purge(w http.ResponseWriter, r *http.Request) {
	v := adminAccess(h.e, *h.s).Check(r, h.s.Now())
	if v.Result == admin.Throttled {
		// As the admin answers it (admin.Throttle): the same brake counts both.
		h.write(w, r, &answer{status: http.StatusTooManyRequests, text: "too many failed attempts from this address, retry later",
			cache: statusBypass, detail: admin.DetailThrottled, retryAfter: v.RetryAfter, negotiated: true})
		return
	}
	if v.Result != admin.Granted {
		// An unauthenticated client must never empty the cache.
		h.write(w, r, &answer{status: http.StatusForbidden, text: "forbidden: PURGE needs admin.token, from an address in admin.allow when it is set",
			cache: statusBypass, detail: "forbidden"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), sitePurgeTimeout)
	defer cancel()
	key := httpcache.Key(&h.keyer, r)
	if _, err := purgeKey(h.e, ctx, key); err != nil {
		h.s.Log(fmt.Sprintf("middleware %s: could not purge %s: %v", h.e.name, key, err))
		// The entry may still be served by every instance sharing the store: say so, so the
		// operator retries.
		h.write(w, r, &answer{status: http.StatusServiceUnavailable, text: "purge failed: " + err.Error(),
			cache: statusBypass, detail: "purge-failed", retryAfter: time.Second})
		return
	}
	h.write(w, r, &answer{status: http.StatusOK, text: "purged", cache: statusBypass, detail: "purged"})
}
