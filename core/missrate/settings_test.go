package missrate

import (
	"math"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		desc    string
		s       Settings
		wantErr string
	}{
		{desc: "zero value", s: Settings{}},
		{desc: "all set", s: Settings{Window: time.Minute, MinMisses: 10, Ratio: 0.5, Throttle: true}},
		{desc: "ratio one", s: Settings{Ratio: 1}},
		{desc: "negative window", s: Settings{Window: -time.Second}, wantErr: "missRate.window: -1s must not be negative"},
		{desc: "window at the bound", s: Settings{Window: 24 * time.Hour}},
		{desc: "window over the bound", s: Settings{Window: 25 * time.Hour}, wantErr: "missRate.window: 25h0m0s must be at most 24h0m0s"},
		{desc: "negative minMisses", s: Settings{MinMisses: -3}, wantErr: "missRate.minMisses: -3 must not be negative"},
		{desc: "ratio above one", s: Settings{Ratio: 1.5}, wantErr: "missRate.ratio: 1.5 must be between 0 and 1"},
		{desc: "negative ratio", s: Settings{Ratio: -0.1}, wantErr: "missRate.ratio: -0.1 must be between 0 and 1"},
		{desc: "NaN ratio", s: Settings{Ratio: math.NaN()}, wantErr: "missRate.ratio: NaN must be between 0 and 1"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			err := tc.s.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.wantErr {
				t.Errorf("Validate() = %q, want %q", got, tc.wantErr)
			}
			d, err := New(tc.s)
			if (err != nil) != (tc.wantErr != "") {
				t.Errorf("New() error = %v, want error %v", err, tc.wantErr != "")
			}
			if err != nil && d != nil {
				t.Errorf("New() = %v with an error, want nil", d)
			}
		})
	}
}

func TestNewAppliesDefaults(t *testing.T) {
	tests := []struct {
		desc          string
		s             Settings
		wantWindow    time.Duration
		wantMinMisses int64
		wantRatio     int64
		wantThrottle  bool
	}{
		{desc: "zero", s: Settings{}, wantWindow: 10 * time.Second, wantMinMisses: 500, wantRatio: 900000},
		{
			desc:       "set",
			s:          Settings{Window: time.Minute, MinMisses: 20, Ratio: 0.75, Throttle: true},
			wantWindow: time.Minute, wantMinMisses: 20, wantRatio: 750000, wantThrottle: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			d, err := New(tc.s)
			if err != nil {
				t.Fatalf("New() error = %v", err)
			}
			if d.windowDur != tc.wantWindow || d.window != int64(tc.wantWindow) {
				t.Errorf("window = %v (%d ns), want %v", d.windowDur, d.window, tc.wantWindow)
			}
			if d.minMisses != tc.wantMinMisses {
				t.Errorf("minMisses = %d, want %d", d.minMisses, tc.wantMinMisses)
			}
			if d.ratio != tc.wantRatio {
				t.Errorf("ratio = %d, want %d", d.ratio, tc.wantRatio)
			}
			if d.throttle != tc.wantThrottle {
				t.Errorf("throttle = %v, want %v", d.throttle, tc.wantThrottle)
			}
			if len(d.slots) != Slots {
				t.Errorf("len(slots) = %d, want %d", len(d.slots), Slots)
			}
		})
	}
}

func TestJudgeSpacing(t *testing.T) {
	tests := []struct {
		desc      string
		minMisses int
		wantFrom  int64
		wantEvery int64
	}{
		{desc: "one", minMisses: 1, wantFrom: 1, wantEvery: 1},
		{desc: "small", minMisses: 40, wantFrom: 20, wantEvery: 1},
		{desc: "default", minMisses: 500, wantFrom: 250, wantEvery: 10},
		{desc: "large", minMisses: 100000, wantFrom: 50000, wantEvery: 2083},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if got := judgeFrom(tc.minMisses); got != tc.wantFrom {
				t.Errorf("judgeFrom(%d) = %d, want %d", tc.minMisses, got, tc.wantFrom)
			}
			if got := judgeEvery(tc.minMisses); got != tc.wantEvery {
				t.Errorf("judgeEvery(%d) = %d, want %d", tc.minMisses, got, tc.wantEvery)
			}
		})
	}
}
