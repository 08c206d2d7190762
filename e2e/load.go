package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Load is a closed-loop HTTP load for benchmarks when wrk is not at hand: Connections
// keep-alive connections, each sending its next GET as soon as the previous answer is read,
// for Duration.
type Load struct {
	// URL is requested with GET. Required.
	URL string
	// Connections is how many requests are in flight at once; 0 means 1.
	Connections int
	// Duration is how long the load runs; 0 means one second.
	Duration time.Duration
}

// LoadResult counts what a Load achieved.
type LoadResult struct {
	// Requests are answers read completely with a 2xx or 3xx status.
	Requests int64
	// Failures are transport errors and other statuses.
	Failures int64
	// Elapsed is the wall time the load ran.
	Elapsed time.Duration
	// FirstFailure describes the first failure; "" when there was none.
	FirstFailure string
}

// PerSecond is the rate of successful requests.
func (r LoadResult) PerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}

// Run applies the load until Duration passes or ctx ends.
func (l Load) Run(ctx context.Context) LoadResult {
	conns := l.Connections
	if conns <= 0 {
		conns = 1
	}
	d := l.Duration
	if d <= 0 {
		d = time.Second
	}
	transport := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		DisableCompression:  true,
		MaxConnsPerHost:     conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     30 * time.Second,
	}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: 10 * time.Second}

	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var ok, failed int64
	var firstOnce sync.Once
	var first string
	var wg sync.WaitGroup
	began := time.Now()
	for i := 0; i < conns; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				err := l.once(ctx, client)
				if err == nil {
					atomic.AddInt64(&ok, 1)
				} else if ctx.Err() == nil {
					atomic.AddInt64(&failed, 1)
					firstOnce.Do(func() { first = err.Error() })
				}
			}
		}()
	}
	wg.Wait()
	return LoadResult{Requests: ok, Failures: failed, Elapsed: time.Since(began), FirstFailure: first}
}

// eachIndex calls do(i) once for each i from 0 to n-1, from workers goroutines that each take
// the next index as soon as their previous call returns, until every index is taken or ctx
// ends. It returns once every call has, with how many indexes were taken.
func eachIndex(ctx context.Context, workers, n int, do func(i int)) int {
	var next int64 = -1
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(atomic.AddInt64(&next, 1))
				if i >= n {
					return
				}
				do(i)
			}
		}()
	}
	wg.Wait()
	if taken := int(next) + 1; taken < n {
		return taken
	}
	return n
}

func (l Load) once(ctx context.Context, client *http.Client) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.URL, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err == nil && resp.StatusCode >= 400 {
		err = fmt.Errorf("status %d", resp.StatusCode)
	}
	return err
}
