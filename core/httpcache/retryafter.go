package httpcache

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxRetryAfterSeconds bounds the delay-seconds read from Retry-After: about 292 years fit
// a time.Duration, and no origin means more than a day.
const maxRetryAfterSeconds = 1 << 32

// RetryAfter returns the wait that Retry-After asks for at now (RFC 9110 section 10.2.3):
// delay-seconds, or an HTTP-date less now. It returns 0 for none, a date already past, or
// a value that is neither, which a client must ignore; of several field lines, the first
// counts.
func RetryAfter(values []string, now time.Time) time.Duration {
	if len(values) == 0 {
		return 0
	}
	v := strings.TrimSpace(values[0])
	if v == "" {
		return 0
	}
	if v[0] >= '0' && v[0] <= '9' {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			if len(v) > 10 && allDigits(v) {
				// Overflow: as long as anyone means.
				return maxRetryAfterSeconds * time.Second
			}
			return 0
		}
		if n > maxRetryAfterSeconds {
			n = maxRetryAfterSeconds
		}
		return time.Duration(n) * time.Second
	}
	at, err := http.ParseTime(v)
	if err != nil || !at.After(now) {
		return 0
	}
	return at.Sub(now)
}

// allDigits reports whether s is ASCII digits only.
func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
