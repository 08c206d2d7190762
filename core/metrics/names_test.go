package metrics

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckName(t *testing.T) {
	tests := []struct {
		desc    string
		name    string
		kind    Kind
		wantErr string // a part of the error; empty for none
	}{
		{desc: "counter", name: "weir_requests_total", kind: KindCounter},
		{desc: "gauge", name: "weir_store_bytes", kind: KindGauge},
		{desc: "histogram in seconds", name: "weir_fetch_duration_seconds", kind: KindHistogram},
		{desc: "leading underscore", name: "_weir_x", kind: KindGauge},
		{desc: "capitals and digits", name: "Weir_X2", kind: KindGauge},
		{desc: "empty", name: "", kind: KindGauge, wantErr: "[a-zA-Z_]"},
		{desc: "leading digit", name: "2weir", kind: KindGauge, wantErr: "[a-zA-Z_]"},
		{desc: "colon", name: "weir:requests", kind: KindGauge, wantErr: "[a-zA-Z_]"},
		{desc: "dash", name: "weir-requests", kind: KindGauge, wantErr: "[a-zA-Z_]"},
		{desc: "unicode", name: "weir_é", kind: KindGauge, wantErr: "[a-zA-Z_]"},
		{desc: "counter without _total", name: "weir_requests", kind: KindCounter, wantErr: "ends in _total"},
		{desc: "counter named _total alone", name: "_total", kind: KindCounter, wantErr: "ends in _total"},
		{desc: "gauge with _total", name: "weir_requests_total", kind: KindGauge, wantErr: "only a counter"},
		{desc: "histogram with _total", name: "weir_requests_total", kind: KindHistogram, wantErr: "only a counter"},
		{desc: "histogram ending in _count", name: "weir_fetch_count", kind: KindHistogram, wantErr: "_count"},
		{desc: "histogram ending in _bucket", name: "weir_fetch_bucket", kind: KindHistogram, wantErr: "_bucket"},
		{desc: "histogram ending in _sum", name: "weir_fetch_sum", kind: KindHistogram, wantErr: "_sum"},
		{desc: "gauge may end in _count", name: "weir_entries_count", kind: KindGauge},
		{desc: "milliseconds", name: "weir_fetch_milliseconds", kind: KindHistogram, wantErr: "use seconds"},
		{desc: "millis inside", name: "weir_millis_total", kind: KindCounter, wantErr: "use seconds"},
		{desc: "minutes in capitals", name: "weir_age_Minutes", kind: KindGauge, wantErr: "use seconds"},
		{desc: "megabytes", name: "weir_store_megabytes", kind: KindGauge, wantErr: "use bytes"},
		{desc: "percent", name: "weir_hit_percent", kind: KindGauge, wantErr: "use ratio"},
		{desc: "a unit word inside another word", name: "weir_hoursly_total", kind: KindCounter},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			err := checkName(tt.name, tt.kind)
			checkErr(t, err, tt.wantErr)
		})
	}
}

func TestCheckLabels(t *testing.T) {
	tests := []struct {
		desc    string
		kind    Kind
		labels  []string
		wantErr string
	}{
		{desc: "none", kind: KindCounter},
		{desc: "several", kind: KindCounter, labels: []string{"outcome", "method", "_x"}},
		{desc: "le outside a histogram", kind: KindGauge, labels: []string{"le"}},
		{desc: "le in a histogram", kind: KindHistogram, labels: []string{"le"}, wantErr: "le is a histogram's own"},
		{desc: "reserved prefix", kind: KindGauge, labels: []string{"__name__"}, wantErr: "does not start with __"},
		{desc: "empty", kind: KindGauge, labels: []string{""}, wantErr: "[a-zA-Z_]"},
		{desc: "dot", kind: KindGauge, labels: []string{"scope.key"}, wantErr: "[a-zA-Z_]"},
		{desc: "twice", kind: KindGauge, labels: []string{"a", "b", "a"}, wantErr: `"a" given twice`},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			checkErr(t, checkLabels("weir_x", tt.kind, tt.labels), tt.wantErr)
		})
	}
}

func TestCheckValues(t *testing.T) {
	labels := []string{"outcome", "method"}
	tests := []struct {
		desc    string
		values  [][]string
		wantErr string
	}{
		{desc: "distinct", values: [][]string{{"hit", "GET"}, {"hit", "HEAD"}, {"miss", "GET"}}},
		{desc: "awkward but valid", values: [][]string{{"a\"b", "c\\d"}, {"e\nf", "ü"}, {"", ""}}},
		{desc: "none", values: nil, wantErr: "at least one"},
		{desc: "too few", values: [][]string{{"hit"}}, wantErr: "want one for each"},
		{desc: "too many", values: [][]string{{"hit", "GET", "x"}}, wantErr: "want one for each"},
		{desc: "twice", values: [][]string{{"hit", "GET"}, {"hit", "GET"}}, wantErr: "given twice"},
		{desc: "invalid UTF-8", values: [][]string{{"hit", "\xff"}}, wantErr: "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			checkErr(t, checkValues("weir_x", labels, tt.values), tt.wantErr)
		})
	}
}

// checkErr fails t unless err is nil and wantErr empty, or err wraps ErrInvalid and holds
// wantErr.
func checkErr(t *testing.T, err error, wantErr string) {
	t.Helper()
	if wantErr == "" {
		if err != nil {
			t.Errorf("error = %v, want none", err)
		}
		return
	}
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), wantErr) {
		t.Errorf("error = %v, want ErrInvalid with %q", err, wantErr)
	}
}
