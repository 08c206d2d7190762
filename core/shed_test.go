package core

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// repoRoot is the repository's root, the nearest folder at or above the working directory
// whose go.mod declares modulePath (e2e/ and testmod/ hold modules of their own): the
// package's directory under go test, the root itself under scripts/yaegi-test.sh.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(mod, []byte("module "+modulePath+"\n")) {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no repository root above the working directory")
		}
		dir = up
	}
}

// repoFile reads the file at path from the repository's root.
func repoFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), path))
	if err != nil {
		t.Fatal(err)
	}
	return data
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
	state := operator{e: h.e, s: h.s}.State(time.Now())
	shown := map[string]bool{}
	for _, f := range state.Refusals {
		shown[f.Reason] = true
	}
	documented := refusalRows(t, string(repoFile(t, "docs/operations.md")))
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

// refusalRows are the cells of each row of the table under the "## Refusals" heading of doc,
// by the reason in its first cell.
func refusalRows(t *testing.T, doc string) map[string][]string {
	t.Helper()
	i := strings.Index(doc, "\n## Refusals\n")
	if i < 0 {
		t.Fatal(`docs/operations.md: no "## Refusals" section`)
	}
	section := doc[i+1:]
	if j := strings.Index(section[3:], "\n## "); j >= 0 {
		section = section[:j+3]
	}
	if !strings.Contains(section, "\n"+refusalsHeader+"\n") {
		t.Errorf("docs/operations.md's Refusals: no table with the header %s", refusalsHeader)
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "| `") {
			cells := strings.Split(strings.Trim(line, "| "), " | ")
			rows[strings.Trim(cells[0], "`")] = cells
		}
	}
	return rows
}
