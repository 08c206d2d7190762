package httpcache

import (
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/entry"
)

func TestTags(t *testing.T) {
	long := strings.Repeat("x", entry.MaxTagLen)
	many := make([]string, 0, entry.MaxTags+10)
	for i := 0; i < entry.MaxTags+10; i++ {
		many = append(many, "k"+strconv.Itoa(i))
	}
	tests := []struct {
		desc   string
		header http.Header
		want   []string
	}{
		{desc: "none", header: http.Header{"Cache-Control": {"max-age=60"}}},
		{desc: "surrogate keys split at spaces", header: http.Header{"Surrogate-Key": {"a b  c"}}, want: []string{"a", "b", "c"}},
		{desc: "tabs and ends", header: http.Header{"Surrogate-Key": {" \ta\tb \t"}}, want: []string{"a", "b"}},
		{desc: "commas are part of a surrogate key", header: http.Header{"Surrogate-Key": {"a,b"}}, want: []string{"a,b"}},
		{desc: "cache tags split at commas", header: http.Header{"Cache-Tag": {"a, b ,c,,"}}, want: []string{"a", "b", "c"}},
		{desc: "a space inside a cache tag stays", header: http.Header{"Cache-Tag": {"product one, two"}}, want: []string{"product one", "two"}},
		{desc: "both fields merged, surrogate keys first", header: http.Header{"Cache-Tag": {"x,a"}, "Surrogate-Key": {"a b"}}, want: []string{"a", "b", "x"}},
		{desc: "several lines", header: http.Header{"Surrogate-Key": {"a", "b a"}, "Cache-Tag": {"c", "d"}}, want: []string{"a", "b", "c", "d"}},
		{desc: "repeats kept once", header: http.Header{"Surrogate-Key": {"a a b a"}}, want: []string{"a", "b"}},
		{desc: "case kept", header: http.Header{"Surrogate-Key": {"A a"}}, want: []string{"A", "a"}},
		{desc: "empty fields", header: http.Header{"Surrogate-Key": {"", "  "}, "Cache-Tag": {",", ""}}},
		{desc: "UTF-8 kept", header: http.Header{"Surrogate-Key": {"caf\xc3\xa9"}}, want: []string{"caf\xc3\xa9"}},
		{desc: "longest tag kept", header: http.Header{"Surrogate-Key": {long}}, want: []string{long}},
		{desc: "longer tag left out whole", header: http.Header{"Surrogate-Key": {"a " + long + "y b"}}, want: []string{"a", "b"}},
		{desc: "control characters left out", header: http.Header{"Cache-Tag": {"a\x00b,c\x7f,d\re,ok"}}, want: []string{"ok"}},
		{desc: "tab inside a cache tag left out", header: http.Header{"Cache-Tag": {"a\tb,c"}}, want: []string{"c"}},
		{desc: "first MaxTags kept", header: http.Header{"Surrogate-Key": {strings.Join(many, " ")}}, want: many[:entry.MaxTags]},
		{desc: "MaxTags across both fields", header: http.Header{"Surrogate-Key": {strings.Join(many[:entry.MaxTags-1], " ")}, "Cache-Tag": {"y,z"}},
			want: append(append([]string(nil), many[:entry.MaxTags-1]...), "y")},
		{desc: "field names as the client canonicalises them only", header: http.Header{"surrogate-key": {"a"}}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if got := Tags(tc.header); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Tags(%q) = %q, want %q", tc.header, got, tc.want)
			}
		})
	}
}

// NewEntry gives the entry the answer's tags and keeps the fields that carry them.
func TestNewEntryTags(t *testing.T) {
	p := &Policy{}
	now := time.Now()
	h := http.Header{"Cache-Control": {"max-age=1"}, "Surrogate-Key": {"p1 all"}, "Cache-Tag": {"c1"}}
	e := NewEntry(p, 200, h, nil, ParseCacheControl(h["Cache-Control"]), now, now)
	if want := []string{"p1", "all", "c1"}; !reflect.DeepEqual(e.Tags, want) {
		t.Errorf("Tags = %q, want %q", e.Tags, want)
	}
	if got := e.Header["Surrogate-Key"]; !reflect.DeepEqual(got, []string{"p1 all"}) {
		t.Errorf("stored Surrogate-Key = %q, want it as sent", got)
	}
	if got := e.Header["Cache-Tag"]; !reflect.DeepEqual(got, []string{"c1"}) {
		t.Errorf("stored Cache-Tag = %q, want it as sent", got)
	}
	e = NewEntry(p, 200, http.Header{"Cache-Control": {"max-age=1"}}, nil, ParseCacheControl([]string{"max-age=1"}), now, now)
	if e.Tags != nil {
		t.Errorf("Tags = %q, want none", e.Tags)
	}
}
