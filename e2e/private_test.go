package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// The private cache through Traefik: two users and an anonymous client on one URL, whose
// origin echoes the user. Each user's repeat is a hit, the origin asked once per user; no
// user ever gets the other's answer, and the anonymous client gets neither.

// privateOrigin answers /pv/account with the session cookie's value and the count of its
// calls for that user ("alice 1"), Cache-Control: private; anonymous requests get
// "anonymous" and the count. /pv/logout answers with Weir-Purge-User.
func privateOrigin(t *testing.T) *Origin {
	o := newOrigin(t)
	var calls int64
	o.Handle("/pv/account", func(w http.ResponseWriter, r *http.Request) {
		who := "anonymous"
		if c, err := r.Cookie("session"); err == nil {
			who = c.Value
		}
		w.Header().Set("Cache-Control", "private, max-age=60")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "%s %d", who, atomic.AddInt64(&calls, 1))
	})
	o.Handle("/pv/logout", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Weir-Purge-User", "1")
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, "bye")
	})
	return o
}

// privateConf turns the private cache on for /pv/account, the session cookie the identity.
func privateConf(conf map[string]interface{}) map[string]interface{} {
	conf["private"] = map[string]interface{}{"paths": []interface{}{"/pv/account"}, "identity": "cookie:session"}
	return conf
}

// asUser is the header of a request with user's session cookie ("": none), for
// sharedHost: the cache key holds the host, which the two Traefiks of a fleet would
// otherwise see as their own addresses.
func asUser(user string) map[string]string {
	if user == "" {
		return map[string]string{"Host": sharedHost}
	}
	return map[string]string{"Host": sharedHost, "Cookie": "session=" + user}
}

// checkPrivate runs the steps on a (and b, the second Traefik of a fleet, when not nil).
func checkPrivate(t *testing.T, o *Origin, a, b *Traefik) {
	t.Helper()
	if b == nil {
		b = a
	}
	steps := []struct {
		desc string
		tr   *Traefik
		user string
		body string
		hit  bool
	}{
		{desc: "alice first", tr: a, user: "alice", body: "alice 1"},
		{desc: "alice again", tr: a, user: "alice", body: "alice 1", hit: true},
		{desc: "bob", tr: b, user: "bob", body: "bob 2"},
		{desc: "anonymous", tr: a, body: "anonymous 3"},
		{desc: "alice one byte apart", tr: b, user: "alicf", body: "alicf 4"},
		{desc: "alice on the other", tr: b, user: "alice", body: "alice 1", hit: true},
		{desc: "bob again", tr: a, user: "bob", body: "bob 2", hit: true},
		{desc: "anonymous again", tr: b, body: "anonymous 5"},
	}
	for _, st := range steps {
		r := send(t, st.tr, http.MethodGet, "/pv/account", asUser(st.user))
		wantReply(t, st.desc, r, http.StatusOK, st.body)
		if cs := r.cacheStatus(); cs.hit() != st.hit || st.hit && cs.params["detail"] != "private" {
			t.Errorf("%s: Cache-Status %q, want hit %v (detail=private)", st.desc, cs, st.hit)
		}
	}
	wantCount(t, o, "/pv/account", 5)

	// Alice logs out: her entry goes, Bob's stays, and the client never sees the field.
	r := send(t, a, http.MethodPost, "/pv/logout", asUser("alice"))
	wantCount(t, o, "/pv/logout", 1)
	wantReply(t, "logout", r, http.StatusOK, "bye")
	if v := r.header.Get("Weir-Purge-User"); v != "" {
		t.Errorf("logout: the client got Weir-Purge-User %q", v)
	}
	// Asked through a, which purged: b's near cache hears of it from Redis a moment later.
	wantReply(t, "alice after logout", send(t, a, http.MethodGet, "/pv/account", asUser("alice")), http.StatusOK, "alice 6")
	wantHit(t, "bob after alice's logout", send(t, a, http.MethodGet, "/pv/account", asUser("bob")))

	// The operator purges Bob's entries, naming his session's value.
	admin := map[string]string{"Authorization": "Bearer " + adminTestToken, "Content-Type": "application/json"}
	r = sendBody(t, a, http.MethodPost, "/pv/_weir/api/purge", admin, `{"user":"bob"}`)
	if r.status != http.StatusOK {
		t.Fatalf("purge of bob: %d %q", r.status, r.body)
	}
	wantReply(t, "bob after the purge", send(t, a, http.MethodGet, "/pv/account", asUser("bob")), http.StatusOK, "bob 7")
	wantHit(t, "alice after bob's purge", send(t, a, http.MethodGet, "/pv/account", asUser("alice")))
	r = sendBody(t, a, http.MethodPost, "/pv/_weir/api/purge", map[string]string{"Content-Type": "application/json"}, `{"user":"bob"}`)
	if r.status != http.StatusForbidden {
		t.Errorf("purge of a user without the token: %d, want 403", r.status)
	}
}

// TestPrivateCache: the private cache in one Traefik's memory.
func TestPrivateCache(t *testing.T) {
	o := privateOrigin(t)
	conf := privateConf(map[string]interface{}{})
	conf["admin"] = map[string]interface{}{"path": "/pv/_weir", "token": adminTestToken}
	tr := startTraefik(t, o, cachedRoute("pv", "/pv", "weir-pv", conf))
	checkPrivate(t, o, tr, nil)
	for _, line := range outputWith(t, tr, "alice") {
		t.Errorf("Traefik's output names an identity: %s", line)
	}
}

// TestPrivateCacheRedis: two Traefiks share the private cache through Redis
// (private.shared) with one secret file: a user's answer stored through one is a hit
// through the other, and Redis holds the HMAC of the identity, never the identity.
func TestPrivateCacheRedis(t *testing.T) {
	requireE2ERedis(t)
	rd := startRedis(t, 0)
	o := privateOrigin(t)
	secret := filepath.Join(t.TempDir(), "private-secret")
	if err := os.WriteFile(secret, []byte("a fleet's private secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := privateConf(redisConfig(rd.URL(0)))
	conf["private"].(map[string]interface{})["shared"] = "true"
	conf["private"].(map[string]interface{})["secretFile"] = secret
	conf["admin"] = map[string]interface{}{"path": "/pv/_weir", "token": adminTestToken}
	a, b := startPair(t, o, cachedRoute("pv", "/pv", "weir-pv", conf))
	checkPrivate(t, o, a, b)
	keys, err := rd.Do("KEYS", "*")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(keys, "private/") {
		t.Errorf("Redis keys %q: no private entry", keys)
	}
	for _, who := range []string{"alice", "bob"} {
		if strings.Contains(keys, who) {
			t.Errorf("Redis keys %q hold the identity %q", keys, who)
		}
	}
}
