package core

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/admin"
	"github.com/weirproxy/weir/core/httpcache"
	"github.com/weirproxy/weir/core/store"
	"github.com/weirproxy/weir/internal/clocktest"
)

// The private cache (private.*): answers stored per user, under an HMAC of the identity;
// no request ever gets another identity's answer, nor one without an identity.

const (
	privateHit    = "Weir; hit; ttl=60; detail=private"
	privateStored = "Weir; fwd=uri-miss; stored"
	privateMissed = "Weir; fwd=uri-miss"
)

// userOrigin answers with the request's identity echoed: its session cookie's value or its
// Authorization, "anonymous" for neither, and the call's number, under header.
func userOrigin(t *testing.T, header []string) *scriptOrigin {
	return newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		who := "anonymous"
		if c, err := r.Cookie("session"); err == nil {
			who = c.Value
		}
		if a := r.Header.Get("Authorization"); a != "" {
			who = a
		}
		addFields(w.Header(), header)
		w.Write([]byte(who + " " + strconv.Itoa(n)))
	})
}

// privateSettings turn the private cache on for /account with the session cookie.
func privateSettings(clock *clocktest.Clock) Settings {
	return Settings{Now: clock.Now, DefaultTTL: time.Minute,
		Private: PrivateSettings{Paths: []string{"/account"}, Identity: "cookie:session"}}
}

// TestPrivateIsolation: each identity's answer is its own; a repeat is a hit, the origin
// asked once; another identity, one byte apart, or none, never gets it.
func TestPrivateIsolation(t *testing.T) {
	const url = "http://example.com/account"
	type step struct {
		desc        string
		header      []string
		cacheStatus string
		body        string
	}
	tests := []struct {
		desc   string
		origin []string
		steps  []step
		calls  int
	}{
		{
			desc:   "private answers",
			origin: []string{"Cache-Control", "private, max-age=60"},
			steps: []step{
				{"A first", []string{"Cookie", "session=alice"}, privateStored, "alice 1"},
				{"A again", []string{"Cookie", "session=alice"}, privateHit, "alice 1"},
				{"B", []string{"Cookie", "session=bob"}, privateStored, "bob 2"},
				{"A one byte more", []string{"Cookie", "session=alicf"}, privateStored, "alicf 3"},
				{"anonymous", nil, privateMissed + "; detail=private", "anonymous 4"},
				{"B again", []string{"Cookie", "session=bob"}, privateHit, "bob 2"},
				{"another cookie alone", []string{"Cookie", "theme=alice"}, privateMissed + "; detail=private", "anonymous 5"},
				{"anonymous again", nil, privateMissed + "; detail=private", "anonymous 6"},
			},
			calls: 6,
		},
		{
			desc:   "answers without a directive take private.ttl",
			origin: nil,
			steps: []step{
				{"A first", []string{"Cookie", "session=alice"}, privateStored, "alice 1"},
				{"A again", []string{"Cookie", "session=alice"}, privateHit, "alice 1"},
				{"B", []string{"Cookie", "session=bob"}, privateStored, "bob 2"},
			},
			calls: 2,
		},
		{
			desc:   "no-store is never stored",
			origin: []string{"Cache-Control", "private, no-store"},
			steps: []step{
				{"A first", []string{"Cookie", "session=alice"}, privateMissed + "; detail=no-store", "alice 1"},
				{"A again", []string{"Cookie", "session=alice"}, privateMissed + "; detail=no-store", "alice 2"},
			},
			calls: 2,
		},
		{
			desc:   "Set-Cookie is never stored",
			origin: []string{"Cache-Control", "private, max-age=60", "Set-Cookie", "seen=1"},
			steps: []step{
				{"A first", []string{"Cookie", "session=alice"}, privateMissed + "; detail=set-cookie", "alice 1"},
				{"A again", []string{"Cookie", "session=alice"}, privateMissed + "; detail=set-cookie", "alice 2"},
			},
			calls: 2,
		},
		{
			desc:   "Vary: * is never stored",
			origin: []string{"Cache-Control", "private, max-age=60", "Vary", "*"},
			steps: []step{
				{"A first", []string{"Cookie", "session=alice"}, privateMissed + "; detail=vary-star", "alice 1"},
				{"A again", []string{"Cookie", "session=alice"}, privateMissed + "; detail=vary-star", "alice 2"},
			},
			calls: 2,
		},
		{
			desc:   "a cookie with Authorization beside it is no identity",
			origin: []string{"Cache-Control", "private, max-age=60"},
			steps: []step{
				{"A with credentials", []string{"Cookie", "session=alice", "Authorization", "Bearer x"}, privateMissed + "; detail=private", "Bearer x 1"},
				{"A alone", []string{"Cookie", "session=alice"}, privateStored, "alice 2"},
				{"A with credentials again", []string{"Cookie", "session=alice", "Authorization", "Bearer x"}, privateMissed + "; detail=private", "Bearer x 3"},
			},
			calls: 3,
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			clock := newFakeClock()
			o := userOrigin(t, tc.origin)
			h := newTestHandler(t, privateSettings(clock), o)
			for _, st := range tc.steps {
				w := do(t, h, http.MethodGet, url, st.header...)
				if got := w.Header().Get("Cache-Status"); got != st.cacheStatus {
					t.Errorf("%s: Cache-Status = %q, want %q", st.desc, got, st.cacheStatus)
				}
				if got := w.Body.String(); got != st.body {
					t.Errorf("%s: body = %q, want %q", st.desc, got, st.body)
				}
			}
			wantCalls(t, o, tc.calls)
		})
	}
}

// TestPrivateFreshness: a private answer lives its max-age, or private.ttl without one, and
// is then fetched again; never served stale.
func TestPrivateFreshness(t *testing.T) {
	tests := []struct {
		desc   string
		origin []string
		ttl    time.Duration
		fresh  time.Duration
	}{
		{desc: "max-age", origin: []string{"Cache-Control", "private, max-age=30"}, fresh: 30 * time.Second},
		{desc: "private.ttl", origin: []string{"Cache-Control", "private"}, ttl: 10 * time.Second, fresh: 10 * time.Second},
		{desc: "the default ttl", origin: nil, fresh: DefaultPrivateTTL},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			clock := newFakeClock()
			o := userOrigin(t, append(tc.origin, "Cache-Control", "stale-while-revalidate=600, stale-if-error=600"))
			s := privateSettings(clock)
			s.Private.TTL = tc.ttl
			h := newTestHandler(t, s, o)
			alice := []string{"Cookie", "session=alice"}
			do(t, h, http.MethodGet, "http://example.com/account", alice...)
			clock.Add(tc.fresh - time.Second)
			if got := do(t, h, http.MethodGet, "http://example.com/account", alice...).Body.String(); got != "alice 1" {
				t.Errorf("within freshness: body %q, want alice 1", got)
			}
			clock.Add(time.Second)
			if got := do(t, h, http.MethodGet, "http://example.com/account", alice...).Body.String(); got != "alice 2" {
				t.Errorf("past freshness: body %q, want alice 2", got)
			}
		})
	}
}

// TestPrivateHeaderIdentity: with header:Authorization, each credential has its own
// entries; outside private.paths, a request with credentials is fetched alone as before
// (FR-COA-8), and an anonymous answer under private.paths is never stored for anyone.
func TestPrivateHeaderIdentity(t *testing.T) {
	clock := newFakeClock()
	o := userOrigin(t, []string{"Cache-Control", "max-age=60"})
	h := newTestHandler(t, Settings{Now: clock.Now, Private: PrivateSettings{Paths: []string{"/me/"}}}, o)
	steps := []struct {
		desc, path, auth, cacheStatus, body string
	}{
		{"A", "/me/page", "Bearer a", privateStored, "Bearer a 1"},
		{"A again", "/me/page", "Bearer a", privateHit, "Bearer a 1"},
		{"B", "/me/page", "Bearer b", privateStored, "Bearer b 2"},
		{"anonymous", "/me/page", "", privateMissed + "; detail=path-not-cached", "anonymous 3"},
		{"anonymous again", "/me/page", "", privateMissed + "; detail=path-not-cached", "anonymous 4"},
		{"A outside", "/public", "Bearer a", privateMissed + "; detail=authorization", "Bearer a 5"},
		{"anonymous outside", "/public", "", privateStored, "anonymous 6"},
		{"A outside again", "/public", "Bearer a", "Weir; hit; ttl=60", "anonymous 6"},
	}
	for _, st := range steps {
		var hdr []string
		if st.auth != "" {
			hdr = []string{"Authorization", st.auth}
		}
		w := do(t, h, http.MethodGet, "http://example.com"+st.path, hdr...)
		if got := w.Header().Get("Cache-Status"); got != st.cacheStatus {
			t.Errorf("%s: Cache-Status = %q, want %q", st.desc, got, st.cacheStatus)
		}
		if got := w.Body.String(); got != st.body {
			t.Errorf("%s: body = %q, want %q", st.desc, got, st.body)
		}
	}
}

// TestPrivateCoalescing: concurrent requests of one identity for one URL share a fetch;
// another identity's never joins it.
func TestPrivateCoalescing(t *testing.T) {
	clock := newFakeClock()
	o := userOrigin(t, []string{"Cache-Control", "private, max-age=60"})
	o.hold(1)
	h := newTestHandler(t, privateSettings(clock), o)
	const url = "http://example.com/account"
	lead := serveAsync(h, newRequest(http.MethodGet, url, "Cookie", "session=alice"))
	o.waitEntered(t, 1)
	follow := serveAsync(h, newRequest(http.MethodGet, url, "Cookie", "session=alice"))
	c := newTestClient(h)
	waitFollowers(t, h, privateKey(h.private.c.secret, "alice", "http://example.com/account"), 1)
	// Bob's request is not a follower: it reaches the origin while Alice's fetch is held.
	if got := c.get(t, url, "Cookie", "session=bob"); got != "bob 2" {
		t.Errorf("bob: body %q, want bob 2", got)
	}
	o.release(1)
	for _, p := range []*pendingAnswer{lead, follow} {
		if got := awaitAnswer(t, p).Body.String(); got != "alice 1" {
			t.Errorf("alice: body %q, want alice 1", got)
		}
	}
	wantCalls(t, o, 2)
}

// testClient serves requests through a handler for a test.
type testClient struct{ h *Handler }

func newTestClient(h *Handler) testClient { return testClient{h: h} }

// get is the body of a GET of url with header.
func (c testClient) get(t *testing.T, url string, header ...string) string {
	t.Helper()
	return serveRequest(t, c.h, newRequest(http.MethodGet, url, header...)).Body.String()
}

// TestPrivateKeyHidesIdentity: a private key holds the HMAC, never the identity; two
// identities, or two secrets, never share a key.
func TestPrivateKeyHidesIdentity(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	tests := []struct {
		desc, a, b string
	}{
		{desc: "one byte apart", a: "alice", b: "alicf"},
		{desc: "a prefix", a: "alice", b: "alice2"},
		{desc: "empty and not", a: "", b: "x"},
		{desc: "a token", a: "Bearer eyJhbGciOi", b: "Bearer eyJhbGciOj"},
	}
	for _, tc := range tests {
		ka := privateKey(secret, tc.a, "http://example.com/account")
		kb := privateKey(secret, tc.b, "http://example.com/account")
		if ka == kb {
			t.Errorf("%s: %q and %q share key %q", tc.desc, tc.a, tc.b, ka)
		}
		if tc.a != "" && strings.Contains(ka, tc.a) {
			t.Errorf("%s: key %q holds the identity %q", tc.desc, ka, tc.a)
		}
		if !strings.HasPrefix(ka, privateNS) || !strings.HasSuffix(ka, "/http://example.com/account") ||
			len(ka) != len(privateNS)+privateIDLen+1+len("http://example.com/account") {
			t.Errorf("%s: key %q is not privateNS, %d hex digits, /, the URL's key", tc.desc, ka, privateIDLen)
		}
	}
	if privateKey(secret, "alice", "k") == privateKey([]byte("another secret"), "alice", "k") {
		t.Error("two secrets give one key")
	}
}

// FuzzPrivateKey: two identities never share a key, and no identity of a few bytes or
// more appears in its key.
func FuzzPrivateKey(f *testing.F) {
	f.Add("alice", "alicf", "http://example.com/account")
	f.Add("Bearer abc", "Bearer abd", "https://example.com/a?b=1")
	f.Add("", "\x00", "http://x/")
	secret := []byte("fuzz secret, thirty-two bytes!!!")
	f.Fuzz(func(t *testing.T, a, b, key string) {
		ka, kb := privateKey(secret, a, key), privateKey(secret, b, key)
		if a != b && ka == kb {
			t.Fatalf("%q and %q share key %q", a, b, ka)
		}
		// Shorter values may occur in hex or in the URL by chance.
		if len(a) >= 8 && !strings.Contains(key, a) && strings.Contains(ka, a) {
			t.Fatalf("key %q holds the identity %q", ka, a)
		}
		if !strings.HasPrefix(ka, privateNS) || !strings.HasSuffix(ka, "/"+key) {
			t.Fatalf("key %q is not privateNS, the HMAC, the URL's key %q", ka, key)
		}
	})
}

// TestPrivatePurges: the origin's Weir-Purge-User drops the requesting user's entries alone
// and never reaches the client; the operator purges one URL of a user's, or all of them.
func TestPrivatePurges(t *testing.T) {
	clock := newFakeClock()
	o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/logout" {
			w.Header().Set(httpcache.FieldWeirPurgeUser, "1")
			w.Header().Set("Cache-Control", "no-store")
			w.Write([]byte("bye"))
			return
		}
		c, _ := r.Cookie("session")
		w.Header().Set("Cache-Control", "private, max-age=60")
		w.Write([]byte(c.Value + " " + strconv.Itoa(n)))
	})
	s := privateSettings(clock)
	s.Private.Paths = []string{"/account", "/orders"}
	h := newTestHandler(t, s, o)
	c := newTestClient(h)
	fill := func() {
		for _, u := range []string{"alice", "bob"} {
			for _, p := range []string{"/account", "/orders"} {
				c.get(t, "http://example.com"+p, "Cookie", "session="+u)
			}
		}
	}
	// cached reports which of the four are hits now, as "alice/account" and the like.
	cached := func() []string {
		var out []string
		for _, u := range []string{"alice", "bob"} {
			for _, p := range []string{"/account", "/orders"} {
				w := do(t, h, http.MethodGet, "http://example.com"+p, "Cookie", "session="+u)
				if strings.Contains(w.Header().Get("Cache-Status"), "hit") {
					out = append(out, u+p)
				}
			}
		}
		return out
	}
	fill()
	if got := strings.Join(cached(), " "); got != "alice/account alice/orders bob/account bob/orders" {
		t.Fatalf("filled: hits %q", got)
	}
	for _, m := range []string{http.MethodPost, http.MethodGet} {
		w := do(t, h, m, "http://example.com/logout", "Cookie", "session=alice")
		if got := w.Header().Get(httpcache.FieldWeirPurgeUser); got != "" {
			t.Errorf("%s /logout: the client got %s: %q", m, httpcache.FieldWeirPurgeUser, got)
		}
		if got := strings.Join(cached(), " "); got != "bob/account bob/orders" {
			t.Errorf("after %s /logout of alice: hits %q, want bob's alone", m, got)
		}
		fill()
	}
	op := operator{e: h.e}
	ctx := context.Background()
	if _, err := op.Purge(ctx, admin.Purge{User: "bob", URL: "http://example.com/orders"}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cached(), " "); got != "alice/account alice/orders bob/account" {
		t.Errorf("after the purge of bob's /orders: hits %q", got)
	}
	fill()
	if _, err := op.Purge(ctx, admin.Purge{User: "alice"}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cached(), " "); got != "bob/account bob/orders" {
		t.Errorf("after the purge of alice: hits %q", got)
	}
	fill()
	if _, err := op.Purge(ctx, admin.Purge{All: true}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cached(), " "); got != "" {
		t.Errorf("after the purge of all: hits %q", got)
	}
}

// TestPrivateSettingsRefused: bad private.* fail New naming the field and the value.
func TestPrivateSettingsRefused(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("a fleet's secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		desc string
		p    PrivateSettings
		url  string
		want string
	}{
		{desc: "identity of no kind", p: PrivateSettings{Paths: []string{"/a"}, Identity: "session"}, want: `private.identity: "session"`},
		{desc: "identity of another kind", p: PrivateSettings{Paths: []string{"/a"}, Identity: "query:user"}, want: `private.identity: "query:user"`},
		{desc: "identity without a name", p: PrivateSettings{Paths: []string{"/a"}, Identity: "cookie:"}, want: `private.identity: "cookie:"`},
		{desc: "identity with a space", p: PrivateSettings{Paths: []string{"/a"}, Identity: "header:X User"}, want: `private.identity: "header:X User"`},
		{desc: "a bad pattern", p: PrivateSettings{Paths: []string{"account"}}, want: `private.paths: "account"`},
		{desc: "negative ttl", p: PrivateSettings{Paths: []string{"/a"}, TTL: -time.Second}, want: "private.ttl: -1s"},
		{desc: "shared without a store", p: PrivateSettings{Paths: []string{"/a"}, Shared: true, SecretFile: secret}, want: "private.shared: true needs store.url"},
		{desc: "shared without a secret", p: PrivateSettings{Paths: []string{"/a"}, Shared: true}, url: "redis://127.0.0.1:1", want: "private.shared: true needs private.secretFile"},
		{desc: "a secret file missing", p: PrivateSettings{Paths: []string{"/a"}, SecretFile: filepath.Join(dir, "none")}, want: "private.secretFile: "},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			_, err := New(uniqueEngineName(t), Settings{Private: tc.p, StoreURL: tc.url}, http.NotFoundHandler())
			if err == nil || !errors.Is(err, ErrSettings) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v, want an ErrSettings naming %s", err, tc.want)
			}
		})
	}
}

// TestPrivateSecretKept: a reload keeps the private cache and its random secret; a secret
// file gives every instance one secret.
func TestPrivateSecretKept(t *testing.T) {
	clock := newFakeClock()
	o := userOrigin(t, []string{"Cache-Control", "private, max-age=60"})
	name := uniqueEngineName(t)
	s := privateSettings(clock)
	h1 := mustNew(t, name, s, o)
	c1 := newTestClient(h1)
	c1.get(t, "http://example.com/account", "Cookie", "session=alice")
	s.Private.TTL = 5 * time.Minute
	h2 := mustNew(t, name, s, o)
	if string(h2.private.c.secret) != string(h1.private.c.secret) {
		t.Error("a reload changed the random secret")
	}
	h3 := mustNew(t, name, s, o)
	if h3.private.c != h2.private.c {
		t.Error("a reload with the same settings did not keep the private cache")
	}
	file := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(file, []byte("fleet secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.Private.SecretFile = file
	a := mustNew(t, uniqueEngineName(t), s, o)
	b := mustNew(t, uniqueEngineName(t), s, o)
	if string(a.private.c.secret) != "fleet secret" || string(b.private.c.secret) != "fleet secret" {
		t.Error("secretFile is not the secret of both")
	}
}

// TestPrivateOffUnchanged: without private.paths, no stage is built, and an answer marked
// private is never stored, as before.
func TestPrivateOffUnchanged(t *testing.T) {
	o := userOrigin(t, []string{"Cache-Control", "private, max-age=60"})
	h := newTestHandler(t, Settings{Now: newFakeClock().Now}, o)
	if h.private != nil || h.e.private != nil {
		t.Fatal("a private stage without private.paths")
	}
	w := do(t, h, http.MethodGet, "http://example.com/account", "Cookie", "session=alice")
	wantAnswer(t, w, 200, privateMissed+"; detail=private", "alice 1")
	// Marked hit-for-pass, as any answer that may not be shared.
	w = do(t, h, http.MethodGet, "http://example.com/account", "Cookie", "session=alice")
	wantAnswer(t, w, 200, privateMissed+"; detail=uncacheable", "alice 2")
}

// TestPrivateVaryHidesIdentity: an answer varying on the identity's own field (Vary:
// Cookie) is stored per variant, under keys that hold neither the cookie nor its value.
func TestPrivateVaryHidesIdentity(t *testing.T) {
	clock := newFakeClock()
	o := userOrigin(t, []string{"Cache-Control", "private, max-age=60", "Vary", "Cookie, Accept-Language"})
	h := newTestHandler(t, privateSettings(clock), o)
	steps := []struct {
		desc, cookie, cacheStatus, body string
	}{
		{"alice", "session=alice-secret-value", privateStored, "alice-secret-value 1"},
		{"alice again", "session=alice-secret-value", privateHit, "alice-secret-value 1"},
		{"alice with another cookie beside", "session=alice-secret-value; theme=dark", privateStored, "alice-secret-value 2"},
		{"bob", "session=bob-secret-value", privateStored, "bob-secret-value 3"},
	}
	for _, st := range steps {
		w := do(t, h, http.MethodGet, "http://example.com/account", "Cookie", st.cookie)
		if got := w.Header().Get("Cache-Status"); got != st.cacheStatus {
			t.Errorf("%s: Cache-Status = %q, want %q", st.desc, got, st.cacheStatus)
		}
		if got := w.Body.String(); got != st.body {
			t.Errorf("%s: body = %q, want %q", st.desc, got, st.body)
		}
	}
	var keys []string
	h.private.c.mem.DeleteFunc(func(key string) bool {
		keys = append(keys, key)
		return false
	})
	if len(keys) != 5 {
		t.Errorf("private keys %q: want 2 indexes and 3 variants", keys)
	}
	for _, k := range keys {
		if strings.Contains(k, "secret-value") || strings.Contains(k, "theme") {
			t.Errorf("private key %q holds the request's Cookie", k)
		}
	}
}

// TestPrivateShared: with private.shared, private entries go to the engine's store under
// their hashed keys, so that two instances reading one store and one secret file share
// them; a purge of the user through one drops them for both.
func TestPrivateShared(t *testing.T) {
	clock := newFakeClock()
	file := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(file, []byte("fleet secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	shared := store.NewMemory(store.MemorySettings{})
	o := userOrigin(t, []string{"Cache-Control", "private, max-age=60"})
	s := privateSettings(clock)
	s.Store = shared
	s.StoreID = "one store"
	s.Private.Shared = true
	s.Private.SecretFile = file
	a := newTestHandler(t, s, o)
	b := newTestHandler(t, s, o)
	const url = "http://example.com/account"
	wantAnswer(t, do(t, a, http.MethodGet, url, "Cookie", "session=alice"), 200, privateStored, "alice 1")
	wantAnswer(t, do(t, b, http.MethodGet, url, "Cookie", "session=alice"), 200, privateHit, "alice 1")
	wantAnswer(t, do(t, b, http.MethodGet, url, "Cookie", "session=bob"), 200, privateStored, "bob 2")
	if n, _ := shared.Len(); n != 2 {
		t.Errorf("the shared store holds %d entries, want 2", n)
	}
	shared.DeleteFunc(func(key string) bool {
		if !strings.HasPrefix(key, privateNS) || strings.Contains(key, "alice") || strings.Contains(key, "bob") {
			t.Errorf("shared key %q: want a private key without the identity", key)
		}
		return false
	})
	if _, err := (operator{e: a.e}).Purge(context.Background(), admin.Purge{User: "alice"}); err != nil {
		t.Fatal(err)
	}
	wantAnswer(t, do(t, b, http.MethodGet, url, "Cookie", "session=alice"), 200, privateStored, "alice 3")
	wantAnswer(t, do(t, a, http.MethodGet, url, "Cookie", "session=bob"), 200, privateHit, "bob 2")
}
