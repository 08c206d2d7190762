package limit

import (
	"reflect"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		desc     string
		settings Settings
		want     string // "" for valid
	}{
		{desc: "zero is all defaults", settings: Settings{}},
		{desc: "negative maxConcurrent", settings: Settings{MaxConcurrent: -1}, want: "maxConcurrent: -1 must be at least 1"},
		{desc: "negative maxQueue", settings: Settings{MaxQueue: -2}, want: "maxQueue: -2 must be at least 1"},
		{desc: "negative maxQueueWait", settings: Settings{MaxQueueWait: -time.Second}, want: "maxQueueWait: -1s must be positive"},
		{desc: "negative maxPerPartition", settings: Settings{MaxPerPartition: -1}, want: "maxPerPartition: -1 must be at least 1"},
		{desc: "negative maxQueuePerPartition", settings: Settings{MaxQueuePerPartition: -1}, want: "maxQueuePerPartition: -1 must be at least 1"},
		{desc: "negative maxPerHost", settings: Settings{MaxPerHost: -3}, want: "maxPerHost: -3 must be at least 0 (0 turns the host cap off)"},
		{desc: "negative maxUpload", settings: Settings{MaxUpload: -1}, want: "maxUpload: -1 must be at least 1"},
		{desc: "partition share over the queue", settings: Settings{MaxQueue: 10, MaxQueuePerPartition: 11}, want: "maxQueuePerPartition: 11 must be at most maxQueue (10)"},
		{desc: "partition share over the default queue", settings: Settings{MaxQueuePerPartition: 2000}, want: "maxQueuePerPartition: 2000 must be at most maxQueue (1024)"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			err := tt.settings.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
			if _, err := New(tt.settings); (err == nil) != (tt.want == "") {
				t.Fatalf("New: got error %v, want one only if Validate fails", err)
			}
		})
	}
}

func TestWithDefaults(t *testing.T) {
	tests := []struct {
		desc     string
		settings Settings
		want     Settings // AfterFunc stays nil: the real timer
	}{
		{
			desc:     "zero",
			settings: Settings{},
			want: Settings{MaxConcurrent: 64, MaxQueue: 1024, MaxQueueWait: 2 * time.Second,
				MaxPerPartition: 16, MaxQueuePerPartition: 128, MaxUpload: 16},
		},
		{
			desc:     "small queue: share is at least maxPerPartition",
			settings: Settings{MaxQueue: 40},
			want: Settings{MaxConcurrent: 64, MaxQueue: 40, MaxQueueWait: 2 * time.Second,
				MaxPerPartition: 16, MaxQueuePerPartition: 16, MaxUpload: 16},
		},
		{
			desc:     "tiny queue: share is at most the queue",
			settings: Settings{MaxQueue: 4},
			want: Settings{MaxConcurrent: 64, MaxQueue: 4, MaxQueueWait: 2 * time.Second,
				MaxPerPartition: 16, MaxQueuePerPartition: 4, MaxUpload: 16},
		},
		{
			desc:     "set values kept",
			settings: Settings{MaxConcurrent: 8, MaxQueue: 80, MaxQueueWait: time.Second, MaxPerPartition: 2, MaxQueuePerPartition: 3, MaxPerHost: 4, MaxUpload: 1},
			want:     Settings{MaxConcurrent: 8, MaxQueue: 80, MaxQueueWait: time.Second, MaxPerPartition: 2, MaxQueuePerPartition: 3, MaxPerHost: 4, MaxUpload: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			got := tt.settings.withDefaults()
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
