// Command flood sends the demo's tour its traffic: n requests, c at a time, and prints what
// came back: statuses, Cache-Status values (without their ttl) and the slowest answers.
//
//	flood -n 2000 -c 64 'http://127.0.0.1:8080/search?q={n}'
//
// {n} in the URL becomes the request's number, so each request asks for a URL of its own;
// without it every request asks for the same URL.
package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ttl is the part of a Cache-Status that changes from answer to answer.
var ttl = regexp.MustCompile(`; ?ttl=-?[0-9]+`)

// result is what one request got.
type result struct {
	status int
	cache  string
	took   time.Duration
	err    error
}

func main() {
	n := flag.Int("n", 100, "requests to send")
	c := flag.Int("c", 10, "requests at once")
	label := flag.String("label", "", "a name printed before the summary")
	host := flag.String("host", "", "Host header to send")
	method := flag.String("method", http.MethodGet, "request method")
	body := flag.Int("body", 0, "bytes of request body to send")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: flood [-n N] [-c C] [-label L] [-host H] [-method M] [-body B] URL")
		os.Exit(2)
	}
	target := flag.Arg(0)
	client := &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: *c, MaxConnsPerHost: *c},
	}
	results := make([]result, *n)
	next := make(chan int)
	var wg sync.WaitGroup
	began := time.Now()
	for w := 0; w < *c; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results[i] = send(client, *method, strings.ReplaceAll(target, "{n}", strconv.Itoa(i)), *host, *body)
			}
		}()
	}
	for i := 0; i < *n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	report(os.Stdout, *label, results, time.Since(began))
}

// send makes one request and reads its answer to the end.
func send(client *http.Client, method, url, host string, body int) result {
	var rd io.Reader
	if body > 0 {
		rd = strings.NewReader(strings.Repeat("x", body))
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return result{err: err}
	}
	if host != "" {
		req.Host = host
	}
	began := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return result{err: err, took: time.Since(began)}
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return result{
		status: resp.StatusCode,
		cache:  ttl.ReplaceAllString(resp.Header.Get("Cache-Status"), ""),
		took:   time.Since(began),
	}
}

// report prints the statuses, the Cache-Status values and the latencies of results.
func report(w io.Writer, label string, results []result, took time.Duration) {
	statuses := map[string]int{}
	caches := map[string]int{}
	durations := make([]time.Duration, 0, len(results))
	for _, r := range results {
		if r.err != nil {
			statuses["error: "+r.err.Error()]++
			continue
		}
		statuses[strconv.Itoa(r.status)]++
		if r.cache == "" {
			r.cache = "(none)"
		}
		caches[r.cache]++
		durations = append(durations, r.took)
	}
	sort.Slice(durations, func(i, j int) bool { return durations[i] < durations[j] })
	if label != "" {
		fmt.Fprintf(w, "%s: ", label)
	}
	fmt.Fprintf(w, "%d requests in %v\n", len(results), took.Round(time.Millisecond))
	fmt.Fprintf(w, "  status        %s\n", counted(statuses))
	fmt.Fprintf(w, "  Cache-Status  %s\n", strings.ReplaceAll(counted(caches), ", ", "\n                "))
	if len(durations) > 0 {
		fmt.Fprintf(w, "  latency       median %v, p99 %v, max %v\n",
			durations[len(durations)/2].Round(time.Millisecond),
			durations[len(durations)*99/100].Round(time.Millisecond),
			durations[len(durations)-1].Round(time.Millisecond))
	}
}

// counted prints a count per value, the most frequent first.
func counted(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d× %s", m[k], k)
	}
	return strings.Join(parts, ", ")
}
