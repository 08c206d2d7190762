package core

import (
	"bufio"
	"net/http"
	"strings"
	"testing"

	"github.com/weirproxy/weir/core/httpcache"
	"github.com/weirproxy/weir/internal/querytest"
)

// The hit path looks a request up under its scheme, host and RequestURI as sent, before any
// normalising: that key is the request's own whenever an entry is stored under it.
var hitPathSeeds = []querytest.Seed{
	{Query: "/p?a=1&b=2", Order: 1},
	{Query: "/p?b=2&a=1", Order: 2},
	{Query: "/p", Drop: "utm_source", Order: 3},
	{Query: "/p?", Drop: "utm_source", Order: 4},
	{Query: "/p??", Order: 5},
	{Query: "/p?a=1#x&b", Order: 6},
	{Query: "/p?utm_source=x", Drop: "utm_source", Order: 7},
	{Query: "/p?utm_source=x&a=1", Drop: "utm_source", Order: 8},
	{Query: "/p?&", Order: 9},
	{Query: "/p?a=1&&b=2&", Drop: "fbclid", Order: 10},
	{Query: "/p%3Fa?b=1&a", Order: 11},
	{Query: "/a/../b?z&y=1&y=0", Drop: "y", Order: 12},
	{Query: "/p?a b", Order: 13},
}

func FuzzHitPathKey(f *testing.F) { querytest.Fuzz(f, hitPathSeeds, checkHitPathKeyProps) }

func TestHitPathKeySeeds(t *testing.T) { querytest.Run(t, hitPathSeeds, checkHitPathKeyProps) }

// parseTarget is a GET for target on example.com as net/http's server hands it on, or nil
// when the server would refuse it or not hand it on in origin form.
func parseTarget(target string) *http.Request {
	r, err := http.ReadRequest(bufio.NewReader(strings.NewReader("GET " + target + " HTTP/1.1\r\nHost: example.com\r\n\r\n")))
	if err != nil || r.RequestURI != target || len(target) == 0 || target[0] != '/' {
		return nil
	}
	return r
}

func checkHitPathKeyProps(t *testing.T, target, drop string, seed int64) {
	k := httpcache.NewKeyer(querytest.DropList(drop))
	r := parseTarget(target)
	if r == nil {
		return
	}
	// ServeHTTP's check before it answers a hit with a query (queryHit): net/http makes
	// RawQuery what follows the first "?" of the target.
	if i := strings.IndexByte(target, '?'); i >= 0 && target[i+1:] != r.URL.RawQuery {
		t.Fatalf("target %q: RawQuery %q is not what follows its first ?", target, r.URL.RawQuery)
	}
	key := httpcache.Key(&k, r)
	const origin = "http://example.com"
	if !strings.HasPrefix(key, origin+"/") {
		t.Fatalf("target %q: key %q", target, key)
	}

	// A client that sends the key's own URI is answered by the hit path's lookup.
	normal := parseTarget(key[len(origin):])
	if normal == nil {
		t.Fatalf("target %q: its key's URI %q is not a request target", target, key[len(origin):])
	}
	if got := hitPathKey(normal); got != key {
		t.Fatalf("target %q: the hit path looks %q up as %q, want its key %q", target, normal.RequestURI, got, key)
	}
	if got := httpcache.Key(&k, normal); got != key {
		t.Fatalf("target %q: key %q, but its normal form %q has key %q", target, key, normal.RequestURI, got)
	}

	// Whatever another spelling of the request stores (its parameters reordered), the hit
	// path finds it under this target only if it is this target's own key.
	if i := strings.IndexByte(target, '?'); i >= 0 {
		other := parseTarget(target[:i+1] + querytest.Shuffle(target[i+1:], seed))
		if other == nil {
			return
		}
		if hp, stored := hitPathKey(r), httpcache.Key(&k, other); hp == stored && hp != key {
			t.Fatalf("target %q finds %q, stored for %q, on the hit path: its own key is %q", target, stored, other.RequestURI, key)
		}
		if hp, stored := hitPathKey(other), key; hp == stored && httpcache.Key(&k, other) != key {
			t.Fatalf("target %q finds %q, stored for %q, on the hit path: its own key is %q", other.RequestURI, stored, target, httpcache.Key(&k, other))
		}
	}
}
