package admin

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
)

// Errors of the admin's settings.
var (
	// ErrSettings wraps every invalid admin setting.
	ErrSettings = errors.New("invalid setting")
)

// cookieName holds the token for a browser that logged in on the page: a browser sends no
// Authorization header when it navigates.
const cookieName = "weir_admin"

// Access says who may use the admin and send PURGE. The zero Access lets no one in.
type Access struct {
	// Token is the bearer token (Authorization: Bearer <token>, or the page's login
	// cookie). Empty: no token is accepted.
	Token string
	// Allow lists the networks whose connections may enter without a token. Empty: none.
	Allow []*net.IPNet
}

// Configured tells whether anyone at all may enter.
func (a *Access) Configured() bool {
	return a != nil && (a.Token != "" || len(a.Allow) > 0)
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

// Allowed tells whether r may use the admin: its connection's address is in Allow, or it
// carries Token. The address is the connection's (RemoteAddr), never a forwarded header,
// which any client can write.
func (a *Access) Allowed(r *http.Request) bool {
	if a == nil {
		return false
	}
	if len(a.Allow) > 0 && a.allowedAddr(r.RemoteAddr) {
		return true
	}
	if a.Token == "" {
		return false
	}
	given := ""
	if auth := r.Header.Get("Authorization"); len(auth) > 7 && strings.EqualFold(auth[:7], "bearer ") {
		given = strings.TrimSpace(auth[7:])
	} else if c, err := r.Cookie(cookieName); err == nil {
		given = c.Value
	}
	return tokenMatches(given, a.Token)
}

// tokenMatches compares in constant time, so that the time an answer takes tells nothing of
// how much of a guess was right.
func tokenMatches(given, token string) bool {
	if given == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(given), []byte(token)) == 1
}

func (a *Access) allowedAddr(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	// A zone ("fe80::1%eth0") is not part of the address.
	if i := strings.IndexByte(host, '%'); i >= 0 {
		host = host[:i]
	}
	ip := net.ParseIP(host)
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
