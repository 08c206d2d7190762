package missrate

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// slotMask picks a slot from a partition's hash.
const slotMask = Slots - 1

// Anomaly is one partition turning anomalous: reported once, when the partition goes from
// normal to anomalous (FR-MR-2), not again while the flood lasts.
type Anomaly struct {
	// Partition is the partition the slot's misses came from most: the flagged one.
	Partition string
	// Requests and Misses are the slot's lookups and misses from Since to At. A slot that other
	// partitions share adds their counts too.
	Requests int
	Misses   int
	// Window is the configured window length.
	Window time.Duration
	// Since is when the counting window began; At is when its counts crossed the thresholds.
	Since time.Time
	At    time.Time
	// Varying names up to three query parameters that took the most distinct values among
	// the sampled misses, the most varying first. Empty when no sampled parameter varied.
	Varying []string
	// Throttled tells whether AllowFetch now holds the partition to one origin fetch a window.
	Throttled bool
	// Bypassed tells whether Bypass now sends the partition's first miss of each key past
	// the cache.
	Bypassed bool
}

// Detector counts lookups and misses in Slots counters and flags partitions whose misses
// flood (FR-MR-1, FR-MR-2). It is safe for concurrent use.
type Detector struct {
	// seed keys the partition hash; it differs per Detector, so which paths share a slot
	// differs from one Weir process to the next and cannot be aimed at.
	seed maphash.Seed
	// slots has exactly Slots entries, set in New and never grown.
	slots []*slot
	// flagged counts the flagged slots, so that AllowFetch answers with one atomic load while
	// none is. Changed under the slot's mutex along with the slot's flag.
	flagged int32

	window    int64 // nanoseconds
	windowDur time.Duration
	minMisses int64
	ratio     int64 // parts of ratioScale
	throttle  bool
	// noBypass: Settings.NoBypass, or Throttle, which holds a flood's fetches tighter.
	noBypass   bool
	door       *doorkeeper
	judgeFrom  int64
	judgeEvery int64
}

// slot is one of the Slots counters.
type slot struct {
	// hits counts the window's hits. Hits add to it atomically without the lock, so a hit
	// costs one hash and one atomic add; it stays first in the struct for 64-bit alignment.
	// Hits do not end windows: one after a window's end counts in that window until the next
	// miss rolls it, which can only lower the window's miss ratio.
	hits int64

	// mu guards the fields below.
	mu sync.Mutex
	// start and end bound the current window (Unix nanoseconds). Windows are fixed and per
	// slot: a window starts at the first miss after the previous one ended, or when an
	// anomaly is raised.
	start  int64
	end    int64
	misses int64
	// nextJudge is the miss count at which the window's misses are next judged: from half of
	// MinMisses on, every judgeEvery misses (see judgeFrom).
	nextJudge int64
	// cand, candHash and votes run a majority vote (Boyer and Moore) over the window's judged
	// misses: whenever one partition has more than half of them, cand names it. That
	// attributes a flooded slot to its flooding partition without a table of partitions.
	cand     string
	candHash uint64
	votes    int64
	// anomalous is set while the slot is flagged; flagged names the anomalous partition. A
	// throttle decision applies only to a request whose partition is that one (hash and
	// string equal).
	anomalous bool
	flagged   string
	flagHash  uint64
	// fetched is set once the flagged partition's one origin fetch of the window is spent.
	fetched bool
	params  paramTable
}

// New builds a Detector. It rejects invalid settings with an error naming the field.
func New(s Settings) (*Detector, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	s = s.withDefaults()
	d := &Detector{
		seed:       maphash.MakeSeed(),
		slots:      make([]*slot, Slots),
		window:     int64(s.Window),
		windowDur:  s.Window,
		minMisses:  int64(s.MinMisses),
		ratio:      scaledRatio(s.Ratio),
		throttle:   s.Throttle,
		noBypass:   s.NoBypass || s.Throttle,
		door:       newDoorkeeper(),
		judgeFrom:  judgeFrom(s.MinMisses),
		judgeEvery: judgeEvery(s.MinMisses),
	}
	for i := range d.slots {
		d.slots[i] = &slot{nextJudge: d.judgeFrom, params: newParamTable()}
	}
	return d, nil
}

// Hit counts a lookup of partition (scheme, host and path; no query) that the cache answered.
//
// Hit, Miss and AllowFetch are functions rather than methods, and Hit and Miss are two functions
// rather than one with a flag, because they run on every lookup and Yaegi, which runs Weir in
// Traefik, charges for each call by its shape: in Yaegi v0.16.1 a method call costs
// several times a function call, and every argument and every value in the body adds to it,
// whichever branch runs.
func Hit(d *Detector, partition string) {
	s := d.slots[maphash.String(d.seed, partition)&slotMask]
	atomic.AddInt64(&s.hits, 1)
}

// Miss counts a lookup of partition that the cache could not answer, and returns an Anomaly
// when this miss turns the partition anomalous (once per anomaly), nil otherwise. rawQuery is
// the request's query as written; it is read only for a few misses of a slot near its
// threshold.
func Miss(d *Detector, partition string, rawQuery string, now time.Time) *Anomaly {
	h := maphash.String(d.seed, partition)
	s := d.slots[h&slotMask]
	n := now.UnixNano()
	s.mu.Lock()
	if n >= s.end || n < s.start {
		roll(d, s, n)
	}
	s.misses++
	if s.misses < s.nextJudge {
		s.mu.Unlock()
		return nil
	}
	// The steps that need not run on every miss live in judge, so that Miss's body, which
	// Yaegi sets up on every call, stays small.
	return judge(d, s, partition, h, rawQuery, n)
}

// judge votes with the miss's partition, samples its query if it comes from the majority
// partition, and raises an anomaly when the slot crosses the thresholds. Called with s.mu held;
// unlocks it.
func judge(d *Detector, s *slot, partition string, h uint64, rawQuery string, n int64) *Anomaly {
	s.nextJudge = s.misses + d.judgeEvery
	if s.misses < d.minMisses && s.nextJudge > d.minMisses {
		s.nextJudge = d.minMisses
	}
	if s.votes == 0 {
		s.cand = partition
		s.candHash = h
		s.votes = 1
	} else if s.candHash == h && s.cand == partition {
		s.votes++
	} else {
		s.votes--
	}
	if s.anomalous {
		// Reported already: roll tells, from this window's counts and votes, whether the
		// flood lasts.
		s.mu.Unlock()
		return nil
	}
	if s.candHash == h && s.cand == partition && s.params.samples < maxSamples {
		sample(&s.params, d.seed, rawQuery)
	}
	requests := s.misses + atomic.LoadInt64(&s.hits)
	if s.misses < d.minMisses || s.misses*ratioScale < d.ratio*requests {
		s.mu.Unlock()
		return nil
	}
	a := raise(d, s, partition, h, requests, n)
	s.mu.Unlock()
	return a
}

// AllowFetch tells whether a miss on partition may go to the origin. With Throttle set, a
// flagged partition gets one origin fetch per window; the others are refused with the time
// until the window ends, for Retry-After. Any other partition, including a quiet one that
// shares the flagged partition's slot, is always allowed.
//
// Call it after Miss, for a miss about to be fetched.
func AllowFetch(d *Detector, partition string, now time.Time) (ok bool, retryAfter time.Duration) {
	if !d.throttle || atomic.LoadInt32(&d.flagged) == 0 {
		return true, 0
	}
	return allowFlagged(d, partition, now)
}

// allowFlagged is AllowFetch while some slot is flagged, kept apart so that AllowFetch stays
// small (see Hit). It gives the flagged partition its one fetch of the window, or the time
// until the window ends.
func allowFlagged(d *Detector, partition string, now time.Time) (bool, time.Duration) {
	n := now.UnixNano()
	s := lockFlagged(d, partition, n)
	if s == nil {
		return true, 0
	}
	if !s.fetched {
		s.fetched = true
		s.mu.Unlock()
		return true, 0
	}
	wait := time.Duration(s.end - n)
	s.mu.Unlock()
	return false, wait
}

// lockFlagged returns partition's slot, locked, when partition is its slot's flagged
// partition at n (Unix nanoseconds); nil, unlocked, otherwise. A window that has ended is
// rolled first, so that a flood that stopped is flagged no more. AllowFetch and Bypass ask
// it, and only while some slot is flagged.
func lockFlagged(d *Detector, partition string, n int64) *slot {
	h := maphash.String(d.seed, partition)
	s := d.slots[h&slotMask]
	s.mu.Lock()
	if !s.anomalous || s.flagHash != h || s.flagged != partition {
		s.mu.Unlock()
		return nil
	}
	if n >= s.end || n < s.start {
		roll(d, s, n)
		if !s.anomalous {
			s.mu.Unlock()
			return nil
		}
	}
	return s
}

// roll ends the slot's window and starts the next one at n. The slot stays flagged only if the
// window that ended qualified again and its misses came mostly from the flagged partition:
// the partition stays throttled while the flood lasts. Called with s.mu held.
func roll(d *Detector, s *slot, n int64) {
	if s.anomalous {
		// A gap of a whole window without misses means the flood stopped.
		consecutive := n >= s.start && n-s.end < d.window
		requests := s.misses + atomic.LoadInt64(&s.hits)
		again := s.misses >= d.minMisses && s.misses*ratioScale >= d.ratio*requests
		mostly := s.votes > 0 && s.candHash == s.flagHash && s.cand == s.flagged
		if !(consecutive && again && mostly) {
			atomic.AddInt32(&d.flagged, -1)
			s.anomalous = false
			s.flagged = ""
			s.flagHash = 0
		}
	}
	restart(d, s, n)
}

// restart empties the slot's counts for a window starting at n. Called with s.mu held.
func restart(d *Detector, s *slot, n int64) {
	s.start = n
	s.end = n + d.window
	s.misses = 0
	s.nextJudge = d.judgeFrom
	atomic.StoreInt64(&s.hits, 0)
	s.cand = ""
	s.candHash = 0
	s.votes = 0
	s.fetched = false
	clearParams(&s.params)
}

// raise flags the slot's majority partition and starts the throttle window at now. Called with
// s.mu held; the caller hands the Anomaly on after unlocking.
func raise(d *Detector, s *slot, partition string, h uint64, requests int64, n int64) *Anomaly {
	if s.votes > 0 {
		partition = s.cand
		h = s.candHash
	}
	atomic.AddInt32(&d.flagged, 1)
	s.anomalous = true
	s.flagged = partition
	s.flagHash = h
	a := &Anomaly{
		Partition: partition,
		Requests:  int(requests),
		Misses:    int(s.misses),
		Window:    d.windowDur,
		Since:     time.Unix(0, s.start),
		At:        time.Unix(0, n),
		Varying:   varying(&s.params, topVarying),
		Throttled: d.throttle,
		Bypassed:  !d.noBypass,
	}
	restart(d, s, n)
	return a
}
