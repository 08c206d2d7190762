package limit

import "sort"

// Occupancy is what one partition holds and waits for, in both pools.
type Occupancy struct {
	Partition string
	InFlight  int
	Queued    int
}

// Busiest returns up to n partitions holding or waiting for slots, the busiest (held plus
// queued) first, for the operator's view. It copies the pools' counts under their locks and
// sorts outside them.
func (l *Limiter) Busiest(n int) []Occupancy {
	by := make(map[string]*Occupancy)
	for _, p := range []*pool{l.fetch, l.upload} {
		p.mu.Lock()
		for part, k := range p.byPartition {
			occupant(by, part).InFlight += k
		}
		for part, k := range p.queuedBy {
			occupant(by, part).Queued += k
		}
		p.mu.Unlock()
	}
	out := make([]Occupancy, 0, len(by))
	for _, o := range by {
		out = append(out, *o)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].InFlight+out[i].Queued, out[j].InFlight+out[j].Queued
		if a != b {
			return a > b
		}
		return out[i].Partition < out[j].Partition
	})
	if n >= 0 && len(out) > n {
		out = out[:n]
	}
	return out
}

func occupant(by map[string]*Occupancy, part string) *Occupancy {
	o := by[part]
	if o == nil {
		o = &Occupancy{Partition: part}
		by[part] = o
	}
	return o
}
