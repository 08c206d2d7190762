package core

import (
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The rules the code is held to that live in prose: which package may import which
// (ARCHITECTURE.md, "Who may import whom") and what each cited requirement id means
// (docs/requirements.md). Both tests read the repository's files from its root, which they
// find above the working directory: the package's folder under go test, the repository's
// root under scripts/yaegi-test.sh. Both run alike compiled and under Yaegi: go/parser and
// regexp are compiled code the interpreter calls.

// modulePath is the root module's path; importRulesHeading opens the section of
// ARCHITECTURE.md that holds the import rules.
const (
	modulePath         = "github.com/weirproxy/weir"
	importRulesHeading = "## Who may import whom"
)

// tableRows returns the cells of each row of the Markdown tables in text, less each table's
// header (the row above its separator) and separator.
func tableRows(text string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		if strings.Trim(cells[0], "-: ") == "" && len(rows) > 0 {
			rows = rows[:len(rows)-1] // the separator, under the header
			continue
		}
		rows = append(rows, cells)
	}
	return rows
}

// importRule is one row of the import table: the packages of Weir a package may import, or
// every package under core/ but itself.
type importRule struct {
	everyLeaf bool
	allowed   map[string]bool
}

// readImportRules parses the table under importRulesHeading, the section ARCHITECTURE.md
// ends with: rows "| core/x | (standard library only) |", "| core/x | core/a, core/b |" or
// "| core (the engine) | every leaf |", keyed by the first word of the first cell.
func readImportRules(root string) (map[string]importRule, error) {
	data, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		return nil, err
	}
	text := string(data)
	at := strings.Index(text, "\n"+importRulesHeading+"\n")
	if at < 0 {
		return nil, errors.New("ARCHITECTURE.md has no section " + importRulesHeading)
	}
	section := text[at+1:]
	if end := strings.Index(section[len(importRulesHeading):], "\n#"); end >= 0 {
		section = section[:len(importRulesHeading)+end]
	}
	rows := tableRows(section)
	rules := make(map[string]importRule)
	// The rows run from the bottom up: a row names only packages of the rows above it, so
	// the table holds no cycle.
	above := make(map[string]bool)
	for _, cells := range rows {
		if len(cells) < 2 || cells[0] == "" {
			return nil, fmt.Errorf("%s: row %q has no package and rule", importRulesHeading, cells)
		}
		pkg := strings.Fields(cells[0])[0]
		if _, dup := rules[pkg]; dup {
			return nil, fmt.Errorf("%s: two rows for %s", importRulesHeading, pkg)
		}
		rule := importRule{allowed: make(map[string]bool)}
		switch cells[1] {
		case "every leaf":
			rule.everyLeaf = true
		case "(standard library only)":
		default:
			for _, p := range strings.Split(cells[1], ",") {
				p = strings.TrimSpace(p)
				if !strings.HasPrefix(p, "core/") || strings.ContainsAny(p, " ()") {
					return nil, fmt.Errorf("%s: %s may import %q: not a package under core/", importRulesHeading, pkg, p)
				}
				if !above[p] {
					return nil, fmt.Errorf("%s: %s may import %s, which has no row above it", importRulesHeading, pkg, p)
				}
				rule.allowed[p] = true
			}
		}
		rules[pkg] = rule
		above[pkg] = true
	}
	return rules, nil
}

// goPackages returns, for each folder under dir holding a non-test .go file, the folder
// relative to root ("core", "core/limit") and those files. testdata folders and folders
// whose names begin with "." or "_" hold no package, as for the go command.
func goPackages(root, dir string, into map[string][]string) error {
	ents, err := os.ReadDir(filepath.Join(root, dir))
	if err != nil {
		return err
	}
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() {
			if name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				continue
			}
			if err := goPackages(root, dir+"/"+name, into); err != nil {
				return err
			}
			continue
		}
		if strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			into[dir] = append(into[dir], dir+"/"+name)
		}
	}
	return nil
}

// TestLeafImports holds every package under core/ to its row of ARCHITECTURE.md's import
// table: its non-test files import no package of Weir the row does not name, and a package
// without a row, or a row without a package, fails.
func TestLeafImports(t *testing.T) {
	root := repoRoot(t)
	rules, err := readImportRules(root)
	if err != nil {
		t.Fatal(err)
	}
	pkgs := make(map[string][]string)
	if err := goPackages(root, "core", pkgs); err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 2 {
		t.Fatalf("found %d packages under core/ from %s: the walk is broken", len(pkgs), root)
	}
	var names []string
	for pkg := range pkgs {
		names = append(names, pkg)
	}
	sort.Strings(names)
	fset := token.NewFileSet()
	for _, pkg := range names {
		rule, ok := rules[pkg]
		if !ok {
			t.Errorf("%s has no row in ARCHITECTURE.md's %q table", pkg, importRulesHeading)
			continue
		}
		for _, file := range pkgs[pkg] {
			f, err := parser.ParseFile(fset, filepath.Join(root, file), nil, parser.ImportsOnly)
			if err != nil {
				t.Errorf("%s: %v", file, err)
				continue
			}
			for _, spec := range f.Imports {
				path, err := strconv.Unquote(spec.Path.Value)
				if err != nil {
					t.Errorf("%s: import %s: %v", file, spec.Path.Value, err)
					continue
				}
				var dep string
				switch {
				case path == modulePath:
					dep = "the plugin package (" + modulePath + ")"
				case strings.HasPrefix(path, modulePath+"/"):
					dep = strings.TrimPrefix(path, modulePath+"/")
				default:
					continue // the standard library or a vendored module
				}
				if rule.allowed[dep] {
					continue
				}
				if rule.everyLeaf && strings.HasPrefix(dep, "core/") && dep != pkg {
					continue
				}
				t.Errorf("%s imports %s, which ARCHITECTURE.md's %q table does not allow %s",
					file, dep, importRulesHeading, pkg)
			}
		}
	}
	for pkg := range rules {
		if _, ok := pkgs[pkg]; !ok {
			t.Errorf("ARCHITECTURE.md's %q table has a row for %s, which is no package", importRulesHeading, pkg)
		}
	}
}

// requirementID matches a requirement id as the code cites it, alone (FR-LIM-3) or as a
// range of one area's ids (FR-LIM-1..7).
var requirementID = regexp.MustCompile(`FR-([A-Z]+)-([0-9]+)(\.\.([0-9]+))?`)

// requirements are the ids docs/requirements.md lists: every table row whose first cell is
// an id defines it, unless its second cell begins "(unassigned)", which marks a number the
// requirements skipped (a range may span it; a citation of it alone names nothing).
type requirements struct {
	defined, unassigned map[string]bool
}

// readRequirements parses docs/requirements.md.
func readRequirements(root string) (requirements, error) {
	reqs := requirements{defined: make(map[string]bool), unassigned: make(map[string]bool)}
	data, err := os.ReadFile(filepath.Join(root, "docs", "requirements.md"))
	if err != nil {
		return reqs, err
	}
	whole := regexp.MustCompile(`^FR-[A-Z]+-[0-9]+$`)
	for _, cells := range tableRows(string(data)) {
		if !whole.MatchString(cells[0]) {
			continue
		}
		if len(cells) > 1 && strings.HasPrefix(cells[1], "(unassigned)") {
			reqs.unassigned[cells[0]] = true
			continue
		}
		reqs.defined[cells[0]] = true
	}
	if len(reqs.defined) == 0 {
		return reqs, errors.New("docs/requirements.md defines no requirement id")
	}
	return reqs, nil
}

// sourceFiles appends to into every .go and .sh file under dir (relative to root), outside
// vendor/, node_modules/ and .git.
func sourceFiles(root, dir string, into []string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(root, dir))
	if err != nil {
		return into, err
	}
	for _, e := range ents {
		name := e.Name()
		rel := name
		if dir != "" {
			rel = dir + "/" + name
		}
		if e.IsDir() {
			switch name {
			case "vendor", "node_modules", ".git":
				continue
			}
			into, err = sourceFiles(root, rel, into)
			if err != nil {
				return into, err
			}
			continue
		}
		if strings.HasSuffix(name, ".go") || strings.HasSuffix(name, ".sh") {
			into = append(into, rel)
		}
	}
	return into, nil
}

// TestRequirementIDs holds every requirement id cited in the repository's .go and .sh files
// to docs/requirements.md: an id, or any id of a range, that the page does not define fails,
// named with its file and line.
func TestRequirementIDs(t *testing.T) {
	root := repoRoot(t)
	reqs, err := readRequirements(root)
	if err != nil {
		t.Fatal(err)
	}
	files, err := sourceFiles(root, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	cited := 0
	for _, file := range files {
		data, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		if !strings.Contains(text, "FR-") {
			continue
		}
		for i, line := range strings.Split(text, "\n") {
			for _, m := range requirementID.FindAllStringSubmatch(line, -1) {
				cited++
				if msg := checkRequirement(m, reqs); msg != "" {
					t.Errorf("%s:%d: %s", file, i+1, msg)
				}
			}
		}
	}
	if cited == 0 {
		t.Fatalf("no requirement id cited in %d files under %s: the scan is broken", len(files), root)
	}
}

// checkRequirement returns what is wrong with one citation m of requirementID (its whole
// match, area, first number, range suffix and last number), or "".
func checkRequirement(m []string, reqs requirements) string {
	if m[3] == "" {
		id := m[0]
		if reqs.defined[id] {
			return ""
		}
		if reqs.unassigned[id] {
			return id + " is unassigned in docs/requirements.md"
		}
		return id + " is not defined in docs/requirements.md"
	}
	from, err := strconv.Atoi(m[2])
	if err != nil {
		return m[0] + ": " + err.Error()
	}
	to, err := strconv.Atoi(m[4])
	if err != nil {
		return m[0] + ": " + err.Error()
	}
	if to <= from {
		return m[0] + " is no range"
	}
	var missing []string
	for n := from; n <= to; n++ {
		id := "FR-" + m[1] + "-" + strconv.Itoa(n)
		if !reqs.defined[id] && !reqs.unassigned[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return m[0] + " spans " + strings.Join(missing, ", ") + ", not defined in docs/requirements.md"
	}
	return ""
}
