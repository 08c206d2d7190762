package httpcache

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/entry"
)

// RFC 9110 section 13.2.2: If-None-Match first, If-Modified-Since only without it.
func TestNotModified(t *testing.T) {
	born := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	lastMod := born.Add(-time.Hour).Format(http.TimeFormat)
	tests := []struct {
		desc   string
		status int
		stored http.Header
		header http.Header
		want   bool
	}{
		{desc: "same ETag", stored: http.Header{"Etag": {`"v1"`}}, header: http.Header{"If-None-Match": {`"v1"`}}, want: true},
		{desc: "weak comparison", stored: http.Header{"Etag": {`"v1"`}}, header: http.Header{"If-None-Match": {`W/"v1"`}}, want: true},
		{desc: "one of a list", stored: http.Header{"Etag": {`"v1"`}}, header: http.Header{"If-None-Match": {`"v0", "v1"`}}, want: true},
		{desc: "star", stored: http.Header{}, header: http.Header{"If-None-Match": {"*"}}, want: true},
		{desc: "other ETag", stored: http.Header{"Etag": {`"v1"`}}, header: http.Header{"If-None-Match": {`"v2"`}}, want: false},
		{desc: "If-None-Match wins over If-Modified-Since", stored: http.Header{"Etag": {`"v1"`}, "Last-Modified": {lastMod}},
			header: http.Header{"If-None-Match": {`"v2"`}, "If-Modified-Since": {lastMod}}, want: false},
		{desc: "not modified since", stored: http.Header{"Last-Modified": {lastMod}}, header: http.Header{"If-Modified-Since": {lastMod}}, want: true},
		{desc: "modified since", stored: http.Header{"Last-Modified": {born.Format(http.TimeFormat)}}, header: http.Header{"If-Modified-Since": {lastMod}}, want: false},
		{desc: "Last-Modified not a date", stored: http.Header{"Last-Modified": {"yesterday"}}, header: http.Header{"If-Modified-Since": {lastMod}}, want: false},
		{desc: "received time without Last-Modified or Date", stored: http.Header{}, header: http.Header{"If-Modified-Since": {born.Format(http.TimeFormat)}}, want: true},
		{desc: "only a 200", status: http.StatusNotFound, stored: http.Header{"Etag": {`"v1"`}}, header: http.Header{"If-None-Match": {`"v1"`}}, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			status := tc.status
			if status == 0 {
				status = http.StatusOK
			}
			r := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
			r.Header = tc.header
			ent := &entry.Entry{Status: status, Header: tc.stored, Born: born}
			if got := NotModified(r, ent); got != tc.want {
				t.Errorf("NotModified = %v, want %v", got, tc.want)
			}
		})
	}
}

// RFC 9110 section 15.4.5: a 304 carries no framing of the representation.
func TestDropForNotModified(t *testing.T) {
	hdr := http.Header{"Content-Length": {"5"}, "Content-Type": {"text/plain"}, "Content-Encoding": {"gzip"},
		"Transfer-Encoding": {"chunked"}, "Etag": {`"v1"`}, "Cache-Control": {"max-age=60"}}
	DropForNotModified(hdr)
	want := http.Header{"Etag": {`"v1"`}, "Cache-Control": {"max-age=60"}}
	if !reflect.DeepEqual(hdr, want) {
		t.Errorf("header = %v, want %v", hdr, want)
	}
}
