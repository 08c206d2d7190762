package core

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"
)

// What an origin's targeted fields do through the handler: which field decides, which
// fields reach the client, on every way an answer leaves Weir.
func TestTargetedFieldsThroughHandler(t *testing.T) {
	const (
		stored = "Weir; fwd=uri-miss; stored"
		passed = "Weir; fwd=uri-miss; detail=uncacheable"
	)
	tests := []struct {
		desc       string
		status     int
		respHeader []string
		wantFirst  string
		wantSecond string
		// wantFields are the fields both answers carry, with their values; wantGone the
		// fields neither carries.
		wantFields []string
		wantGone   []string
	}{
		{desc: "Surrogate-Control max-age over Cache-Control no-store",
			respHeader: []string{"Cache-Control", "no-store", "Surrogate-Control", "max-age=3600"},
			wantFirst:  stored, wantSecond: "Weir; hit; ttl=3600",
			wantFields: []string{"Cache-Control", "no-store"}, wantGone: []string{"Surrogate-Control"}},
		{desc: "Surrogate-Control no-store over Cache-Control max-age",
			respHeader: []string{"Cache-Control", "max-age=3600", "Surrogate-Control", "no-store"},
			wantFirst:  "Weir; fwd=uri-miss; detail=no-store", wantSecond: passed,
			wantFields: []string{"Cache-Control", "max-age=3600"}},
		{desc: "Surrogate-Control short max-age over a long Cache-Control",
			respHeader: []string{"Cache-Control", "max-age=3600", "Surrogate-Control", "max-age=1"},
			wantFirst:  stored, wantSecond: "Weir; hit; ttl=1",
			wantGone: []string{"Surrogate-Control"}},
		{desc: "CDN-Cache-Control decides and is forwarded",
			respHeader: []string{"Cache-Control", "max-age=5", "CDN-Cache-Control", "max-age=60"},
			wantFirst:  stored, wantSecond: "Weir; hit; ttl=60",
			wantFields: []string{"Cdn-Cache-Control", "max-age=60", "Cache-Control", "max-age=5"}},
		{desc: "Weir-Cache-Control decides and is not forwarded",
			respHeader: []string{"CDN-Cache-Control", "max-age=60", "Weir-Cache-Control", "max-age=30"},
			wantFirst:  stored, wantSecond: "Weir; hit; ttl=30",
			wantFields: []string{"Cdn-Cache-Control", "max-age=60"}, wantGone: []string{"Weir-Cache-Control"}},
		{desc: "Weir-Cache-Control private over a public Cache-Control",
			respHeader: []string{"Cache-Control", "public, max-age=60", "Weir-Cache-Control", "private"},
			wantFirst:  "Weir; fwd=uri-miss; detail=private", wantSecond: passed,
			wantFields: []string{"Cache-Control", "public, max-age=60"}},
		{desc: "origin error carries no Weir-only field",
			status:     503,
			respHeader: []string{"Surrogate-Control", "max-age=60", "Weir-Cache-Control", "max-age=60"},
			wantFirst:  "Weir; fwd=uri-miss; detail=origin-error",
			wantGone:   []string{"Surrogate-Control", "Weir-Cache-Control"}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			status := statusOrOK(tc.status)
			o := staticOrigin(t, status, tc.respHeader, "body")
			clock := newFakeClock()
			h := newTestHandler(t, Settings{Now: clock.Now}, o)
			answers := []string{tc.wantFirst, tc.wantSecond}
			for i, want := range answers {
				if want == "" {
					break
				}
				w := do(t, h, http.MethodGet, "http://example.com/t")
				wantAnswer(t, w, status, want, "body")
				wantTargetedFields(t, i+1, w.Header(), tc.wantFields, tc.wantGone)
			}
		})
	}
}

// wantTargetedFields checks the fields of answer n.
func wantTargetedFields(t *testing.T, n int, got http.Header, fields, gone []string) {
	t.Helper()
	for i := 0; i+1 < len(fields); i += 2 {
		if v := got[fields[i]]; len(v) != 1 || v[0] != fields[i+1] {
			t.Errorf("answer %d: %s = %q, want %q", n, fields[i], v, fields[i+1])
		}
	}
	for _, k := range gone {
		if v, ok := got[k]; ok {
			t.Errorf("answer %d carries %s: %q, want none", n, k, v)
		}
	}
}

// A streamed answer (not stored, written to the client as it arrives) carries no field meant
// for Weir alone.
func TestStreamedAnswerDropsWeirOnlyFields(t *testing.T) {
	tests := []struct {
		desc        string
		header      []string
		wantDetail  string
		maxEntry    int64
		contentSize int
	}{
		{desc: "not storable", header: []string{"Surrogate-Control", "no-store", "Weir-Cache-Control", "no-store"},
			wantDetail: "no-store"},
		{desc: "too large", header: []string{"Surrogate-Control", "max-age=60", "Weir-Cache-Control", "max-age=60"},
			wantDetail: "too-large", maxEntry: 4, contentSize: 10},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			body := strings.Repeat("z", tc.contentSize+1)
			o := staticOrigin(t, 200, append([]string{"Content-Length", itoa(int64(len(body)))}, tc.header...), body)
			h := newTestHandler(t, Settings{Now: newFakeClock().Now, MaxEntrySize: tc.maxEntry}, o)
			w := newWatchWriter()
			h.ServeHTTP(w, newRequest(http.MethodGet, "http://example.com/s"))
			if status, got := w.result(); status != 200 || got != body {
				t.Errorf("answer = %d %q, want 200 %q", status, got, body)
			}
			if got, want := w.header.Get("Cache-Status"), "Weir; fwd=uri-miss; detail="+tc.wantDetail; got != want {
				t.Errorf("Cache-Status = %q, want %q", got, want)
			}
			wantTargetedFields(t, 1, w.header, nil, []string{"Surrogate-Control", "Weir-Cache-Control"})
		})
	}
}

// Answers to other methods pass a writer of Weir's (statusWriter): the fields meant for Weir
// alone stop there too.
func TestOtherMethodsDropWeirOnlyFields(t *testing.T) {
	tests := []struct {
		desc      string
		method    string
		writeNone bool
	}{
		{desc: "POST", method: http.MethodPost},
		{desc: "OPTIONS", method: http.MethodOptions},
		{desc: "DELETE with an implicit 200", method: http.MethodDelete, writeNone: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Surrogate-Control", "no-store")
				w.Header().Set("Weir-Cache-Control", "no-store")
				w.Header().Set("Cdn-Cache-Control", "no-store")
				if !tc.writeNone {
					w.WriteHeader(http.StatusOK)
				}
			})
			h := newFrozenHandler(t, o)
			w := do(t, h, tc.method, "http://example.com/m")
			wantAnswer(t, w, 200, "Weir; fwd=method", "")
			wantTargetedFields(t, 1, w.Header(), []string{"Cdn-Cache-Control", "no-store"},
				[]string{"Surrogate-Control", "Weir-Cache-Control"})
		})
	}
}

// Edge Architecture section 2.1: Weir's fetches announce it in Surrogate-Capability, after
// what the request already carried.
func TestFetchAnnouncesSurrogateCapability(t *testing.T) {
	tests := []struct {
		desc      string
		reqHeader []string
		want      []string
	}{
		{desc: "none before", want: []string{`weir="Surrogate/1.0"`}},
		{desc: "appended to a downstream surrogate's", reqHeader: []string{"Surrogate-Capability", `edge="Surrogate/1.0"`},
			want: []string{`edge="Surrogate/1.0"`, `weir="Surrogate/1.0"`}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			o := staticOrigin(t, 200, []string{"Cache-Control", "max-age=60"}, "b")
			h := newFrozenHandler(t, o)
			r := newRequest(http.MethodGet, "http://example.com/cap", tc.reqHeader...)
			h.ServeHTTP(httptest.NewRecorder(), r)
			if got := o.request(t, 1).Header["Surrogate-Capability"]; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("origin saw Surrogate-Capability %q, want %q", got, tc.want)
			}
			if got := r.Header["Surrogate-Capability"]; len(got) != len(tc.reqHeader)/2 {
				t.Errorf("the client's request was changed: Surrogate-Capability %q", got)
			}
		})
	}
}

// A 304 that carries the targeted field refreshes the entry by it: the merged header is read
// as a whole, before the Weir-only fields are dropped from what is stored.
func TestRevalidationReadsTargetedField(t *testing.T) {
	clock := newFakeClock()
	o := newScriptOrigin(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Etag", `"v1"`)
		if n == 1 {
			w.Header().Set("Surrogate-Control", "max-age=10")
			w.Write([]byte("body"))
			return
		}
		w.Header().Set("Surrogate-Control", "max-age=100")
		w.WriteHeader(http.StatusNotModified)
	})
	h := newTestHandler(t, Settings{Now: clock.Now}, o)
	const url = "http://example.com/reval"
	wantAnswer(t, do(t, h, http.MethodGet, url), 200, "Weir; fwd=uri-miss; stored", "body")
	clock.Add(20 * time.Second)
	w := do(t, h, http.MethodGet, url)
	wantAnswer(t, w, 200, "Weir; fwd=stale; stored; fwd-status=304", "body")
	wantTargetedFields(t, 2, w.Header(), []string{"Cache-Control", "no-store"}, []string{"Surrogate-Control"})
	clock.Add(50 * time.Second)
	wantAnswer(t, do(t, h, http.MethodGet, url), 200, "Weir; hit; ttl=50", "body")
	wantCalls(t, o, 2)
}
