package admin

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/weirproxy/weir/core/hostkey"
)

// Errors of the admin's settings.
var (
	// ErrSettings wraps every invalid admin setting.
	ErrSettings = errors.New("invalid setting")
)

// MinTokenLength is the shortest admin.token accepted, in characters: a token is the only
// thing between a client and the admin, and the brake (Brake) slows guessing, it does not
// stop it.
const MinTokenLength = 24

// cookieName holds a session for a browser that signed in on the page: a browser sends no
// Authorization header when it navigates.
const cookieName = "weir_admin"

// SessionLifetime is how long a sign-in on the page lasts.
const SessionLifetime = 12 * time.Hour

// sessionLabel is what the session key is derived with from the token: the key, and so every
// session, changes with the token.
const sessionLabel = "weir admin session"

// The ways a client presents the token (Failure.Way).
const (
	WayBearer = "bearer"
	WayCookie = "cookie"
	WayForm   = "form"
)

// The outcomes of Check (Verdict.Result).
const (
	// Granted: the client presented the token, or a session made with it, from an address
	// admin.allow lets in.
	Granted = 1
	// Refused: no credentials, wrong ones, or an address outside admin.allow: 403.
	Refused = 2
	// Throttled: the client's address failed too often lately (Brake): 429, the
	// credentials not even read.
	Throttled = 3
)

// Why a request was refused (Verdict.Why): the 403's text.
const (
	whyNoAccess   = "forbidden: the admin needs admin.token"
	whyOutside    = "forbidden: this address is not in admin.allow"
	whyNoToken    = "forbidden: send the token (Authorization: Bearer <admin.token>) or sign in"
	whyWrongToken = "forbidden: wrong token"
	whyBadSession = "forbidden: the session is not valid; sign in again"
	whyOldSession = "forbidden: the session expired; sign in again"
)

// DetailThrottled is the Cache-Status detail, and the JSON body's error, of the 429 a client
// the brake holds back gets, from the admin and for PURGE alike.
const DetailThrottled = "auth-throttled"

// Access says who may use the admin and send PURGE. The zero Access lets no one in.
type Access struct {
	// Token is the bearer token (Authorization: Bearer <token>, or the page's sign-in form,
	// which gives a session derived from it). Every way in needs it; empty: no one enters.
	Token string
	// Allow narrows who may present the token: the networks whose connections may. Empty:
	// any address.
	Allow []*net.IPNet
	// Hosts are the Host names the admin answers for (as ServesHost compares them); any other Host
	// gets 404, as if no admin were there. Empty: every host. PURGE does not read it.
	Hosts []string
	// Brake limits failed attempts per client address; nil: none.
	Brake *Brake
	// OnFailure is told of every failed attempt, after the brake counted it; nil: no one.
	OnFailure func(f Failure)
	// OnThrottled is told of every request the brake refused; nil: no one.
	OnThrottled func()
}

// Failure is one failed attempt to present the token.
type Failure struct {
	// Client is the address the brake counts (Brake: an IPv6 address by its /64).
	Client string
	// Way is WayBearer, WayCookie or WayForm.
	Way string
	// Failures is how many the client made in the brake's current minute, this one
	// included; Throttled says they reached the limit, so its next attempt gets 429.
	Failures  int
	Throttled bool
}

// Verdict is what Check decided for a request.
type Verdict struct {
	// Result is Granted, Refused or Throttled.
	Result int
	// RetryAfter is when a throttled client may try again.
	RetryAfter time.Duration
	// Why is a refusal's text.
	Why string
	// ClearCookie says the request carried a session cookie that is no longer good: the
	// answer should drop it, so that the browser stops sending it.
	ClearCookie bool
}

// Configured tells whether anyone at all may enter.
func (a *Access) Configured() bool {
	return a != nil && a.Token != ""
}

// ParseAllow reads admin.allow: CIDRs ("10.0.0.0/8", "2001:db8::/32") or single addresses,
// which stand for themselves.
func ParseAllow(list []string) ([]*net.IPNet, error) {
	var nets []*net.IPNet
	for _, item := range list {
		for _, s := range strings.Split(item, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			if !strings.Contains(s, "/") {
				ip := net.ParseIP(s)
				if ip == nil {
					return nil, fmt.Errorf("%w: admin.allow: %q is not a CIDR such as \"10.0.0.0/8\"", ErrSettings, s)
				}
				bits := 128
				if ip.To4() != nil {
					ip = ip.To4()
					bits = 32
				}
				nets = append(nets, &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)})
				continue
			}
			_, n, err := net.ParseCIDR(s)
			if err != nil {
				return nil, fmt.Errorf("%w: admin.allow: %q is not a CIDR such as \"10.0.0.0/8\"", ErrSettings, s)
			}
			nets = append(nets, n)
		}
	}
	return nets, nil
}

// ParseHosts reads admin.hosts: host names ("ops.example.com"), or addresses, lowercase,
// without a trailing dot or an IPv6 literal's brackets, with neither scheme, port nor path. Items may be comma-separated, as labels give lists.
func ParseHosts(list []string) ([]string, error) {
	var hosts []string
	for _, item := range list {
		for _, s := range strings.Split(item, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			h := strings.TrimSuffix(strings.ToLower(s), ".")
			if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") && net.ParseIP(h[1:len(h)-1]) != nil {
				h = h[1 : len(h)-1]
			} else if h == "" || strings.ContainsAny(h, "/:@ *?#[]\\") {
				return nil, fmt.Errorf("%w: admin.hosts: %q is not a host name such as \"ops.example.com\" (no scheme, port or path)", ErrSettings, s)
			}
			hosts = append(hosts, h)
		}
	}
	return hosts, nil
}

// ServesHost tells whether the admin answers for a request to host (the request's Host):
// host and the listed names compared by their canonical keys (hostkey.Canonical, which
// Weir's protections count hosts by), so that a port, capitals or a trailing dot make no
// other name.
func (a *Access) ServesHost(host string) bool {
	if a == nil || len(a.Hosts) == 0 {
		return true
	}
	h := hostkey.Canonical(host)
	for _, want := range a.Hosts {
		if h == hostkey.Canonical(want) {
			return true
		}
	}
	return false
}

// Allowed tells whether r may use the admin at now: Check granted it.
func (a *Access) Allowed(r *http.Request, now time.Time) bool {
	return a.Check(r, now).Result == Granted
}

// Check decides whether r may use the admin at now. It needs the token, by the
// Authorization header (Bearer) or by a session cookie the sign-in form gave; from an
// address in Allow when Allow is set. The address is the connection's (RemoteAddr), never a
// forwarded header, which any client can write. A client the brake holds is refused before
// its credentials are read; a wrong token or a forged session counts against its address.
func (a *Access) Check(r *http.Request, now time.Time) Verdict {
	if !a.Configured() {
		return Verdict{Result: Refused, Why: whyNoAccess}
	}
	if !a.inAllow(r.RemoteAddr) {
		return Verdict{Result: Refused, Why: whyOutside}
	}
	if auth := r.Header.Get("Authorization"); len(auth) > 7 && strings.EqualFold(auth[:7], "bearer ") {
		return a.attempt(r, now, WayBearer, strings.TrimSpace(auth[7:]))
	}
	c, err := r.Cookie(cookieName)
	if err != nil {
		return Verdict{Result: Refused, Why: whyNoToken}
	}
	return a.attempt(r, now, WayCookie, c.Value)
}

// SignIn checks a token sent by the sign-in form, as Check checks a bearer token.
func (a *Access) SignIn(r *http.Request, now time.Time, token string) Verdict {
	if !a.Configured() {
		return Verdict{Result: Refused, Why: whyNoAccess}
	}
	if !a.inAllow(r.RemoteAddr) {
		return Verdict{Result: Refused, Why: whyOutside}
	}
	return a.attempt(r, now, WayForm, token)
}

// attempt checks what r presented (given, by way) once the brake lets its address try.
func (a *Access) attempt(r *http.Request, now time.Time, way, given string) Verdict {
	client := clientKey(r.RemoteAddr)
	if wait := a.Brake.wait(client, now); wait > 0 {
		if a.OnThrottled != nil {
			a.OnThrottled()
		}
		return Verdict{Result: Throttled, RetryAfter: wait}
	}
	if way != WayCookie {
		if tokenMatches(given, a.Token) {
			return Verdict{Result: Granted}
		}
		a.failed(client, way, now)
		return Verdict{Result: Refused, Why: whyWrongToken}
	}
	switch sessionCheck(a.Token, given, now) {
	case sessionGood:
		return Verdict{Result: Granted}
	case sessionExpired:
		// Made with the token, so no guess: dropped without counting against the client.
		return Verdict{Result: Refused, Why: whyOldSession, ClearCookie: true}
	}
	a.failed(client, way, now)
	return Verdict{Result: Refused, Why: whyBadSession, ClearCookie: true}
}

// failed counts a failed attempt of client and tells OnFailure.
func (a *Access) failed(client, way string, now time.Time) {
	n := a.Brake.fail(client, now)
	if a.OnFailure != nil {
		a.OnFailure(Failure{Client: client, Way: way, Failures: n, Throttled: n >= BrakeFailures})
	}
}

// tokenMatches compares in constant time, so that the time an answer takes tells nothing of
// how much of a guess was right.
func tokenMatches(given, token string) bool {
	if given == "" || token == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(given), []byte(token)) == 1
}

// inAllow tells whether remote (a RemoteAddr) may present the token: Allow is empty, or
// holds its address.
func (a *Access) inAllow(remote string) bool {
	if len(a.Allow) == 0 {
		return true
	}
	ip := remoteIP(remote)
	if ip == nil {
		return false
	}
	for _, n := range a.Allow {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// remoteIP is the address of a RemoteAddr ("10.1.2.3:5555", "[::1]:80", or without a
// port); nil when it is none.
func remoteIP(remote string) net.IP {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	// A zone ("fe80::1%eth0") is not part of the address.
	if i := strings.IndexByte(host, '%'); i >= 0 {
		host = host[:i]
	}
	return net.ParseIP(host)
}

// Sessions. A session cookie is "<expiry, Unix seconds>.<MAC>", the MAC an HMAC-SHA256 of the
// expiry under a key derived from the token: the cookie reveals nothing of the token, cannot
// be made without it, ends at its expiry whatever the browser does, and every session ends
// when the token changes.

// The outcomes of sessionCheck.
const (
	sessionGood    = 1
	sessionExpired = 2
	sessionForged  = 3
)

// sessionMAC is the MAC of a session expiring at expiry (Unix seconds, as written).
func sessionMAC(token, expiry string) string {
	k := hmac.New(sha256.New, []byte(token))
	k.Write([]byte(sessionLabel))
	m := hmac.New(sha256.New, k.Sum(nil))
	m.Write([]byte(expiry))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// newSession is the cookie value of a session made at now, and when it expires.
func newSession(token string, now time.Time) (string, time.Time) {
	until := now.Add(SessionLifetime).Truncate(time.Second)
	expiry := strconv.FormatInt(until.Unix(), 10)
	return expiry + "." + sessionMAC(token, expiry), until
}

// sessionCheck reads a session cookie's value at now.
func sessionCheck(token, value string, now time.Time) int {
	i := strings.IndexByte(value, '.')
	if i <= 0 {
		return sessionForged
	}
	expiry := value[:i]
	unix, err := strconv.ParseInt(expiry, 10, 64)
	if err != nil || !hmac.Equal([]byte(value[i+1:]), []byte(sessionMAC(token, expiry))) {
		return sessionForged
	}
	if now.Unix() >= unix {
		return sessionExpired
	}
	return sessionGood
}

// Secure tells whether r reached Traefik over HTTPS: its own connection is TLS, or the
// proxy before it says so in X-Forwarded-Proto. Traefik drops that field from peers outside
// its entry point's forwardedHeaders.trustedIPs and writes its own, so it can be believed.
func Secure(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	proto := r.Header.Get("X-Forwarded-Proto")
	if i := strings.IndexByte(proto, ','); i >= 0 {
		proto = proto[:i]
	}
	return strings.EqualFold(strings.TrimSpace(proto), "https")
}

// loopback tells whether remote (a RemoteAddr) is a loopback address.
func loopback(remote string) bool {
	ip := remoteIP(remote)
	return ip != nil && ip.IsLoopback()
}
