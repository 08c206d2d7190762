package metrics_test

import (
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/weirproxy/weir/core/metrics"
)

// A counter family with a fixed set of label values, a collected gauge and a histogram,
// written in the text format.
func Example() {
	var r metrics.Registry

	// Every outcome is declared up front: the request path holds the counters and indexes
	// them with a constant, with no map lookup and no string built.
	const (
		hit  = 0
		miss = 1
	)
	outcomes, err := r.CounterFamily("weir_requests_total", "Requests answered, by outcome.",
		[]string{"outcome"}, [][]string{{"hit"}, {"miss"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	atomic.AddInt64(&outcomes[hit].N, 1) // the cheapest form under Yaegi
	atomic.AddInt64(&outcomes[hit].N, 1)
	metrics.Inc(outcomes[miss])

	// Breaker state per scope key, read when the registry writes.
	err = r.Collect(metrics.Collected{
		Name:   "weir_breaker_open",
		Help:   "Whether the origin's breaker is open (1) or not (0), by scope key.",
		Kind:   metrics.KindGauge,
		Labels: []string{"key"},
		Collect: func() []metrics.Sample {
			return []metrics.Sample{{Values: []string{"b.example"}, Value: 0}, {Values: []string{"a.example"}, Value: 1}}
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	fetches, err := r.Histogram("weir_fetch_duration_seconds", "Time to fetch from the origin.", []float64{0.1, 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	metrics.ObserveDuration(fetches, 50*time.Millisecond)
	metrics.ObserveDuration(fetches, 300*time.Millisecond)
	metrics.ObserveDuration(fetches, 2*time.Second)

	if err := r.WriteText(os.Stdout); err != nil {
		fmt.Println(err)
	}
	// Output:
	// # HELP weir_breaker_open Whether the origin's breaker is open (1) or not (0), by scope key.
	// # TYPE weir_breaker_open gauge
	// weir_breaker_open{key="a.example"} 1
	// weir_breaker_open{key="b.example"} 0
	// # HELP weir_fetch_duration_seconds Time to fetch from the origin.
	// # TYPE weir_fetch_duration_seconds histogram
	// weir_fetch_duration_seconds_bucket{le="0.1"} 1
	// weir_fetch_duration_seconds_bucket{le="1"} 2
	// weir_fetch_duration_seconds_bucket{le="+Inf"} 3
	// weir_fetch_duration_seconds_sum 2.35
	// weir_fetch_duration_seconds_count 3
	// # HELP weir_requests_total Requests answered, by outcome.
	// # TYPE weir_requests_total counter
	// weir_requests_total{outcome="hit"} 2
	// weir_requests_total{outcome="miss"} 1
}

// A collected family bounds the values of its first label: past Limit, samples are summed
// under "other".
func ExampleCollected_limit() {
	var r metrics.Registry
	err := r.Collect(metrics.Collected{
		Name:   "weir_origin_waiting",
		Help:   "Requests waiting for an origin slot, by host.",
		Kind:   metrics.KindGauge,
		Labels: []string{"host"},
		Limit:  2,
		Collect: func() []metrics.Sample {
			return []metrics.Sample{
				{Values: []string{"a.example"}, Value: 4},
				{Values: []string{"b.example"}, Value: 3},
				{Values: []string{"c.example"}, Value: 2},
				{Values: []string{"d.example"}, Value: 1},
			}
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := r.WriteText(os.Stdout); err != nil {
		fmt.Println(err)
	}
	// Output:
	// # HELP weir_origin_waiting Requests waiting for an origin slot, by host.
	// # TYPE weir_origin_waiting gauge
	// weir_origin_waiting{host="a.example"} 4
	// weir_origin_waiting{host="b.example"} 3
	// weir_origin_waiting{host="other"} 3
}

// Names are checked when a family is registered.
func ExampleRegistry_Counter() {
	var r metrics.Registry
	_, err := r.Counter("weir_requests", "Requests.")
	fmt.Println(err)
	_, err = r.Histogram("weir_fetch_milliseconds", "Fetch time.", metrics.DurationBuckets())
	fmt.Println(err)
	// Output:
	// metric "weir_requests": a counter's name ends in _total: invalid metric
	// metric "weir_fetch_milliseconds": milliseconds is not a base unit, use seconds: invalid metric
}
