package querytest

import (
	"sort"
	"strings"
	"testing"
)

// Shuffle keeps a query's parameters, and the order of those of one name, whatever the seed.
func TestShuffle(t *testing.T) {
	queries := []string{"", "a=1", "a=1&b=2&c=3&d=4", "a=3&b=1&a=2&a=1&b=0", "a=1&&b&="}
	for _, q := range queries {
		for seed := int64(0); seed < 20; seed++ {
			got := Shuffle(q, seed)
			if sorted(got) != sorted(q) {
				t.Fatalf("Shuffle(%q, %d) = %q, want the same parameters", q, seed, got)
			}
			if byName(got) != byName(q) {
				t.Fatalf("Shuffle(%q, %d) = %q, want each name's parameters in their order", q, seed, got)
			}
			if again := Shuffle(q, seed); again != got {
				t.Fatalf("Shuffle(%q, %d) = %q, then %q: want the same for one seed", q, seed, got, again)
			}
		}
	}
}

func TestDropList(t *testing.T) {
	if got := DropList(""); got != nil {
		t.Errorf("DropList(\"\") = %q, want nil", got)
	}
	if got := DropList("a,b"); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("DropList(\"a,b\") = %q, want [a b]", got)
	}
}

// sorted is q's parameters in sorted order.
func sorted(q string) string {
	parts := strings.Split(q, "&")
	sort.Strings(parts)
	return strings.Join(parts, "&")
}

// byName is q's parameters grouped by name in sorted name order, each name's in their order.
func byName(q string) string {
	groups := map[string][]string{}
	var names []string
	for _, p := range strings.Split(q, "&") {
		n, _, _ := strings.Cut(p, "=")
		if _, ok := groups[n]; !ok {
			names = append(names, n)
		}
		groups[n] = append(groups[n], p)
	}
	sort.Strings(names)
	var out []string
	for _, n := range names {
		out = append(out, strings.Join(groups[n], "&"))
	}
	return strings.Join(out, "|")
}
