// Command origin is the demo's sample origin: a few paths that show what Weir does with
// common answers. It counts the requests it serves and prints the count on /stats.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"sync/atomic"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9000", "listen address")
	flag.Parse()
	var served int64
	count := func(next http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			atomic.AddInt64(&served, 1)
			next(w, r)
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/stats", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "origin requests: %d\n", atomic.LoadInt64(&served))
	})
	// Cached for a minute.
	mux.HandleFunc("/fresh", count(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		fmt.Fprintf(w, "generated at %s\n", time.Now().Format(time.RFC3339Nano))
	}))
	// Slow and popular: concurrent requests are coalesced into one origin fetch.
	mux.HandleFunc("/slow", count(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Second)
		w.Header().Set("Cache-Control", "max-age=5, stale-while-revalidate=30, stale-if-error=300")
		fmt.Fprintf(w, "slow answer generated at %s\n", time.Now().Format(time.RFC3339Nano))
	}))
	// Varies on Accept-Language.
	mux.HandleFunc("/hello", count(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("Vary", "Accept-Language")
		if r.Header.Get("Accept-Language") == "fr" {
			fmt.Fprintln(w, "bonjour")
			return
		}
		fmt.Fprintln(w, "hello")
	}))
	// Never stored.
	mux.HandleFunc("/private", count(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "private, max-age=60")
		fmt.Fprintln(w, "just for you")
	}))
	// Server-sent events stream through.
	mux.HandleFunc("/events", count(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		f, _ := w.(http.Flusher)
		for i := 0; i < 5; i++ {
			fmt.Fprintf(w, "data: tick %d\n\n", i)
			if f != nil {
				f.Flush()
			}
			time.Sleep(time.Second)
		}
	}))
	log.Printf("demo origin listening on %s", *addr)
	log.Fatal(http.ListenAndServe(*addr, mux))
}
