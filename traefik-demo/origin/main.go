// Command origin is the demo's sample origin: one path for each thing Weir protects an
// origin from, and a few that show what Weir does with common answers. It counts the
// requests that reach it, per path, and prints the counts on /stats; /fail turns the
// failing page's failures on and off.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// counts holds how many requests reached each path, and how many at most at once.
type counts struct {
	mu     sync.Mutex
	byPath map[string]int
	now    map[string]int
	peak   map[string]int
	total  int
}

// enter counts a request for path arriving; leave, its answer written.
func (c *counts) enter(path string) {
	c.mu.Lock()
	c.byPath[path]++
	c.total++
	c.now[path]++
	if c.now[path] > c.peak[path] {
		c.peak[path] = c.now[path]
	}
	c.mu.Unlock()
}

func (c *counts) leave(path string) {
	c.mu.Lock()
	c.now[path]--
	c.mu.Unlock()
}

// write prints the total and every path's count, or only path's when path is not empty.
func (c *counts) write(w io.Writer, path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if path != "" {
		fmt.Fprintf(w, "%d %d\n", c.byPath[path], c.peak[path])
		return
	}
	paths := make([]string, 0, len(c.byPath))
	for p := range c.byPath {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	fmt.Fprintf(w, "origin requests: %d\n", c.total)
	for _, p := range paths {
		fmt.Fprintf(w, "  %-10s %6d requests, at most %d at once\n", p, c.byPath[p], c.peak[p])
	}
}

func main() {
	addr := flag.String("addr", "127.0.0.1:9000", "listen address")
	flag.Parse()
	seen := &counts{byPath: map[string]int{}, now: map[string]int{}, peak: map[string]int{}}
	var failing atomic.Bool
	count := func(next http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			seen.enter(r.URL.Path)
			defer seen.leave(r.URL.Path)
			next(w, r)
		}
	}
	mux := http.NewServeMux()
	// What reached the origin: every path, or one (/stats?path=/hot prints its count and
	// the most requests for it served at once).
	mux.HandleFunc("/stats", func(w http.ResponseWriter, r *http.Request) {
		seen.write(w, r.URL.Query().Get("path"))
	})
	// /fail?on=true makes /flaky fail with 503, /fail?on=false heals it.
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) {
		on, err := strconv.ParseBool(r.URL.Query().Get("on"))
		if err != nil {
			http.Error(w, "want /fail?on=true or /fail?on=false", http.StatusBadRequest)
			return
		}
		failing.Store(on)
		fmt.Fprintf(w, "/flaky failing: %t\n", on)
	})
	// A hot key: cached for a minute, so one origin call serves every request in it.
	mux.HandleFunc("/hot", count(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		fmt.Fprintf(w, "hot page generated at %s\n", time.Now().Format(time.RFC3339Nano))
	}))
	mux.HandleFunc("/fresh", count(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		fmt.Fprintf(w, "generated at %s\n", time.Now().Format(time.RFC3339Nano))
	}))
	// A slow page: a second to answer, so concurrent requests for one URL wait for one
	// origin call together.
	mux.HandleFunc("/slow", count(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Second)
		w.Header().Set("Cache-Control", "max-age=5, stale-while-revalidate=30, stale-if-error=300")
		fmt.Fprintf(w, "slow answer generated at %s\n", time.Now().Format(time.RFC3339Nano))
	}))
	// A page that fails on demand (/fail?on=true): 503, which the breaker and the negative
	// cache count as the origin failing.
	mux.HandleFunc("/flaky", count(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() {
			http.Error(w, "flaky page: failing", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Cache-Control", "max-age=2")
		fmt.Fprintln(w, "flaky page: working")
	}))
	// A search page: every query is a page of its own, and each takes 200ms, so a flood of
	// distinct queries misses the cache and piles up at the origin.
	mux.HandleFunc("/search", count(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(200 * time.Millisecond)
		w.Header().Set("Cache-Control", "max-age=60")
		fmt.Fprintf(w, "results for %q\n", r.URL.Query().Get("q"))
	}))
	// A product page, another path while /search is flooded.
	mux.HandleFunc("/item", count(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(50 * time.Millisecond)
		w.Header().Set("Cache-Control", "max-age=60")
		fmt.Fprintf(w, "item %q\n", r.URL.Query().Get("id"))
	}))
	// An upload: reads the body, slowly, and says how much arrived.
	mux.HandleFunc("/upload", count(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		time.Sleep(100 * time.Millisecond)
		fmt.Fprintf(w, "received %d bytes\n", n)
	}))
	// A page that asks clients to come back later: 429 with Retry-After.
	mux.HandleFunc("/busy", count(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "7")
		http.Error(w, "too many requests: come back in 7 seconds", http.StatusTooManyRequests)
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
	// A user's own page: the session cookie names the user, and the answer is private, so
	// the shared cache never stores it. With private.paths: /account, Weir keeps one copy
	// per user for its max-age; /logout drops the user's copies (Weir-Purge-User).
	mux.HandleFunc("/account", count(func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie("session")
		if err != nil || c.Value == "" {
			w.Header().Set("Cache-Control", "no-store")
			fmt.Fprintln(w, "not signed in: send a session cookie")
			return
		}
		w.Header().Set("Cache-Control", "private, max-age=30")
		fmt.Fprintf(w, "account of %s, generated at %s\n", c.Value, time.Now().Format(time.RFC3339Nano))
	}))
	mux.HandleFunc("/logout", count(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Weir-Purge-User", "1")
		w.Header().Set("Cache-Control", "no-store")
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "", MaxAge: -1})
		fmt.Fprintln(w, "signed out")
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
