package admin

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/weirproxy/weir/core/console"
	"github.com/weirproxy/weir/core/events"
)

// Console is what the page's overview reads, beside State: an Engine that implements it
// serves api/series, api/events, api/tables, api/lookup and api/fleet. Every method is safe
// to call from many goroutines.
type Console interface {
	// Series is the last fifteen minutes, one sample a second, up to now: those from second
	// since (Unix; 0: all) on.
	Series(now time.Time, since int64) console.View
	// Events are the last n events kept (n <= 0: all, at most 500), newest first, of kind
	// (the event's name; "": any) and naming host (its scope, partition, URL or name; "":
	// any).
	Events(kind, host string, n int) []events.Record
	// Tables are the busiest hosts and partitions over the last fifteen minutes.
	Tables(now time.Time) Tables
	// Lookup tells what is stored for url (absolute), read as a client's GET would be.
	Lookup(ctx context.Context, url string, now time.Time) (Entry, error)
	// Fleet lists the instances sharing the store that were seen recently.
	Fleet(ctx context.Context, now time.Time) (Fleet, error)
}

// Tables are the busiest hosts and partitions, with what the rest add up to.
type Tables struct {
	// Seconds is the span the counts cover: fifteen minutes, or less since the first.
	Seconds int64     `json:"seconds"`
	Hosts   []HostRow `json:"hosts"`
	// OtherHosts sums the hosts not listed.
	OtherHosts HostRow `json:"otherHosts"`
	// ByMisses and ByRefusals are the partitions with the most origin fetches and the
	// most refusals.
	ByMisses   []PathRow `json:"byMisses"`
	ByRefusals []PathRow `json:"byRefusals"`
}

// HostRow is one host's counts over Tables.Seconds.
type HostRow struct {
	Host string `json:"host"`
	// Requests are the host's client requests a second, and HitRatio the share of them
	// answered by a fresh hit: estimates, from one answer of each outcome in 61 (the
	// outcome's counter's every 61st, counted for 61), so that the hit path pays no more
	// than a remainder for them. Within about 2/sqrt(n/61) of the truth for a host of n
	// requests in the window; zero for a host with none sampled.
	Requests float64 `json:"requestsPerSecond"`
	HitRatio float64 `json:"hitRatio"`
	// Fetches are the cache's trips to the origin for the host (its misses and refreshes).
	Fetches int64 `json:"fetches"`
	Refused int64 `json:"refused"`
	Stale   int64 `json:"stale"`
	// InFlight is what the host holds of the limiter now.
	InFlight int `json:"inFlight"`
	// P95 is the 95th percentile of its fetches' time, in milliseconds (a bucket's bound).
	P95 float64 `json:"p95ms"`
	// Breaker is the state of the breaker scoped to the host, if it has one.
	Breaker string `json:"breaker,omitempty"`
}

// PathRow is one partition's counts over Tables.Seconds.
type PathRow struct {
	Partition string `json:"partition"`
	Fetches   int64  `json:"fetches"`
	Refused   int64  `json:"refused"`
}

// Entry is what Lookup finds for a URL.
type Entry struct {
	URL   string `json:"url"`
	Key   string `json:"key"`
	Found bool   `json:"found"`
	// Status, Age and TTL are the stored answer's; TTL is negative once stale.
	Status int     `json:"status,omitempty"`
	Age    float64 `json:"ageSeconds"`
	TTL    float64 `json:"ttlSeconds"`
	// StaleWhileRevalidate and StaleIfError are how long past now each stale window
	// lasts (zero: none, or over).
	StaleWhileRevalidate float64 `json:"staleWhileRevalidateSeconds"`
	StaleIfError         float64 `json:"staleIfErrorSeconds"`
	Size                 int     `json:"size"`
	// Vary names the request fields the answer varies on; Variants says the key holds an
	// index of variants, not an answer.
	Vary     []string `json:"vary,omitempty"`
	Variants bool     `json:"variants,omitempty"`
	Tags     []string `json:"tags,omitempty"`
	// HitForPass marks a key the cache passes through; Negative one whose failure is
	// remembered (negative caching), with its status.
	HitForPass     bool `json:"hitForPass,omitempty"`
	Negative       bool `json:"negative,omitempty"`
	NegativeStatus int  `json:"negativeStatus,omitempty"`
}

// Fleet is the instances sharing the store.
type Fleet struct {
	// Shared is false without a shared store: then Instances is empty.
	Shared    bool       `json:"shared"`
	Instances []Instance `json:"instances"`
}

// Instance is one instance the store last heard from at Seen.
type Instance struct {
	ID   string    `json:"id"`
	Seen time.Time `json:"seen"`
	// Self marks this instance.
	Self bool `json:"self,omitempty"`
}

// consolePaths are the console's endpoints under api/.
var consolePaths = map[string]bool{"/api/series": true, "/api/events": true, "/api/tables": true, "/api/lookup": true, "/api/fleet": true}

// console serves one of consolePaths: GET only, the answer JSON.
func (h *Handler) console(w http.ResponseWriter, r *http.Request, rel string) {
	if !h.method(w, r, http.MethodGet) {
		return
	}
	c, ok := h.engine.(Console)
	if !ok {
		writeError(w, http.StatusNotFound, "no such admin page: "+rel)
		return
	}
	q := r.URL.Query()
	now := h.now()
	switch rel {
	case "/api/series":
		since, _ := strconv.ParseInt(q.Get("since"), 10, 64)
		writeJSON(w, http.StatusOK, c.Series(now, since))
	case "/api/events":
		n, _ := strconv.Atoi(q.Get("n"))
		writeJSON(w, http.StatusOK, map[string]interface{}{"events": c.Events(strings.TrimSpace(q.Get("kind")), strings.TrimSpace(q.Get("host")), n)})
	case "/api/tables":
		writeJSON(w, http.StatusOK, c.Tables(now))
	case "/api/lookup":
		ctx, cancel := context.WithTimeout(r.Context(), purgeTimeout)
		defer cancel()
		e, err := c.Lookup(ctx, q.Get("url"), now)
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, e)
	case "/api/fleet":
		ctx, cancel := context.WithTimeout(r.Context(), purgeTimeout)
		defer cancel()
		f, err := c.Fleet(ctx, now)
		if err != nil {
			writeError(w, http.StatusBadGateway, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, f)
	}
}
