package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
)

// The charts of a run, one SVG file each, every one with the faults shaded: Redis down in
// red, the origin failing in orange, the flood bursts in blue, Redis restarts as dotted
// lines.
var faultLegend = []string{"shaded: Redis stopped (red), origin failing (orange), flood burst (blue); dotted: Redis killed and restarted"}

func writeCharts(dir string, samples []sample, s schedule, budget int64) error {
	if len(samples) == 0 {
		return nil
	}
	xs := make([]float64, len(samples))
	for i, sm := range samples {
		xs[i] = sm.at.Minutes()
	}
	var bands []band
	if s.redisStop.to > 0 {
		bands = append(bands, band{from: s.redisStop.from.Minutes(), to: s.redisStop.to.Minutes(), fill: "#d62728"})
	}
	for _, w := range s.originFaults {
		bands = append(bands, band{from: w.from.Minutes(), to: w.to.Minutes(), fill: "#ff7f0e"})
	}
	for _, w := range s.floods {
		bands = append(bands, band{from: w.from.Minutes(), to: w.to.Minutes(), fill: "#1f77b4"})
	}
	var marks []mark
	for _, t := range s.redisRestarts {
		marks = append(marks, mark{at: t.Minutes(), stroke: "#d62728"})
	}
	of := func(v func(sample) int64, scale float64) []float64 {
		ys := make([]float64, len(samples))
		for i, sm := range samples {
			if x := v(sm); x < 0 {
				ys[i] = math.NaN()
			} else {
				ys[i] = float64(x) / scale
			}
		}
		return ys
	}
	// perInterval is the count of kind between a sample and the one before, a second.
	perSecond := func(count func(snapshot) int64) []float64 {
		ys := make([]float64, len(samples))
		for i, sm := range samples {
			prev, prevAt := int64(0), 0.0
			if i > 0 {
				prev, prevAt = count(samples[i-1].counts), samples[i-1].at.Seconds()
			}
			if dt := sm.at.Seconds() - prevAt; dt > 0 {
				ys[i] = float64(count(sm.counts)-prev) / dt
			}
		}
		return ys
	}
	kindLines := func(kinds []string, trim string) []series {
		var out []series
		for _, k := range kinds {
			k := k
			if samples[len(samples)-1].counts.counts[k] == 0 {
				continue
			}
			out = append(out, series{name: strings.TrimPrefix(k, trim), ys: perSecond(func(c snapshot) int64 { return c.counts[k] })})
		}
		if len(out) == 0 {
			out = append(out, series{name: "none", ys: make([]float64, len(samples))})
		}
		return out
	}
	const mb = 1 << 20
	limit := make([]float64, len(samples))
	for i := range limit {
		limit[i] = float64(budgetCopies*budget+heapConstant) / mb
	}
	errorKinds := append([]string{kindOrigin503, kindOrigin502}, undesignedKinds...)
	charts := map[string]chart{
		"heap.svg": {title: "Traefik's heap: live (judged against the limit) and in use", unit: "MiB", lines: []series{
			{name: "live heap", ys: of(func(s sample) int64 { return s.heapLive }, mb)},
			{name: "heap in use", ys: of(func(s sample) int64 { return s.heapInuse }, mb)},
			{name: "heap allocated", ys: of(func(s sample) int64 { return s.heapAlloc }, mb)},
			{name: "limit of the live heap", ys: limit, dashed: true},
		}},
		"goroutines.svg": {title: "Traefik's goroutines", unit: "goroutines", lines: []series{
			{name: "goroutines", ys: of(func(s sample) int64 { return s.goroutines }, 1)},
		}},
		"fds.svg": {title: "Traefik's open file descriptors", unit: "descriptors", lines: []series{
			{name: "open fds", ys: of(func(s sample) int64 { return s.fds }, 1)},
		}},
		"cache.svg": {title: "Weir's memory (near cache) against cache.maxSize", unit: "MiB", lines: []series{
			{name: "weir_cache_bytes", ys: of(func(s sample) int64 { return s.cacheBytes }, mb)},
			{name: "cache.maxSize", ys: of(func(s sample) int64 { return s.cacheMax }, mb), dashed: true},
			{name: "store breaker open", ys: of(func(s sample) int64 { return s.storeOpen }, 1)},
		}},
		"answers.svg": {title: "Answers a second", unit: "answers/s", lines: []series{
			{name: "all", ys: perSecond(func(c snapshot) int64 { return c.sent })},
			{name: "ok (2xx, 3xx)", ys: perSecond(func(c snapshot) int64 { return c.counts[kindOK] })},
			{name: "starts skipped", ys: perSecond(func(c snapshot) int64 { return c.behind })},
		}},
		"errors.svg": {title: "Client errors a second, by kind (bad_*, transport, timeout: undesigned)", unit: "answers/s",
			lines: kindLines(errorKinds, "")},
		"refusals.svg": {title: "Weir's refusals a second, by reason", unit: "answers/s",
			lines: kindLines(refusedKinds(), refusedPrefix)},
	}
	for name, c := range charts {
		c.xs, c.bands, c.marks, c.legend = xs, bands, marks, faultLegend
		if err := os.WriteFile(filepath.Join(dir, name), []byte(c.svg()), 0o644); err != nil {
			return err
		}
	}
	return nil
}
