package events

import (
	"sync"
	"time"
)

// RecentSize is how many events a Recent keeps: the admin's feed.
const RecentSize = 500

// Recent keeps the last RecentSize events a Log emitted, in memory, for the admin's feed:
// a ring allocated by the first event and never grown. Safe for concurrent use. It outlives
// the Logs that write to it (a reload that changes log.format builds a new Log).
type Recent struct {
	// mu guards the ring.
	mu    sync.Mutex
	ring  []Record
	head  int
	count int
	seq   int64
}

// Record is one event as Recent keeps it.
type Record struct {
	// Seq numbers the events of a Recent from 1, in the order they were emitted.
	Seq    int64     `json:"seq"`
	Time   time.Time `json:"time"`
	Level  string    `json:"level"`
	Name   string    `json:"event"`
	Fields []Pair    `json:"fields"`
}

// Pair is one field of a Record, its value formatted as the line writes it.
type Pair struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Value is the value of the field key, or "".
func (r Record) Value(key string) string {
	for _, p := range r.Fields {
		if p.Key == key {
			return p.Value
		}
	}
	return ""
}

func (k *Recent) add(t time.Time, level, name string, fields []Field) {
	pairs := make([]Pair, len(fields))
	for i, f := range fields {
		pairs[i] = Pair{Key: f.key, Value: f.val}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ring == nil {
		k.ring = make([]Record, RecentSize)
	}
	k.seq++
	k.ring[k.head] = Record{Seq: k.seq, Time: t, Level: level, Name: name, Fields: pairs}
	k.head = (k.head + 1) % RecentSize
	if k.count < RecentSize {
		k.count++
	}
}

// Newest returns the events keep accepts, newest first, at most n (n <= 0: all kept). A
// nil Recent has none.
func (k *Recent) Newest(n int, keep func(Record) bool) []Record {
	out := []Record{}
	if k == nil {
		return out
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for i := 1; i <= k.count; i++ {
		r := k.ring[(k.head-i+RecentSize)%RecentSize]
		if keep != nil && !keep(r) {
			continue
		}
		out = append(out, r)
		if n > 0 && len(out) == n {
			break
		}
	}
	return out
}
