package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// What a client of the web entry point sends and reads back, for the tests and for the load
// scenarios (scenario*.go) alike.

// reply is what a client got back.
type reply struct {
	status int
	header http.Header
	body   string
	took   time.Duration
}

// cacheStatus is the reply's Cache-Status entry for Weir.
func (r reply) cacheStatus() cacheStatus {
	return parseCacheStatus(r.header.Values("Cache-Status"))
}

// requestTimeout bounds one request of a test, answer read whole.
const requestTimeout = 20 * time.Second

// fetch makes one request with client and reads its answer whole, giving up after within or
// when ctx ends. A Host in header is the request's Host. took runs from sending the request
// to the answer's last byte, or to the error; the status is 0 when no answer came, and a
// broken body comes back with what was read of it.
func fetch(ctx context.Context, client *http.Client, within time.Duration, method, url string, header map[string]string) (reply, error) {
	return fetchBody(ctx, client, within, method, url, header, "")
}

// fetchBody is fetch with a request body ("": none).
func fetchBody(ctx context.Context, client *http.Client, within time.Duration, method, url string, header map[string]string, body string) (reply, error) {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return reply{}, err
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	began := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return reply{took: time.Since(began)}, err
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		err = fmt.Errorf("read body: %w", err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: string(got), took: time.Since(began)}, err
}

// cacheStatus holds the parameters of one RFC 9211 Cache-Status entry: "hit" and "stored"
// map to "", "fwd=uri-miss" to "uri-miss", "ttl=-3" to "-3".
type cacheStatus struct {
	raw    string
	params map[string]string
}

// parseCacheStatus finds Weir's entry among the Cache-Status field values (RFC 9211 §2: a
// list, one entry per cache, nearest the origin first).
func parseCacheStatus(values []string) cacheStatus {
	for _, v := range values {
		for _, entry := range strings.Split(v, ",") {
			parts := strings.Split(entry, ";")
			if strings.TrimSpace(parts[0]) != "Weir" {
				continue
			}
			cs := cacheStatus{raw: strings.TrimSpace(entry), params: map[string]string{}}
			for _, p := range parts[1:] {
				p = strings.TrimSpace(p)
				k, val, _ := strings.Cut(p, "=")
				cs.params[k] = strings.Trim(val, `"`)
			}
			return cs
		}
	}
	return noCacheStatus
}

// noCacheStatus stands for an answer without Weir's entry.
var noCacheStatus = cacheStatus{raw: "(no Weir Cache-Status)", params: map[string]string{}}

func (c cacheStatus) has(param string) bool { _, ok := c.params[param]; return ok }

func (c cacheStatus) fwd() string { return c.params["fwd"] }

func (c cacheStatus) hit() bool { return c.has("hit") }

// ttl is the entry's remaining freshness in seconds and whether it was given.
func (c cacheStatus) ttl() (int, bool) {
	v, ok := c.params["ttl"]
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	return n, err == nil
}

func (c cacheStatus) String() string { return c.raw }

func short(s string) string {
	if len(s) > 40 {
		return s[:40] + fmt.Sprintf("...(%d bytes)", len(s))
	}
	return s
}
