// Package querytest holds what the fuzz tests of Weir's cache keys share: their seeds (a
// query, the parameters dropped from keys, a seed for reordering the query) and Shuffle,
// which reorders a query's parameters, since a key must not depend on their order. Standard
// library only: the tests run interpreted too.
package querytest

import (
	"math/rand"
	"strings"
	"testing"
)

// Seed is one input of a key's fuzz test.
type Seed struct {
	// Query is a query string or a request target, as the test reads it.
	Query string
	// Drop lists the parameters left out of keys, separated by commas.
	Drop string
	// Order seeds Shuffle.
	Order int64
}

// Check is a fuzz test's property check.
type Check func(t *testing.T, query, drop string, order int64)

// Fuzz fuzzes check from seeds.
func Fuzz(f *testing.F, seeds []Seed, check Check) {
	for _, s := range seeds {
		f.Add(s.Query, s.Drop, s.Order)
	}
	f.Fuzz(func(t *testing.T, query, drop string, order int64) { check(t, query, drop, order) })
}

// Run runs check on each of seeds: yaegi test loads Fuzz functions without running them.
func Run(t *testing.T, seeds []Seed, check Check) {
	for _, s := range seeds {
		check(t, s.Query, s.Drop, s.Order)
	}
}

// DropList is drop split at its commas; nil for "".
func DropList(drop string) []string {
	if drop == "" {
		return nil
	}
	return strings.Split(drop, ",")
}

// Shuffle reorders the parameters of the query q (without its "?") by seed, keeping the
// order of the parameters of one name: a=2&a=1 is not a=1&a=2 to most origins.
func Shuffle(q string, seed int64) string {
	parts := strings.Split(q, "&")
	if len(parts) < 2 {
		return q
	}
	perm := rand.New(rand.NewSource(seed)).Perm(len(parts))
	byName := make(map[string][]string)
	for _, p := range parts {
		n, _, _ := strings.Cut(p, "=")
		byName[n] = append(byName[n], p)
	}
	out := make([]string, len(parts))
	for i, j := range perm {
		n, _, _ := strings.Cut(parts[j], "=")
		out[i] = byName[n][0]
		byName[n] = byName[n][1:]
	}
	return strings.Join(out, "&")
}
