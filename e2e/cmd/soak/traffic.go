package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The traffic's shape. Requests start at a steady rate whatever Traefik's answer time (an
// open loop, as real clients arrive), each picked by weight; at most maxInFlight are out at
// once, and a start that finds them all out is counted as behind, not sent.
var mix = []struct {
	kind   string
	weight int
}{
	{kind: "hit", weight: 60},
	{kind: "miss", weight: 15},
	{kind: "pass", weight: 10},
	{kind: "upload", weight: 10},
	{kind: "hangup", weight: 5},
}

const (
	maxInFlight = 128
	// floodClients send the flood burst, each its next request as soon as it has an answer.
	floodClients = 32
	// hangupAfter is how much of the big answer a hanging-up client reads before it leaves.
	hangupAfter = 8 << 10
	// clientTimeout bounds one request: an answer slower than this is a client error.
	clientTimeout = 30 * time.Second
	// faultGrace is how long after the origin's failure ends a 502 or 503 of the origin is
	// still designed: the negative cache repeats a failed fetch for negative.ttl (2 s, 3 s in
	// one option set), and a request that joined a flight fetched in the failure gets its
	// answer after the failure's end.
	faultGrace = 10 * time.Second
)

// The kinds of answer a client gets, as counted in the CSV. Designed ones first.
const (
	kindOK        = "ok"
	kindOrigin503 = "origin_503" // the failing origin's 503, passed on or repeated by a negative entry
	kindOrigin502 = "origin_502" // Traefik's 502 for a dropped origin connection, nothing stale
	// Undesigned: any of these fails the run.
	kindStatus    = "bad_status"  // a status no designed answer explains
	kindRefusal   = "bad_refusal" // a 503 or 429 without Retry-After or a registered reason
	kindTransport = "transport"   // the connection broke (not by the client's choice)
	kindTimeout   = "timeout"     // no answer within clientTimeout
	kindBody      = "bad_body"    // a body not the one asked for, or short
	refusedPrefix = "refused_"    // + the reason: a designed refusal
)

// reasons are Weir's registered refusal reasons (core/shed.go and the init functions of
// core/protect_*.go; docs/operations.md, Refusals). A refusal naming another is not designed.
var reasons = []string{
	"circuit-open", "miss-rate", "paced", "queue-full", "partition-queue-full", "queue-wait",
	"background-busy", "over-budget", "admission-host", "admission-name", "admission",
}

// designedKinds and undesignedKinds are the CSV's columns of answer kinds, in order.
var (
	designedKinds   = append([]string{kindOK, kindOrigin503, kindOrigin502}, refusedKinds()...)
	undesignedKinds = []string{kindStatus, kindRefusal, kindTransport, kindTimeout, kindBody}
)

func refusedKinds() []string {
	out := make([]string, len(reasons))
	for i, r := range reasons {
		out[i] = refusedPrefix + r
	}
	return out
}

func isUndesigned(kind string) bool {
	for _, k := range undesignedKinds {
		if k == kind {
			return true
		}
	}
	return false
}

// answer is what one client saw.
type answer struct {
	kind        string // hit, miss, pass, upload, hangup, flood
	method, url string
	from, to    time.Duration // when it was sent and done, from the run's start
	status      int
	retryAfter  string
	cacheStatus string
	err         error // a transport error or a timeout
	body        string
	wantLead    string // how the body must start
	wantLen     int    // the body's length; 0: not checked (a client that hung up)
}

// classify names the kind of a's outcome under schedule s.
func classify(a answer, s schedule) string {
	if a.err != nil {
		var ne net.Error
		if errors.As(a.err, &ne) && ne.Timeout() || errors.Is(a.err, context.DeadlineExceeded) {
			return kindTimeout
		}
		return kindTransport
	}
	switch {
	case a.status >= 200 && a.status < 400:
		if !strings.HasPrefix(a.body, a.wantLead) || a.wantLen > 0 && len(a.body) != a.wantLen {
			return kindBody
		}
		return kindOK
	case a.status == http.StatusServiceUnavailable || a.status == http.StatusTooManyRequests:
		// Weir's own refusal. Another detail (origin-error: the origin's own failure passed
		// on; negative: a negative entry repeating it) is judged by the schedule below.
		if reason := detail(a.cacheStatus); registered(reason) {
			if !positiveSeconds(a.retryAfter) {
				return kindRefusal
			}
			return refusedPrefix + reason
		}
		if a.status == http.StatusTooManyRequests {
			return kindRefusal
		}
	}
	if a.status == http.StatusServiceUnavailable || a.status == http.StatusBadGateway {
		for _, w := range s.originFaults {
			if w.overlaps(a.from, a.to, faultGrace) {
				if a.status == http.StatusServiceUnavailable {
					return kindOrigin503
				}
				return kindOrigin502
			}
		}
	}
	return kindStatus
}

// detail is the detail parameter of a Cache-Status field written by Weir: "" when there is
// none. A refusal is "Weir; fwd=uri-miss; detail=queue-full", a breaker's also names its
// key after it ("detail=circuit-open; key=...").
func detail(cacheStatus string) string {
	if !strings.HasPrefix(cacheStatus, "Weir") {
		return ""
	}
	for _, p := range strings.Split(cacheStatus, ";") {
		if v := strings.TrimPrefix(strings.TrimSpace(p), "detail="); len(v) < len(strings.TrimSpace(p)) {
			return v
		}
	}
	return ""
}

func registered(reason string) bool {
	for _, r := range reasons {
		if r == reason {
			return true
		}
	}
	return false
}

// positiveSeconds reports whether a Retry-After is a whole number of seconds above zero.
func positiveSeconds(v string) bool {
	n, err := strconv.Atoi(v)
	return err == nil && n > 0
}

// tally counts the answers by kind, and keeps the first undesigned ones for the report.
type tally struct {
	// mu guards the fields below.
	mu       sync.Mutex
	counts   map[string]int64
	sent     int64
	behind   int64
	hangups  int64
	examples []string
}

// maxExamples is how many undesigned answers are described in the output.
const maxExamples = 20

func newTally() *tally { return &tally{counts: make(map[string]int64)} }

func (t *tally) add(a answer, s schedule) {
	k := classify(a, s)
	var example string
	if isUndesigned(k) {
		example = fmt.Sprintf("%s at %s-%s: %s %s -> %d, Retry-After %q, Cache-Status %q, error %v, body %.80q",
			k, clock(a.from), clock(a.to), a.method, a.url, a.status, a.retryAfter, a.cacheStatus, a.err, a.body)
	}
	t.mu.Lock()
	t.counts[k]++
	t.sent++
	if a.kind == "hangup" && a.err == nil && a.status == http.StatusOK {
		t.hangups++
	}
	if example != "" && len(t.examples) < maxExamples {
		t.examples = append(t.examples, example)
	}
	t.mu.Unlock()
}

func (t *tally) addBehind() {
	t.mu.Lock()
	t.behind++
	t.mu.Unlock()
}

// snapshot is a copy of the counts.
type snapshot struct {
	counts                map[string]int64
	sent, behind, hangups int64
}

func (t *tally) snapshot() snapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := make(map[string]int64, len(t.counts))
	for k, v := range t.counts {
		c[k] = v
	}
	return snapshot{counts: c, sent: t.sent, behind: t.behind, hangups: t.hangups}
}

// undesigned is how many answers no designed refusal explains.
func (s snapshot) undesigned() int64 {
	var n int64
	for _, k := range undesignedKinds {
		n += s.counts[k]
	}
	return n
}

// clients sends the traffic through Traefik's web entry point.
type clients struct {
	base   string
	client *http.Client
	began  time.Time
	sched  schedule
	tally  *tally
	upBody []byte
}

func newClients(base string, began time.Time, s schedule) *clients {
	return &clients{
		base: base,
		client: &http.Client{
			Timeout: clientTimeout,
			Transport: &http.Transport{
				Proxy:               nil,
				DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
				DisableCompression:  true,
				MaxIdleConnsPerHost: maxInFlight + floodClients,
				IdleConnTimeout:     30 * time.Second,
			},
		},
		began:  began,
		sched:  s,
		tally:  newTally(),
		upBody: bytes.Repeat([]byte("u"), upSize),
	}
}

// steady starts rate requests a second, picked from mix, until ctx ends, and waits for them.
func (c *clients) steady(ctx context.Context, rate int) {
	total := 0
	for _, m := range mix {
		total += m.weight
	}
	rnd := rand.New(rand.NewSource(1))
	slots := make(chan struct{}, maxInFlight)
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-tick.C:
		}
		n := rnd.Intn(total)
		kind := mix[0].kind
		for _, m := range mix {
			if n < m.weight {
				kind = m.kind
				break
			}
			n -= m.weight
		}
		key := rnd.Intn(missKeys)
		select {
		case slots <- struct{}{}:
		default:
			c.tally.addBehind()
			continue
		}
		wg.Add(1)
		go func(kind string, key int) {
			defer wg.Done()
			defer func() { <-slots }()
			// A request under way when the run ends is answered all the same: ctx ends the
			// starts, not the requests.
			c.tally.add(c.one(context.Background(), kind, key), c.sched)
		}(kind, key)
	}
}

// flood sends the flood burst from floodClients clients, each a distinct query on one path,
// until ctx ends.
func (c *clients) flood(ctx context.Context) {
	var wg sync.WaitGroup
	for i := 0; i < floodClients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				c.tally.add(c.one(context.Background(), "flood", rand.Int()), c.sched)
			}
		}()
	}
	wg.Wait()
}

// one sends one request of kind for key and reads its answer; ctx bounds it beside
// clientTimeout.
func (c *clients) one(ctx context.Context, kind string, key int) answer {
	k := strconv.Itoa(key)
	a := answer{kind: kind, method: http.MethodGet}
	var body io.Reader
	switch kind {
	case "hit":
		k = strconv.Itoa(key % hitKeys)
		a.url, a.wantLead, a.wantLen = pathHit+"?k="+k, bodyLead("hit", "k", k), hitSize
	case "miss":
		a.url, a.wantLead, a.wantLen = pathMiss+"?k="+k, bodyLead("miss", "k", k), missSize
	case "pass":
		k = strconv.Itoa(key % passKeys)
		a.url, a.wantLead, a.wantLen = pathPass+"?k="+k, bodyLead("pass", "k", k), passSize
	case "upload":
		a.method, body = http.MethodPost, bytes.NewReader(c.upBody)
		a.url, a.wantLead, a.wantLen = pathUp+"?k="+k, fmt.Sprintf("up %d", upSize), len(fmt.Sprintf("up %d", upSize))
	case "hangup":
		k = strconv.Itoa(key % bigKeys)
		a.url, a.wantLead = pathBig+"?k="+k, bodyLead("big", "k", k)
	case "flood":
		a.url, a.wantLead, a.wantLen = pathFlood+"?q="+k, bodyLead("flood", "q", k), floodSize
	}
	a.from = time.Since(c.began)

	reqCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(reqCtx, a.method, c.base+a.url, body)
	if err != nil {
		a.err = err
		return a
	}
	resp, err := c.client.Do(req)
	if err != nil {
		a.err = err
		a.to = time.Since(c.began)
		return a
	}
	defer resp.Body.Close()
	a.status = resp.StatusCode
	a.retryAfter = resp.Header.Get("Retry-After")
	a.cacheStatus = resp.Header.Get("Cache-Status")
	var b []byte
	if kind == "hangup" && resp.StatusCode == http.StatusOK {
		// Read the start, then hang up: cancel closes the connection mid-answer.
		b, err = io.ReadAll(io.LimitReader(resp.Body, hangupAfter))
		cancel()
	} else {
		b, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	}
	a.body = string(b)
	if err != nil {
		a.err = err
	}
	a.to = time.Since(c.began)
	return a
}
