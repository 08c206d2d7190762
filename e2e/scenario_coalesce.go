package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Coalescing's load scenarios: an expired hot key, and rounds of concurrent cold requests.

// HotKeyOptions sizes the expired-hot-key scenario. Zero fields take the published sizes.
type HotKeyOptions struct {
	// Conf is the middleware's configuration; nil: Weir's defaults.
	Conf map[string]interface{}
	// Clients request the key at once once it has expired; 0 means 1,000.
	Clients int
	// OriginDelay is the origin's time to answer the refetch; 0 means 500ms.
	OriginDelay time.Duration
}

// HotKeyFigures is what the expired-hot-key scenario measured.
type HotKeyFigures struct {
	// Clients is how many requests went at once.
	Clients int
	// Fetches is how many requests reached the origin for the expired key.
	Fetches int64
	// Collapsed counts the answers that said they waited for another request's fetch
	// (Cache-Status collapsed); Hits the ones that came after it, from the cache.
	Collapsed, Hits int
	// FollowersP50, FollowersP99 and FollowersMax are the waits of the requests answered
	// by the leader's fetch, sent to answered; Leader is the leader's.
	FollowersP50, FollowersP99, FollowersMax, Leader time.Duration
	// OriginDelay is the origin's time to answer.
	OriginDelay time.Duration
	errors      *firstErrors
}

func (f HotKeyFigures) String() string {
	return fmt.Sprintf("%d concurrent requests on the expired key: %d origin fetches; %d collapsed onto the leader's fetch, %d hits after it; "+
		"followers' wait p50 %v p99 %v max %v, the leader %v (the origin takes %v); wrong answers: %s",
		f.Clients, f.Fetches, f.Collapsed, f.Hits, f.FollowersP50.Round(100*time.Microsecond), f.FollowersP99.Round(100*time.Microsecond),
		f.FollowersMax.Round(100*time.Microsecond), f.Leader.Round(100*time.Microsecond), f.OriginDelay, f.errors)
}

// Errors is how many answers were wrong: not 200 with the origin's second body.
func (f HotKeyFigures) Errors() int { return f.errors.n }

// RunHotKey stores a key with max-age=1 and no stale-* directive, waits until it has
// expired, then sends o.Clients requests for it at once, on connections opened beforehand.
// The origin takes o.OriginDelay to answer the refetch: every request arrives while it is
// in flight, and coalescing must make it the only one (FR-COA-1).
func RunHotKey(env ScenarioEnv, o HotKeyOptions) (HotKeyFigures, error) {
	orDefault(&o.Clients, 1000)
	if o.OriginDelay == 0 {
		o.OriginDelay = 500 * time.Millisecond
	}
	origin := NewOrigin()
	defer origin.Close()
	var fetches int64
	origin.Handle("/hot/key", func(w http.ResponseWriter, r *http.Request) {
		n := atomic.AddInt64(&fetches, 1)
		if n > 1 {
			time.Sleep(o.OriginDelay)
		}
		w.Header().Set("Cache-Control", "max-age=1")
		fmt.Fprintf(w, "version %d", n)
	})
	// The connections are opened on a router without Weir: its limiter would shed most of
	// a thousand requests on one path.
	origin.Handle("/warm", delayed(200*time.Millisecond, answer("no-store", "warm")))
	d := scenarioRoute("hot", "/hot/", scenarioConf(o.Conf, nil))
	d.Routes = append(d.Routes, Route{Name: "warm", Rule: "Path(`/warm`)"})
	tr, err := env.start(origin, d)
	if err != nil {
		return HotKeyFigures{}, err
	}
	f := HotKeyFigures{Clients: o.Clients, OriginDelay: o.OriginDelay, errors: &firstErrors{}}
	err = func() error {
		first, err := fetch(context.Background(), tr.Client(), requestTimeout, http.MethodGet, tr.URL("/hot/key"), nil)
		if err != nil || first.status != http.StatusOK || !first.cacheStatus().has("stored") {
			return fmt.Errorf("storing the hot key: status %d, Cache-Status %q, %v; want 200 stored", first.status, first.cacheStatus(), err)
		}
		stored := time.Now()
		warmConnections(tr, "/warm", o.Clients)
		// Stale after a second; Age counts whole seconds, which can only make it staler.
		time.Sleep(time.Until(stored.Add(1500 * time.Millisecond)))
		replies := make([]reply, o.Clients)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := 0; i < o.Clients; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				<-start
				r, err := fetch(context.Background(), tr.Client(), requestTimeout, http.MethodGet, tr.URL("/hot/key"), nil)
				if err == nil && (r.status != http.StatusOK || r.body != "version 2") {
					err = fmt.Errorf("status %d body %q Cache-Status %q", r.status, short(r.body), r.cacheStatus())
				}
				if err != nil {
					f.errors.add(err.Error())
				}
				replies[i] = r
			}(i)
		}
		close(start)
		wg.Wait()
		f.Fetches = atomic.LoadInt64(&fetches) - 1
		var waits []time.Duration
		for _, r := range replies {
			if r.header == nil {
				continue
			}
			cs := r.cacheStatus()
			switch {
			case cs.has("collapsed"):
				f.Collapsed++
				waits = append(waits, r.took)
			case cs.hit():
				f.Hits++
			case cs.has("stored"):
				f.Leader = r.took
			}
		}
		sort.Slice(waits, func(i, j int) bool { return waits[i] < waits[j] })
		f.FollowersP50, f.FollowersP99 = limPercentile(waits, 50), limPercentile(waits, 99)
		if len(waits) > 0 {
			f.FollowersMax = waits[len(waits)-1]
		}
		return nil
	}()
	return f, stopped(tr, err)
}

// RoundsOptions sizes the coalescing-rounds scenario. Zero fields take the published sizes.
type RoundsOptions struct {
	// Conf is the middleware's configuration; nil: Weir's defaults.
	Conf map[string]interface{}
	// Rounds is how many cold keys are requested; 0 means 10,000.
	Rounds int
	// Clients request each round's key at once; 0 means 10.
	Clients int
}

// RoundsFigures is what the coalescing-rounds scenario measured.
type RoundsFigures struct {
	Rounds, Clients int
	// Fetches is how many requests reached the origin over every round; Most the most in
	// one round, and Extra the rounds that cost more than one.
	Fetches, Most int64
	Extra         int
	Elapsed       time.Duration
	errors        *firstErrors
}

// PerRound is the origin's fetches per round.
func (f RoundsFigures) PerRound() float64 {
	if f.Rounds == 0 {
		return 0
	}
	return float64(f.Fetches) / float64(f.Rounds)
}

// Errors is how many answers were wrong: not 200 with the round's body.
func (f RoundsFigures) Errors() int { return f.errors.n }

func (f RoundsFigures) String() string {
	return fmt.Sprintf("%d rounds of %d concurrent requests for a cold key in %v: %d origin fetches, %.4f per round; %d rounds cost more than one fetch, the most %d; wrong answers: %s",
		f.Rounds, f.Clients, f.Elapsed.Round(time.Millisecond), f.Fetches, f.PerRound(), f.Extra, f.Most, f.errors)
}

// RunRounds sends, round after round, o.Clients requests at once for a key no request has
// asked for before, to an origin that answers at once, and counts the origin's fetches of
// each round's key: coalescing makes one, and a request that comes after the fetch is a
// hit (FR-COA-1).
func RunRounds(env ScenarioEnv, o RoundsOptions) (RoundsFigures, error) {
	orDefault(&o.Rounds, 10000)
	orDefault(&o.Clients, 10)
	origin := NewOrigin()
	defer origin.Close()
	var counts sync.Map // round key -> *int64
	origin.Handle("/rounds/key", func(w http.ResponseWriter, r *http.Request) {
		c, _ := counts.LoadOrStore(r.URL.RawQuery, new(int64))
		atomic.AddInt64(c.(*int64), 1)
		w.Header().Set("Cache-Control", "max-age=600")
		io.WriteString(w, r.URL.RawQuery)
	})
	tr, err := env.start(origin, scenarioRoute("rounds", "/rounds/", scenarioConf(o.Conf, nil)))
	if err != nil {
		return RoundsFigures{}, err
	}
	f := RoundsFigures{Rounds: o.Rounds, Clients: o.Clients, errors: &firstErrors{}}
	err = func() error {
		began := time.Now()
		for round := 0; round < o.Rounds; round++ {
			q := fmt.Sprintf("r=%d", round)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := 0; i < o.Clients; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					r, err := fetch(context.Background(), tr.Client(), requestTimeout, http.MethodGet, tr.URL("/rounds/key?"+q), nil)
					if err == nil && (r.status != http.StatusOK || r.body != q) {
						err = fmt.Errorf("round %s: status %d body %q Cache-Status %q", q, r.status, short(r.body), r.cacheStatus())
					}
					if err != nil {
						f.errors.add(err.Error())
					}
				}()
			}
			close(start)
			wg.Wait()
			n := int64(0)
			if c, ok := counts.Load(q); ok {
				n = atomic.LoadInt64(c.(*int64))
			}
			f.Fetches += n
			if n > 1 {
				f.Extra++
			}
			if n > f.Most {
				f.Most = n
			}
			if (round+1)%1000 == 0 {
				env.logf("%d rounds: %d fetches (%.4f per round)", round+1, f.Fetches, float64(f.Fetches)/float64(round+1))
			}
		}
		f.Elapsed = time.Since(began)
		return nil
	}()
	return f, stopped(tr, err)
}
