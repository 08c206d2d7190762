package main

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// The hour's schedule. A shorter run scales every period and length by duration/hour, each
// kept at or above its floor so that a two-minute run still meets every fault at least once
// and each fault lasts long enough for Weir to notice it (a store breaker to open, a
// negative entry to be made, a breaker to trip).
const (
	// nominalRun is the run the nominal periods below are written for.
	nominalRun = time.Hour

	// reloadEvery is the pause between two configuration reloads, never scaled: reloads are
	// Traefik's most frequent event in production. optionsEvery-th reload changes Weir's
	// own options (the others change only the routers' generation).
	reloadEvery  = 10 * time.Second
	optionsEvery = 5

	// Redis is restarted (SIGKILL, started again empty) every redisEvery; the restart
	// nearest the middle of the run is a stop of redisStopFor instead.
	redisEvery        = 5 * time.Minute
	redisEveryFloor   = 20 * time.Second
	redisStopFor      = time.Minute
	redisStopForFloor = 15 * time.Second

	// The origin fails for originFor every originEvery, the first a quarter period early
	// (7:30 in the hour, between two Redis restarts) so that the two faults are mostly met
	// apart: the first half of the failure answers 503, the second drops every connection
	// without an answer.
	originEvery        = 10 * time.Minute
	originEveryFloor   = 40 * time.Second
	originFor          = 30 * time.Second
	originForFloor     = 10 * time.Second
	floodEvery         = 3 * time.Minute
	floodEveryFloor    = 30 * time.Second
	floodFor           = 20 * time.Second
	floodForFloor      = 5 * time.Second
	quietTail          = 10 * time.Second // no fault starts or lasts into the run's last seconds
	restartAfterStop   = 5 * time.Second  // the least time between Redis's start after its stop and a restart
	minimumRunDuration = time.Minute
)

// window is a span of the run, from its start, in which a fault or a flood is on.
type window struct{ from, to time.Duration }

// overlaps reports whether the span from..to meets w, w lengthened by after.
func (w window) overlaps(from, to, after time.Duration) bool {
	return from <= w.to+after && to >= w.from
}

// schedule is what the run meets, in offsets from its start.
type schedule struct {
	duration time.Duration
	// redisRestarts are the instants Redis is killed and started again.
	redisRestarts []time.Duration
	// redisStop is the span Redis is down.
	redisStop window
	// originFaults are the spans the origin fails: 503 in the first half, dropped
	// connections in the second (see dropFrom).
	originFaults []window
	// floods are the spans of the flood burst.
	floods []window
}

// scaled is nominal scaled by scale, at least floor and at most nominal.
func scaled(nominal time.Duration, scale float64, floor time.Duration) time.Duration {
	d := time.Duration(float64(nominal) * scale).Round(time.Second)
	if d < floor {
		d = floor
	}
	if d > nominal {
		d = nominal
	}
	return d
}

// newSchedule lays out the faults of a run of d.
func newSchedule(d time.Duration) schedule {
	scale := float64(d) / float64(nominalRun)
	if scale > 1 {
		scale = 1
	}
	s := schedule{duration: d}
	end := d - quietTail

	rEvery := scaled(redisEvery, scale, redisEveryFloor)
	stopFor := scaled(redisStopFor, scale, redisStopForFloor)
	var slots []time.Duration
	for t := rEvery; t <= end; t += rEvery {
		slots = append(slots, t)
	}
	// The stop takes the middle slot (the later of two), or the latest before it that leaves
	// the stop room to end before the quiet tail.
	stopAt := -1
	for i := len(slots) / 2; i >= 0 && i < len(slots); i-- {
		if slots[i]+stopFor <= end {
			stopAt = i
			break
		}
	}
	if stopAt >= 0 {
		s.redisStop = window{from: slots[stopAt], to: slots[stopAt] + stopFor}
	}
	for i, t := range slots {
		// A restart right after the stop would meet a Redis just back.
		if i == stopAt || t >= s.redisStop.from && t < s.redisStop.to+restartAfterStop {
			continue
		}
		s.redisRestarts = append(s.redisRestarts, t)
	}

	oEvery := scaled(originEvery, scale, originEveryFloor)
	oFor := scaled(originFor, scale, originForFloor)
	for t := oEvery - oEvery/4; t+oFor <= end; t += oEvery {
		s.originFaults = append(s.originFaults, window{from: t, to: t + oFor})
	}

	fEvery := scaled(floodEvery, scale, floodEveryFloor)
	fFor := scaled(floodFor, scale, floodForFloor)
	for t := fEvery; t+fFor <= end; t += fEvery {
		s.floods = append(s.floods, window{from: t, to: t + fFor})
	}
	return s
}

// dropFrom is when, in a failure of the origin, it stops answering 503 and drops connections.
func dropFrom(w window) time.Duration { return w.from + (w.to-w.from)/2 }

// String states the schedule, as the run's output and the report print it.
func (s schedule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "schedule for %v:\n", s.duration)
	fmt.Fprintf(&b, "  configuration reload every %v, every %dth changing Weir's options (%d reloads)\n",
		reloadEvery, optionsEvery, int(s.duration/reloadEvery))
	fmt.Fprintf(&b, "  Redis killed and restarted at %s\n", offsets(s.redisRestarts))
	fmt.Fprintf(&b, "  Redis stopped %s\n", s.redisStop)
	var fails []string
	for _, w := range s.originFaults {
		fails = append(fails, fmt.Sprintf("%s (503 until %s, then dropped connections)", w, clock(dropFrom(w))))
	}
	fmt.Fprintf(&b, "  origin failing %s\n", strings.Join(fails, ", "))
	var floods []string
	for _, w := range s.floods {
		floods = append(floods, w.String())
	}
	fmt.Fprintf(&b, "  flood bursts %s\n", strings.Join(floods, ", "))
	return b.String()
}

func (w window) String() string { return clock(w.from) + "-" + clock(w.to) }

// clock writes an offset as m:ss.
func clock(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

func offsets(ds []time.Duration) string {
	if len(ds) == 0 {
		return "never"
	}
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = clock(d)
	}
	return strings.Join(out, ", ")
}

// step is one change the fault driver makes at an offset.
type step struct {
	at   time.Duration
	what string // described in the output and the CSV's notes
	do   func() error
}

// sortSteps orders steps by time, keeping the order of simultaneous ones.
func sortSteps(steps []step) {
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].at < steps[j].at })
}
