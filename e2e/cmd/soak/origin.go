package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/weirproxy/weir/e2e"
)

// The origin's paths, all under the one router through Weir, and what each answers. Every
// body starts with its request's path kind and key ("hit k=12 "), so a client can tell an
// answer meant for another URL from its own.
const (
	pathHit   = "/s/hit"   // 200 small keys, max-age=30: mostly hits, stale-if-error in faults
	pathMiss  = "/s/miss"  // missKeys keys, max-age=120: mostly misses, the store fills and evicts
	pathPass  = "/s/pass"  // no-store: pass-through, then hit-for-pass
	pathUp    = "/s/up"    // POST with a body: the upload pool, and invalidation
	pathFlood = "/s/flood" // one path, a distinct query each time: the flood's misses
	pathBig   = "/s/big"   // a streamed 256 KiB answer, for clients that hang up mid-answer

	hitKeys   = 200
	missKeys  = 20000
	passKeys  = 500
	bigKeys   = 50
	hitSize   = 2 << 10
	missSize  = 4 << 10
	passSize  = 1 << 10
	floodSize = 1 << 10
	upSize    = 16 << 10
	// The big answer is written in bigChunks chunks of bigChunk bytes, bigPause apart, so that
	// a client hanging up after its first bytes leaves mid-answer.
	bigChunk  = 32 << 10
	bigChunks = 8
	bigPause  = 25 * time.Millisecond
	// floodDelay is the flood path's answer time: enough for its misses to queue at the
	// limiter.
	floodDelay = 20 * time.Millisecond
)

// Origin's modes, set by the fault driver.
const (
	originUp       int32 = iota
	originFailing        // answers 503 without Retry-After
	originDropping       // closes every connection without an answer
)

// faultyOrigin is the harness's origin with a switch that makes every path fail at once.
type faultyOrigin struct {
	*e2e.Origin
	mode int32
}

func newOrigin() *faultyOrigin {
	o := &faultyOrigin{Origin: e2e.NewOrigin()}
	o.handle(pathHit, keyed("hit", "k", hitSize, "max-age=30"))
	o.handle(pathMiss, keyed("miss", "k", missSize, "max-age=120"))
	o.handle(pathPass, keyed("pass", "k", passSize, "no-store"))
	o.handle(pathFlood, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(floodDelay)
		keyed("flood", "q", floodSize, "max-age=60")(w, r)
	})
	o.handle(pathUp, func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		fmt.Fprintf(w, "up %d", n)
	})
	o.handle(pathBig, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=20")
		w.Header().Set("Content-Length", fmt.Sprint(bigChunk*bigChunks))
		chunk := []byte(pad("big k="+r.URL.Query().Get("k")+" ", bigChunk))
		f, _ := w.(http.Flusher)
		for i := 0; i < bigChunks; i++ {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			if f != nil {
				f.Flush()
			}
			time.Sleep(bigPause)
			chunk = []byte(strings.Repeat("b", bigChunk))
		}
	})
	return o
}

// setMode switches the origin to mode for every request that arrives from now on.
func (o *faultyOrigin) setMode(mode int32) { atomic.StoreInt32(&o.mode, mode) }

// handle sets h for path behind the fault switch.
func (o *faultyOrigin) handle(path string, h http.HandlerFunc) {
	o.Handle(path, func(w http.ResponseWriter, r *http.Request) {
		switch atomic.LoadInt32(&o.mode) {
		case originFailing:
			w.Header().Set("Cache-Control", "no-store")
			http.Error(w, "origin failing", http.StatusServiceUnavailable)
			return
		case originDropping:
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					conn.Close()
					return
				}
			}
			panic(http.ErrAbortHandler)
		}
		h(w, r)
	})
}

// keyed answers with a body of size bytes that starts with kind and the request's param.
func keyed(kind, param string, size int, cacheControl string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Cache-Control", cacheControl)
		io.WriteString(w, pad(bodyLead(kind, param, r.URL.Query().Get(param)), size))
	}
}

// bodyLead is how the answer for kind's key value starts.
func bodyLead(kind, param, value string) string { return kind + " " + param + "=" + value + " " }

// pad lengthens s to n bytes.
func pad(s string, n int) string {
	if len(s) >= n {
		return s
	}
	return s + strings.Repeat("x", n-len(s))
}
