package missrate

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// Bypass: a flagged partition's first misses go past the cache (missRate.bypass).
//
// A cache-busting flood asks for keys that nobody asks for again. Stored, its answers push
// the cache's useful entries out (a purge by the flood), and each costs the engine a
// coalesced, stored miss where a pass-through would do. A flagged partition's keys are
// therefore admitted the second time they are asked for, as nginx's proxy_cache_min_uses 2
// does and TinyLFU's doorkeeper (Einziger, Friedman and Manes, 2017): the first miss of a key
// goes to the origin without being stored or coalesced, the second takes the cache's path.
// A key many clients want at once is so fetched twice, not once per client.

// The doorkeeper's size: doorBits bits, set by two hashes per key, and started over once
// doorKeys keys are in (then about 1.4% of the keys never asked for pass as asked before:
// (1-e^(-2·4096/65536))², a cost, not a wrong answer). 8 KiB per Detector, whatever the
// traffic (FR-MR-1).
const (
	doorBits  = 1 << 16
	doorWords = doorBits / 64
	doorKeys  = 4096
)

// doorkeeper remembers, approximately, which keys a flagged partition has been asked for: a
// Bloom filter of two hashes.
type doorkeeper struct {
	seed maphash.Seed
	// mu guards bits and keys.
	mu   sync.Mutex
	bits []uint64
	keys int
}

func newDoorkeeper() *doorkeeper {
	return &doorkeeper{seed: maphash.MakeSeed(), bits: make([]uint64, doorWords)}
}

// Flags is, for a caller that loads it with atomic.LoadInt32 itself before calling Bypass,
// a count that reads zero while Bypass answers false: d's count of flagged slots, or, with
// bypass off (Settings.NoBypass or Throttle), a count that stays zero. On every miss of the
// engine that saves an interpreted call (the package comment's Cost).
func Flags(d *Detector) *int32 {
	if d.noBypass {
		return &neverFlagged
	}
	return &d.flagged
}

// neverFlagged is Flags' count for a Detector that never bypasses; nothing writes it.
var neverFlagged int32

// Bypass tells whether a miss of key on partition, with nothing stored under key, goes to the
// origin past the cache: the partition is flagged (an anomaly, FR-MR-2), Settings.NoBypass and
// Settings.Throttle are unset, and key was not asked for since the doorkeeper last started over. A key it answers
// true for is remembered, so that its next miss takes the cache's path. A miss it answers
// true for must still be counted with Miss: the flood it belongs to stays flagged only while
// it is counted.
func Bypass(d *Detector, partition, key string, now time.Time) bool {
	if d.noBypass || atomic.LoadInt32(&d.flagged) == 0 {
		return false
	}
	s := lockFlagged(d, partition, now.UnixNano())
	if s == nil {
		return false
	}
	s.mu.Unlock()
	return firstAsked(d.door, key)
}

// firstAsked marks key asked for and tells whether it was not before (the filter may say it
// was for a key it never saw, never the other way).
func firstAsked(k *doorkeeper, key string) bool {
	h := maphash.String(k.seed, key)
	i := h % doorBits
	j := (h >> 32) % doorBits
	k.mu.Lock()
	bi := uint64(1) << (i % 64)
	bj := uint64(1) << (j % 64)
	seen := k.bits[i/64]&bi != 0 && k.bits[j/64]&bj != 0
	if !seen {
		if k.keys >= doorKeys {
			for w := range k.bits {
				k.bits[w] = 0
			}
			k.keys = 0
		}
		k.bits[i/64] |= bi
		k.bits[j/64] |= bj
		k.keys++
	}
	k.mu.Unlock()
	return !seen
}
