package metrics

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestFold(t *testing.T) {
	two := []string{"key", "state"}
	tests := []struct {
		desc    string
		labels  []string
		samples []Sample
		limit   int
		want    []collected
		wantBad int
	}{
		{
			desc:    "under the limit, sorted",
			labels:  two,
			samples: []Sample{{Values: []string{"b", "open"}, Value: 1}, {Values: []string{"a", "closed"}, Value: 2}},
			limit:   5,
			want:    []collected{{`key="a",state="closed"`, 2}, {`key="b",state="open"`, 1}},
		},
		{
			desc:   "past the limit: the first values seen are kept, the rest summed by the other labels",
			labels: two,
			samples: []Sample{
				{Values: []string{"z", "open"}, Value: 1},
				{Values: []string{"y", "closed"}, Value: 1},
				{Values: []string{"x", "open"}, Value: 1},
				{Values: []string{"w", "open"}, Value: 1},
				{Values: []string{"z", "closed"}, Value: 5}, // z is kept: seen first
				{Values: []string{"v", "closed"}, Value: 1},
			},
			limit: 2,
			want: []collected{
				{`key="other",state="closed"`, 1},
				{`key="other",state="open"`, 2},
				{`key="y",state="closed"`, 1},
				{`key="z",state="closed"`, 5},
				{`key="z",state="open"`, 1},
			},
		},
		{
			desc:    "the same labels twice are summed",
			labels:  two,
			samples: []Sample{{Values: []string{"a", "open"}, Value: 1}, {Values: []string{"a", "open"}, Value: 2.5}},
			limit:   1,
			want:    []collected{{`key="a",state="open"`, 3.5}},
		},
		{
			desc:    "a real value other meets the folded ones",
			labels:  []string{"key"},
			samples: []Sample{{Values: []string{"a"}, Value: 1}, {Values: []string{"other"}, Value: 1}, {Values: []string{"b"}, Value: 1}},
			limit:   2,
			want:    []collected{{`key="a"`, 1}, {`key="other"`, 2}},
		},
		{
			desc:    "samples without one value per label are left out",
			labels:  two,
			samples: []Sample{{Values: []string{"a"}, Value: 1}, {Value: 1}, {Values: []string{"a", "b", "c"}}, {Values: []string{"a", "open"}, Value: 1}},
			limit:   1,
			want:    []collected{{`key="a",state="open"`, 1}},
			wantBad: 3,
		},
		{
			desc:    "no labels: one series",
			samples: []Sample{{Value: 1}, {Value: 2}},
			limit:   1,
			want:    []collected{{"", 3}},
		},
		{
			desc:    "awkward values escaped",
			labels:  []string{"key"},
			samples: []Sample{{Values: []string{"a\"b\\c\nd\xff"}, Value: 1}},
			limit:   1,
			want:    []collected{{`key="a\"b\\c\nd` + "\uFFFD" + `"`, 1}},
		},
		{desc: "nothing", labels: two, limit: 1},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			got, bad := fold(tt.labels, tt.samples, tt.limit)
			if bad != tt.wantBad {
				t.Errorf("left out %d samples, want %d", bad, tt.wantBad)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("fold = %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("series %d = %v, want %v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestCollectDefaultLimit(t *testing.T) {
	var r Registry
	samples := make([]Sample, DefaultLimit+10)
	for i := range samples {
		samples[i] = Sample{Values: []string{strings.Repeat("k", i+1)}, Value: 1}
	}
	err := r.Collect(Collected{Name: "weir_x", Help: "X.", Kind: KindGauge, Labels: []string{"key"}, Collect: func() []Sample { return samples }})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if got, want := len(lines), 2+DefaultLimit+1; got != want {
		t.Errorf("wrote %d lines, want %d: HELP, TYPE, %d keys and other", got, want, DefaultLimit)
	}
	if !strings.Contains(buf.String(), "weir_x{key=\"other\"} 10\n") {
		t.Errorf("no other series with 10 in\n%s", buf.String())
	}
}

func TestCollectBadSamples(t *testing.T) {
	var r Registry
	err := r.Collect(Collected{Name: "weir_x", Help: "X.", Kind: KindGauge, Labels: []string{"key"}, Collect: func() []Sample {
		return []Sample{{Values: []string{"a"}, Value: 1}, {Value: 2}}
	}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	err = r.WriteText(&buf)
	if !errors.Is(err, ErrCollect) || !strings.Contains(err.Error(), "1 sample(s)") {
		t.Errorf("error = %v, want ErrCollect counting 1 sample", err)
	}
	if !strings.HasSuffix(buf.String(), "weir_x{key=\"a\"} 1\n") {
		t.Errorf("WriteText wrote\n%s\nwant the good sample", buf.String())
	}
}
