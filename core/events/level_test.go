package events

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/weirproxy/weir/internal/fixture"
)

// eventNames returns the event names names.go declares, by constant: every string constant
// there but the Level ones. Read from the source, so that a name added without a level fails
// TestEveryEventHasALevel rather than going unseen.
func eventNames(t *testing.T) map[string]string {
	t.Helper()
	path := filepath.Join(repoRoot(t), "core", "events", "names.go")
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, id := range vs.Names {
				if strings.HasPrefix(id.Name, "Level") {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Errorf("names.go: %s is not a string literal", id.Name)
					continue
				}
				v, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatalf("names.go: %s: %v", id.Name, err)
				}
				names[id.Name] = v
			}
		}
	}
	if len(names) == 0 {
		t.Fatal("names.go declares no event names")
	}
	return names
}

// repoRoot is the repository's root (fixture.Root).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := fixture.Root()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// isLevel tells whether s is one of the three levels.
func isLevel(s string) bool {
	switch s {
	case LevelInfo, LevelWarn, LevelError:
		return true
	}
	return false
}

// TestEveryEventHasALevel: each event name of names.go has a level of its own in levels, and
// levels holds no other name: the level is the event's, not the caller's.
func TestEveryEventHasALevel(t *testing.T) {
	names := eventNames(t)
	seen := map[string]string{}
	for constant, name := range names {
		if other, ok := seen[name]; ok {
			t.Errorf("%s and %s are both %q", constant, other, name)
		}
		seen[name] = constant
		level, ok := levels[name]
		if !ok {
			t.Errorf("%s (%q) has no level: give it one in names.go's levels and a row in docs/operations.md's Events", constant, name)
			continue
		}
		if !isLevel(level) {
			t.Errorf("%s (%q): level %q, want info, warn or error", constant, name, level)
		}
		if got := Level(name); got != level {
			t.Errorf("Level(%q) = %q, want %q", name, got, level)
		}
	}
	for name := range levels {
		if _, ok := seen[name]; !ok {
			t.Errorf("levels gives %q a level, but names.go declares no such event", name)
		}
	}
	if got := Level("no_such_event"); got != LevelInfo {
		t.Errorf("Level of an unknown name = %q, want %q", got, LevelInfo)
	}
}

// TestEmitLevel: every event's line, in both formats, has its level right after the time,
// then the event.
func TestEmitLevel(t *testing.T) {
	for _, name := range eventNames(t) {
		want := []kv{{"time", "2025-03-01T12:00:00.250Z"}, {"level", levels[name]}, {"event", name}, {"middleware", "shop"}, {"k", "v"}}
		for _, format := range []string{FormatLogfmt, FormatJSON} {
			r := newRig(t, format, "shop")
			r.log.Emit(name, Str("k", "v"))
			lines := r.take()
			if len(lines) != 1 {
				t.Fatalf("%s (%s): %d lines, want 1", name, format, len(lines))
			}
			var got []kv
			var err error
			if format == FormatJSON {
				got, err = readJSON(lines[0])
			} else {
				got, err = parseLogfmt(lines[0])
			}
			if err != nil {
				t.Fatalf("%s (%s): line %q: %v", name, format, lines[0], err)
			}
			if !equalKVs(got, want) {
				t.Errorf("%s (%s): line %q, want %q", name, format, lines[0], want)
			}
		}
	}
	// A name that is not one of the package's still gets a level, as Level says.
	r := newRig(t, "", "shop")
	r.log.Emit("no_such_event")
	want := `time=2025-03-01T12:00:00.250Z level=info event=no_such_event middleware=shop`
	if got := r.take(); !equalLines(got, []string{want}) {
		t.Errorf("an unknown name:\n got %q\nwant %q", got, want)
	}
}

func equalKVs(a, b []kv) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// eventsHeader is the header of docs/operations.md's table of events.
const eventsHeader = "| event | level | when | fields |"

// TestLevelsDocumented: docs/operations.md's Events has one row for each event, whose second
// cell is its level, and no row for a name that is not an event.
func TestLevelsDocumented(t *testing.T) {
	rows, err := fixture.DocTable("docs/operations.md", "Events", eventsHeader)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range eventNames(t) {
		cells, ok := rows[name]
		if !ok {
			t.Errorf("%s: no row in docs/operations.md's Events: add one (level, when, fields)", name)
			continue
		}
		if len(cells) != 4 || strings.Trim(cells[1], "`") != levels[name] {
			t.Errorf("%s: docs/operations.md's row %q, want 4 cells, the second %s", name, cells, levels[name])
		}
		delete(rows, name)
	}
	for name := range rows {
		t.Errorf("docs/operations.md's Events has a row for %q, which is no event", name)
	}
}
