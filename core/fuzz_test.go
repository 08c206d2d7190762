package core

import (
	"bufio"
	"math/rand"
	"net/http"
	"strings"
	"testing"

	"github.com/weirproxy/weir/core/httpcache"
)

// The hit path looks a request up under its scheme, host and RequestURI as sent, before any
// normalising: that key is the request's own whenever an entry is stored under it.
var hitPathSeeds = []struct {
	target, drop string
	seed         int64
}{
	{"/p?a=1&b=2", "", 1},
	{"/p?b=2&a=1", "", 2},
	{"/p", "utm_source", 3},
	{"/p?", "utm_source", 4},
	{"/p??", "", 5},
	{"/p?a=1#x&b", "", 6},
	{"/p?utm_source=x", "utm_source", 7},
	{"/p?utm_source=x&a=1", "utm_source", 8},
	{"/p?&", "", 9},
	{"/p?a=1&&b=2&", "fbclid", 10},
	{"/p%3Fa?b=1&a", "", 11},
	{"/a/../b?z&y=1&y=0", "y", 12},
	{"/p?a b", "", 13},
}

func FuzzHitPathKey(f *testing.F) {
	for _, s := range hitPathSeeds {
		f.Add(s.target, s.drop, s.seed)
	}
	f.Fuzz(checkHitPathKeyProps)
}

func TestHitPathKeySeeds(t *testing.T) {
	for _, s := range hitPathSeeds {
		checkHitPathKeyProps(t, s.target, s.drop, s.seed)
	}
}

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
	var dropList []string
	if drop != "" {
		dropList = strings.Split(drop, ",")
	}
	k := httpcache.NewKeyer(dropList)
	r := parseTarget(target)
	if r == nil {
		return
	}
	// ServeHTTP's check before it answers a hit with a query (queryHit): net/http makes
	// RawQuery what follows the first "?" of the target.
	if i := strings.IndexByte(target, '?'); i >= 0 && target[i+1:] != r.URL.RawQuery {
		t.Fatalf("target %q: RawQuery %q is not what follows its first ?", target, r.URL.RawQuery)
	}
	key := k.Key(r)
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
	if got := k.Key(normal); got != key {
		t.Fatalf("target %q: key %q, but its normal form %q has key %q", target, key, normal.RequestURI, got)
	}

	// Whatever another spelling of the request stores (its parameters reordered), the hit
	// path finds it under this target only if it is this target's own key.
	if i := strings.IndexByte(target, '?'); i >= 0 {
		other := parseTarget(target[:i+1] + shuffleParams(target[i+1:], seed))
		if other == nil {
			return
		}
		if hp, stored := hitPathKey(r), k.Key(other); hp == stored && hp != key {
			t.Fatalf("target %q finds %q, stored for %q, on the hit path: its own key is %q", target, stored, other.RequestURI, key)
		}
		if hp, stored := hitPathKey(other), key; hp == stored && k.Key(other) != key {
			t.Fatalf("target %q finds %q, stored for %q, on the hit path: its own key is %q", other.RequestURI, stored, target, k.Key(other))
		}
	}
}

// shuffleParams reorders the parameters of q, keeping the order of those of the same name.
func shuffleParams(q string, seed int64) string {
	parts := strings.Split(q, "&")
	if len(parts) < 2 {
		return q
	}
	perm := rand.New(rand.NewSource(seed)).Perm(len(parts))
	byName := make(map[string][]string)
	for _, p := range parts {
		n, _, _ := strings.Cut(p, "=")
		byName[n] = append(byName[n], p)
	}
	out := make([]string, len(parts))
	for i, j := range perm {
		n, _, _ := strings.Cut(parts[j], "=")
		out[i] = byName[n][0]
		byName[n] = byName[n][1:]
	}
	return strings.Join(out, "&")
}
