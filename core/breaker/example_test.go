package breaker_test

import (
	"fmt"
	"time"

	"github.com/weirproxy/weir/core/breaker"
)

// The engine asks before each origin fetch and records each result with its permit.
func ExampleBreaker() {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	b, err := breaker.New("", breaker.Settings{
		Rand:   func() float64 { return 0.5 }, // no jitter, for a stable example
		OnTrip: func(key string, until time.Time) { fmt.Println("tripped until", until.Format("15:04:05")) },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := 0; i < 20; i++ {
		p := b.Allow(now)
		b.Record(p, 503, true, now) // say the origin answered 503
	}
	p := b.Allow(now.Add(time.Second))
	fmt.Println("allowed:", p.Allowed, "retry after:", p.RetryAfter)

	probe := b.Allow(now.Add(5 * time.Second))
	fmt.Println("probe:", probe.Probe, "state:", breaker.StateName(b.State(now.Add(5*time.Second))))
	b.Record(probe, 200, false, now.Add(5*time.Second))
	fmt.Println("state:", breaker.StateName(b.State(now.Add(5*time.Second))))
	// Output:
	// tripped until 12:00:05
	// allowed: false retry after: 4s
	// probe: true state: half-open
	// state: closed
}

func ExampleScopeKey() {
	for _, h := range []string{"a.example.co.uk:443", "B.Example.co.uk.", "[2001:db8:0::1]:8443", "192.0.2.7:80"} {
		fmt.Printf("%-22s host=%-16s domain=%s\n", h, breaker.ScopeKey(breaker.ScopeHost, h), breaker.ScopeKey(breaker.ScopeDomain, h))
	}
	// Output:
	// a.example.co.uk:443    host=a.example.co.uk  domain=example.co.uk
	// B.Example.co.uk.       host=b.example.co.uk  domain=example.co.uk
	// [2001:db8:0::1]:8443   host=[2001:db8::1]    domain=[2001:db8::1]
	// 192.0.2.7:80           host=192.0.2.7        domain=192.0.2.7
}

// A Group keeps one breaker per scope key, and adopts deadlines other instances share.
func ExampleGroup() {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	g, err := breaker.NewGroup(breaker.Settings{Scope: breaker.ScopeDomain})
	if err != nil {
		fmt.Println(err)
		return
	}
	// Another instance tripped example.com's breaker until 12:00:30.
	g.Observe("example.com", now.Add(30*time.Second), now)

	key := breaker.ScopeKey(breaker.ScopeDomain, "img.example.com")
	p := g.Get(key, now).Allow(now)
	fmt.Println(key, "allowed:", p.Allowed, "retry after:", p.RetryAfter)
	// Output:
	// example.com allowed: false retry after: 30s
}

func ExampleParseScope() {
	_, err := breaker.ParseScope("region")
	fmt.Println(err)
	// Output:
	// breaker.scope: "region" must be one of engine, host, domain: invalid setting
}

// An entry of breaker.overrides names a host, with or without its port, then the settings
// it gets in place of the group's.
func ExampleParseOverride() {
	for _, s := range []string{
		"API.example.com:8443: window=30s failureRatio=0.3",
		"[2001:db8::1]: openFor=10s maxOpenFor=2m",
		"quiet.example.com",
		"api.example.com: threshold=0.3",
	} {
		key, o, err := breaker.ParseOverride(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%s [%v]\n", key, o)
	}
	// Output:
	// api.example.com [window=30s failureRatio=0.3]
	// [2001:db8::1] [openFor=10s maxOpenFor=2m0s]
	// quiet.example.com []
	// breaker.overrides: "api.example.com: threshold=0.3": "threshold": unknown name: want window, minRequests, failureRatio, maxFailures, openFor, maxOpenFor, slowCall, slowCallRatio, probes or probeInterval: invalid setting
}

// An operator tunes one host's breaker, declares another before it sees any traffic, and
// reads every breaker back for the admin page.
func ExampleGroup_SetOverride() {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	g, err := breaker.NewGroup(breaker.Settings{
		Rand: func() float64 { return 0.5 }, // no jitter, for a stable example
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := g.SetOverride("api.example.com", breaker.Override{MinRequests: 5, OpenFor: 30 * time.Second}); err != nil {
		fmt.Println(err)
		return
	}
	if err := g.Declare("quiet.example.com"); err != nil {
		fmt.Println(err)
		return
	}
	b := g.Get("api.example.com", now)
	for i := 0; i < 5; i++ {
		b.Record(b.Allow(now), 502, true, now)
	}
	g.Get("other.example.com", now).ForceOpen(now, time.Minute)

	for _, st := range g.Snapshot(now.Add(10 * time.Second)) {
		fmt.Printf("%s %s by=%q left=%v last=%d trips=%d declared=%v minRequests=%d openFor=%v override=[%v]\n",
			st.Key, breaker.StateName(st.State), st.OpenedBy, st.OpenLeft, st.LastFailure,
			st.Trips, st.Declared, st.Params.MinRequests, st.Params.OpenFor, st.Override)
	}
	// Output:
	// api.example.com open by="auto" left=20s last=502 trips=1 declared=true minRequests=5 openFor=30s override=[minRequests=5 openFor=30s]
	// other.example.com open by="manual" left=50s last=0 trips=0 declared=false minRequests=20 openFor=5s override=[]
	// quiet.example.com closed by="" left=0s last=0 trips=0 declared=true minRequests=20 openFor=5s override=[]
}
