package httpcache

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// ResponseControl reads one Cache-Control line from the memo once it has read it: what it
// gives must be what parsing gives, the first time and every time after.
func TestResponseControlMemo(t *testing.T) {
	tests := []struct {
		desc string
		line string
	}{
		{desc: "max-age", line: "max-age=3600"},
		{desc: "several directives", line: "public, max-age=60, stale-while-revalidate=30"},
		{desc: "no-store", line: "no-store"},
		{desc: "invalid", line: "max-age=soon"},
		{desc: "conflicting repeats", line: "max-age=5, max-age=50"},
		{desc: "empty", line: ""},
		{desc: "longer than the memo keeps", line: "max-age=7, " + strings.Repeat("x", memoLineMax)},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			want := ParseCacheControl([]string{tc.line})
			h := http.Header{"Cache-Control": {tc.line}}
			for i := 0; i < 3; i++ {
				if got := ResponseControl(h); got != want {
					t.Fatalf("read %d: got %+v, want %+v", i+1, got, want)
				}
			}
		})
	}
}

// A targeted field still comes before the memo's line (RFC 9213 section 2.1).
func TestResponseControlMemoTargeted(t *testing.T) {
	plain := http.Header{"Cache-Control": {"max-age=10"}}
	if got := ResponseControl(plain).MaxAge; got != 10 {
		t.Fatalf("plain: max-age %d, want 10", got)
	}
	targeted := http.Header{"Cache-Control": {"max-age=10"}, FieldCDNCacheControl: {"max-age=99"}}
	if got := ResponseControl(targeted).MaxAge; got != 99 {
		t.Fatalf("with CDN-Cache-Control: max-age %d, want 99", got)
	}
}

// An origin that sends a new line with every answer never grows the memo past its bound.
func TestResponseControlMemoBounded(t *testing.T) {
	for i := 0; i < 3*memoSize; i++ {
		line := "max-age=" + strconv.Itoa(i)
		if got := ResponseControl(http.Header{"Cache-Control": {line}}).MaxAge; got != int64(i) {
			t.Fatalf("%q: max-age %d, want %d", line, got, i)
		}
	}
	memo.mu.RLock()
	n := len(memo.lines)
	memo.mu.RUnlock()
	if n > memoSize {
		t.Fatalf("memo holds %d lines, want at most %d", n, memoSize)
	}
}

// Answers read at once from many goroutines share the memo (go test -race).
func TestResponseControlMemoConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				n := (g*200 + i) % (memoSize + 17)
				h := http.Header{"Cache-Control": {"max-age=" + strconv.Itoa(n)}}
				if got := ResponseControl(h).MaxAge; got != int64(n) {
					errs <- "max-age " + strconv.FormatInt(got, 10) + ", want " + strconv.Itoa(n)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}
