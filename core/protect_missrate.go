package core

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirproxy/weir/core/admin"
	"github.com/weirproxy/weir/core/events"
	"github.com/weirproxy/weir/core/httpcache"
	"github.com/weirproxy/weir/core/missrate"
)

// The miss-rate detector (missrate.*, FR-MR-1, FR-MR-2): it counts each partition's
// lookups and the misses that would fetch, reports a partition whose misses look like a
// cache-busting flood, and with missrate.throttle holds its fetches back. The mechanism is
// core/missrate.

// reasonMissRate refuses a leader's fetch for a partition the detector holds back
// (missrate.throttle). A stale entry within either window answers instead.
var reasonMissRate = &reason{name: "miss-rate", status: http.StatusServiceUnavailable, text: textUnavailable, stale: staleAny}

func init() { registerReasons(reasonMissRate) }

// statusFlood is the Cache-Status of a miss sent past the cache (bypassed).
var statusFlood = []string{statusBypass + paramDetail + "flood"}

// bypassed sends r, a miss of key with nothing stored and nothing of its client's to weigh,
// to the origin past the cache when key's partition floods and key was not asked for before
// (missRate.bypass, missrate.Bypass), and reports whether it did. The trip takes the gate as
// every pass-through does, in key's partition: the breaker, pacing and the limiter's share
// hold the flood as they held its fetches. Counted as a miss of the partition, so that the
// flood stays flagged while it lasts.
func bypassed(h *Handler, w http.ResponseWriter, r *http.Request, key string, now time.Time) bool {
	part := httpcache.PartitionOf(key)
	if !missrate.Bypass(h.missRate, part, key, now) {
		return false
	}
	if a := missrate.Miss(h.missRate, part, r.URL.RawQuery, now); a != nil {
		h.reportAnomaly(a)
	}
	pass(h, w, r, part, statusFlood)
	return true
}

// reportAnomaly logs a miss_rate_anomaly event once per anomaly (FR-MR-2).
func (h *Handler) reportAnomaly(a *missrate.Anomaly) {
	h.e.anomalies.add(*a)
	atomic.AddInt64(&h.e.metrics.anomalies.N, 1)
	anomalyEvent(h.e.events.current(), a)
}

// anomalyEvent writes the miss_rate_anomaly event (FR-MR-2).
func anomalyEvent(log *events.Log, a *missrate.Anomaly) {
	fields := []events.Field{
		events.Str("partition", a.Partition),
		events.Int("requests", a.Requests),
		events.Int("misses", a.Misses),
		events.Dur("window", a.Window),
	}
	if len(a.Varying) > 0 {
		fields = append(fields, events.Str("varying", strings.Join(a.Varying, ",")))
	}
	fields = append(fields, events.Bool("throttled", a.Throttled), events.Bool("bypassed", a.Bypassed))
	log.Emit(events.MissRateAnomaly, fields...)
}

// anomaliesKept bounds the miss-rate anomalies the engine remembers for the admin.
const anomaliesKept = 32

// anomalyLog keeps the engine's recent miss-rate anomalies for the admin.
type anomalyLog struct {
	// mu guards list.
	mu   sync.Mutex
	list []missrate.Anomaly
}

func (l *anomalyLog) add(a missrate.Anomaly) {
	l.mu.Lock()
	l.list = append(l.list, a)
	if len(l.list) > anomaliesKept {
		l.list = append(l.list[:0:0], l.list[len(l.list)-anomaliesKept:]...)
	}
	l.mu.Unlock()
}

// current returns the anomalies raised within their window of now, newest first, one per
// partition.
func (l *anomalyLog) current(now time.Time) []admin.Anomaly {
	l.mu.Lock()
	list := append([]missrate.Anomaly(nil), l.list...)
	l.mu.Unlock()
	var out []admin.Anomaly
	seen := make(map[string]bool)
	for i := len(list) - 1; i >= 0; i-- {
		a := list[i]
		if now.Sub(a.At) > a.Window || seen[a.Partition] {
			continue
		}
		seen[a.Partition] = true
		ratio := 0.0
		if a.Requests > 0 {
			ratio = float64(a.Misses) / float64(a.Requests)
		}
		out = append(out, admin.Anomaly{Partition: a.Partition, Misses: a.Misses, Lookups: a.Requests,
			Ratio: ratio, Throttled: a.Throttled})
	}
	return out
}
