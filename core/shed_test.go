package core

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirproxy/weir/internal/fixture"
)

// repoRoot is the repository's root (fixture.Root).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := fixture.Root()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestReasonsRegistered: every registered reason is whole and named once, and metrics,
// the admin page and docs/operations.md's "Refusals" each know every one of them, and no
// other: a reason a protection registers is seen everywhere an operator looks.
func TestReasonsRegistered(t *testing.T) {
	if len(reasons) == 0 {
		t.Fatal("no reason registered")
	}
	seen := map[string]bool{}
	for i, r := range reasons {
		if r.index != i {
			t.Errorf("%s: index %d at place %d", r.name, r.index, i)
		}
		if r.name == "" || seen[r.name] {
			t.Errorf("reason %d: name %q empty or taken twice", i, r.name)
		}
		seen[r.name] = true
		if (r.status != http.StatusServiceUnavailable && r.status != http.StatusTooManyRequests) || r.text == "" {
			t.Errorf("%s: status %d, text %q; want 503 or 429 and a line of text", r.name, r.status, r.text)
		}
		if r.stale != staleNever && r.stale != staleIfError && r.stale != staleAny {
			t.Errorf("%s: stale %d is none of staleNever, staleIfError, staleAny", r.name, r.stale)
		}
	}

	h := newTestHandler(t, Settings{}, http.NotFoundHandler())
	var text bytes.Buffer
	if err := writeMetrics(h.e, &text); err != nil {
		t.Fatal(err)
	}
	state := operator{e: h.e, s: *h.s}.State(time.Now())
	shown := map[string]bool{}
	for _, f := range state.Refusals {
		shown[f.Reason] = true
	}
	documented, err := fixture.DocTable("docs/operations.md", "Refusals", refusalsHeader)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reasons {
		if !strings.Contains(text.String(), `weir_shed_total{reason="`+r.name+`"} 0`) {
			t.Errorf("%s: no weir_shed_total series in the metrics", r.name)
		}
		if !shown[r.name] {
			t.Errorf("%s: not on the admin page's refusals", r.name)
		}
		if cells, ok := documented[r.name]; !ok {
			t.Errorf("%s: no row in docs/operations.md's Refusals: add one (status, Retry-After, whether stale may answer, what refuses)", r.name)
		} else if len(cells) != 5 || cells[1] != strconv.Itoa(r.status) {
			t.Errorf("%s: docs/operations.md's row %q, want 5 cells, the second %d", r.name, cells, r.status)
		}
	}
	if len(state.Refusals) != len(reasons) {
		t.Errorf("the admin page lists %d refusals, %d are registered", len(state.Refusals), len(reasons))
	}
	for name := range documented {
		if !seen[name] {
			t.Errorf("docs/operations.md's Refusals has a row for %q, which no protection registers", name)
		}
	}
}

// refusalsHeader is the header of docs/operations.md's table of refusals.
const refusalsHeader = "| reason | status | Retry-After | stale may answer | refused by |"
