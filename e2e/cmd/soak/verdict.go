package main

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strings"
)

// The bounds of the verdict.
//
// Growth is judged on the second half of the run, after the caches have filled and every
// kind of fault has been met once in the hour, by a Theil-Sen line (the median of the
// slopes between every pair of samples): a linear fit that a flood burst or a Redis outage
// caught by a sample or two cannot tilt, as it would a least-squares one. The series fails
// when that line rises by more than its allowance over the half it is fitted on. The
// allowance is the larger of a floor and a share of the series' median: the floor is what
// ordinary churn moves (keep-alive connections of the 128 steady and 32 flood clients come
// and go, each one to three of Traefik's goroutines and one descriptor), the share keeps a
// large steady figure from failing on a few percent of drift. A leak of one goroutine per
// configuration reload adds 180 in the hour's second half, past the goroutines' floor; one
// per request or per Redis connection adds thousands.
const (
	goroutineFloor = 100
	fdFloor        = 50
	growthShare    = 0.25
	// minFitSamples is the fewest samples a fit is made on; fewer are reported, not judged.
	minFitSamples = 4
	// maxStoreOpenShare is the largest share of samples that may find Weir's store breaker
	// open. Redis is down or just restarted in some of them (5 of 12 in two minutes, about 1
	// in 10 in the hour); a store that never answers, while every client is served from
	// memory and no client sees an error, shows as the breaker open in all of them.
	maxStoreOpenShare = 0.75

	// heapConstant is what Traefik's live heap (what the last GC marked live, liveHeap)
	// may hold beside Weir's cache budgets: Traefik with its routers and the Go runtime's
	// own, the Yaegi interpreter's tree of Weir's code (about 41 MB) and the interpreter's
	// frames, and the buffers and bodies of the requests in flight (160 clients' keep-alive
	// connections at a flood's peak, each with its bufio buffers and, for uploads and
	// streamed answers, a body in transit). Two heap profiles of the hour's run found 126
	// and 135 MB live (120 and 129 MiB) with the cache full; the constant leaves half as
	// much again for the peaks (a flood while Redis is down, when every miss holds its
	// answer in memory and the connections double). The garbage a GC cycle lets pile up is
	// not in it: the live heap carries none (docs/benchmarks.md, "Soak").
	heapConstant = 192 << 20
	// heapFloor is the live heap's allowed rise over the second half of the run, at least:
	// the cache budget changes with the option set (8 or 12 MiB, twice over while a reload
	// builds a new store), and a sample in a flood catches the connections' buffers. A leak
	// of a kilobyte a request adds 260 MiB over the hour's second half; one of a store per
	// reload, 180 of them.
	heapFloor = 32 << 20
	// budgetCopies is how many cache budgets the heap may hold at once: a reload that
	// changes Weir's options builds a new store beside the old one, which lives on until
	// the requests that hold it finish and the GC takes it.
	budgetCopies = 2
)

// theilSen is the median of the slopes between every pair of points with distinct xs.
func theilSen(xs, ys []float64) float64 {
	var slopes []float64
	for i := range xs {
		for j := i + 1; j < len(xs); j++ {
			if xs[j] != xs[i] {
				slopes = append(slopes, (ys[j]-ys[i])/(xs[j]-xs[i]))
			}
		}
	}
	if len(slopes) == 0 {
		return 0
	}
	sort.Float64s(slopes)
	n := len(slopes)
	if n%2 == 1 {
		return slopes[n/2]
	}
	return (slopes[n/2-1] + slopes[n/2]) / 2
}

// growth is a series' fitted rise over the second half of the run, with its allowance.
type growth struct {
	name              string
	samples           int
	perMinute, rise   float64
	median, allowance float64
}

func (g growth) exceeded() bool { return g.samples >= minFitSamples && g.rise > g.allowance }

func (g growth) String() string {
	if g.samples < minFitSamples {
		return fmt.Sprintf("%s: %d samples in the second half, too few to fit (%d needed)", g.name, g.samples, minFitSamples)
	}
	return fmt.Sprintf("%s: median %.0f, fitted slope %+.2f a minute, rise over the second half %+.0f, allowed %.0f",
		g.name, g.median, g.perMinute, g.rise, g.allowance)
}

// fitGrowth fits the second half of samples' values of value (-1 for unread ones are left
// out).
func fitGrowth(name string, samples []sample, half float64, value func(sample) int64, floor float64) growth {
	var xs, ys []float64
	for _, s := range samples {
		if v := value(s); s.at.Minutes() >= half && v >= 0 {
			xs = append(xs, s.at.Minutes())
			ys = append(ys, float64(v))
		}
	}
	g := growth{name: name, samples: len(xs)}
	if len(xs) < 2 {
		return g
	}
	g.perMinute = theilSen(xs, ys)
	g.rise = g.perMinute * (xs[len(xs)-1] - xs[0])
	sorted := append([]float64(nil), ys...)
	sort.Float64s(sorted)
	g.median = sorted[len(sorted)/2]
	g.allowance = floor
	if share := growthShare * g.median; share > floor {
		g.allowance = share
	}
	return g
}

// panicLines are the lines of Traefik's log and output that tell of a panic, recovered or
// not: Weir's "recovered a panic while ...", Traefik's recovery middleware, a crash.
func panicLines(paths ...string) ([]string, error) {
	var out []string
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			if strings.Contains(strings.ToLower(sc.Text()), "panic") {
				out = append(out, sc.Text())
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// verdict is the run's outcome: each failure's reason, none for a pass.
type verdict struct {
	failures []string
	notes    []string
}

func (v *verdict) fail(format string, args ...interface{}) {
	v.failures = append(v.failures, fmt.Sprintf(format, args...))
}

func (v *verdict) note(format string, args ...interface{}) {
	v.notes = append(v.notes, fmt.Sprintf(format, args...))
}

// judge applies the bounds to a finished run.
func judge(samples []sample, duration float64, budget int64, last snapshot, examples, panics []string) verdict {
	var v verdict
	half := duration / 2
	for _, g := range []growth{
		fitGrowth("goroutines", samples, half, func(s sample) int64 { return s.goroutines }, goroutineFloor),
		fitGrowth("open file descriptors", samples, half, func(s sample) int64 { return s.fds }, fdFloor),
	} {
		v.note("%s", g)
		if g.exceeded() {
			v.fail("%s grow without bound: %s", g.name, g)
		}
	}
	live := fitGrowth("live heap (MiB)", samples, half, func(s sample) int64 { return s.heapLive >> 20 }, mib(heapFloor))
	v.note("%s", live)
	if live.exceeded() {
		v.fail("Traefik's live heap grows without bound: %s", live)
	}
	limit := budgetCopies*budget + heapConstant
	peak, peakAt := peakOf(samples, func(s sample) int64 { return s.heapLive })
	v.note("live heap: peak %.1f MiB at minute %.1f, limit %.1f MiB (%d x cache.maxSize %.0f MiB + %.0f MiB)",
		mib(peak), peakAt, mib(limit), budgetCopies, mib(budget), mib(heapConstant))
	if peak < 0 {
		v.fail("Traefik's live heap could not be read")
	} else if peak > limit {
		v.fail("Traefik's live heap reached %.1f MiB at minute %.1f, over the limit of %.1f MiB", mib(peak), peakAt, mib(limit))
	}
	inuse, inuseAt := peakOf(samples, func(s sample) int64 { return s.heapInuse })
	v.note("heap in use (live and garbage not yet collected, reported, not judged): peak %.1f MiB at minute %.1f", mib(inuse), inuseAt)
	v.note("medians by %s: live heap %s MiB; heap in use %s MiB", partLabel(duration),
		medians(samples, duration, func(s sample) int64 { return s.heapLive }),
		medians(samples, duration, func(s sample) int64 { return s.heapInuse }))
	open, read := 0, 0
	for _, s := range samples {
		if s.storeOpen >= 0 {
			read++
			if s.storeOpen > 0 {
				open++
			}
		}
	}
	if read > 0 {
		share := float64(open) / float64(read)
		v.note("store breaker open in %d of %d samples (%.0f%%, at most %.0f%%)", open, read, 100*share, 100*maxStoreOpenShare)
		if share > maxStoreOpenShare {
			v.fail("Weir's store breaker was open in %d of %d samples: the store hardly answered", open, read)
		}
	}
	if len(panics) > 0 {
		v.fail("Traefik's log tells of %d panics, the first: %s", len(panics), panics[0])
	}
	if n := last.undesigned(); n > 0 {
		v.fail("%d answers no designed refusal explains:\n    %s", n, strings.Join(examples, "\n    "))
	}
	return v
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// peakOf is the largest of value over samples and its minute, -1 when none was read.
func peakOf(samples []sample, value func(sample) int64) (int64, float64) {
	var peak int64 = -1
	var at float64
	for _, s := range samples {
		if v := value(s); v > peak {
			peak, at = v, s.at.Minutes()
		}
	}
	return peak, at
}

// parts is how many stretches of the run the medians are given for: ten minutes each in
// the hour.
const parts = 6

// partLabel names a part's length: "10 minutes" in the hour, "20 s" in two minutes.
func partLabel(duration float64) string {
	if d := duration / parts; d < 1 {
		return fmt.Sprintf("%.0f s", d*60)
	}
	return fmt.Sprintf("%.3g minutes", duration/parts)
}

// medians is value's median in each of the run's parts, in MiB, "-" for a part with none.
func medians(samples []sample, duration float64, value func(sample) int64) string {
	var out []string
	for p := 0; p < parts; p++ {
		from, to := duration*float64(p)/parts, duration*float64(p+1)/parts
		var vs []int64
		for _, s := range samples {
			m := s.at.Minutes()
			if v := value(s); v >= 0 && m > from && (m <= to || p == parts-1) {
				vs = append(vs, v)
			}
		}
		if len(vs) == 0 {
			out = append(out, "-")
			continue
		}
		sort.Slice(vs, func(i, j int) bool { return vs[i] < vs[j] })
		out = append(out, fmt.Sprintf("%.0f", mib(vs[len(vs)/2])))
	}
	return strings.Join(out, ", ")
}
