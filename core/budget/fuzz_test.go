package budget

import "testing"

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"200/10s", "5/1s", "1/1m", "0/10s", "x", "9999999999/1s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRate(s)
		if err != nil {
			return
		}
		if r.N < 1 || r.Interval() <= 0 {
			t.Fatalf("ParseRate(%q) = %+v: accepted a rate with no interval", s, r)
		}
		back, err := ParseRate(r.String())
		if err != nil || back != r {
			t.Fatalf("ParseRate(%q).String() = %q reads back as %+v, %v", s, r.String(), back, err)
		}
	})
}
