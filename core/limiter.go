package core

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/weirproxy/weir/core/limit"
)

// limitRequest describes r to the limiter: its partition (scheme, host, path), its host, and
// whether it carries a body, which draws from the upload pool (FR-LIM-7).
func limitRequest(r *http.Request) limit.Request {
	return limit.Request{Partition: partition(r), Host: r.Host, Upload: hasBody(r)}
}

// hasBody tells a request with a body by its length: -1 is a chunked one, and a server
// gives a request without one a length of zero. Handler.pass writes this test out.
func hasBody(r *http.Request) bool {
	return r.ContentLength != 0
}

// shed answers a request the limiter turned away: 503 with Retry-After and the reason in
// Cache-Status (FR-LIM-5). A client that left while queued gets nothing.
func (h *Handler) shed(w http.ResponseWriter, r *http.Request, cacheStatus string, err error) {
	if errors.Is(err, limit.ErrContextDone) {
		return
	}
	unavailable(w, cacheStatus, limit.Detail(err), h.retryAfter)
}

// retryAfterSeconds is the Retry-After sent with shed answers: the queue wait, at least 1s.
func retryAfterSeconds(queueWait time.Duration) string {
	if queueWait <= 0 {
		queueWait = limit.DefaultMaxQueueWait
	}
	secs := int64((queueWait + time.Second - 1) / time.Second)
	if secs < 1 {
		secs = 1
	}
	return strconv.FormatInt(secs, 10)
}
