package core

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// originCalls are the calls that reach the origin or hold an origin slot: the next
// handler's ServeHTTP and the limiter's slots.
var originCalls = map[string]bool{
	"next.ServeHTTP": true, "limit.Take": true, "limit.Wait": true, "limit.WaitAfter": true, "limit.TryTake": true,
}

// originFiles are the files that may make them: the gate, and the pass path that writes the
// gate's common case out (ARCHITECTURE.md, "The origin gate").
var originFiles = map[string]bool{"gate.go": true, "pass.go": true}

// parseCore parses the engine's files, tests left out.
func parseCore(t *testing.T) (*token.FileSet, map[string]*ast.File) {
	t.Helper()
	dir := filepath.Join(repoRoot(t), "core")
	matches, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	for _, path := range matches {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Base(path)] = f
	}
	if len(files) == 0 {
		t.Fatalf("no Go file in %s", dir)
	}
	return fset, files
}

// callName is a call's function as "x.F", with x the last name of its receiver's
// expression (h.next.ServeHTTP is "next.ServeHTTP"); "" for any other call.
func callName(c *ast.CallExpr) string {
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	switch x := sel.X.(type) {
	case *ast.Ident:
		return x.Name + "." + sel.Sel.Name
	case *ast.SelectorExpr:
		return x.Sel.Name + "." + sel.Sel.Name
	}
	return ""
}

// TestOneWayToTheOrigin: only the gate and the pass path call the next handler or take an
// origin slot, so that every origin request passes the breaker, pacing and the limiter in
// one place.
func TestOneWayToTheOrigin(t *testing.T) {
	fset, files := parseCore(t)
	for name, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			if ok && originCalls[callName(c)] && !originFiles[name] {
				t.Errorf("%s: %s outside the gate (gate.go, pass.go)", fset.Position(c.Pos()), callName(c))
			}
			return true
		})
	}
}

// TestPassFastPathsAgree: the gate's common case for a request that records nothing (every
// breaker closed, a foreground slot free at once) is written out where a call would cost
// every pass-through request (docs/benchmarks.md, "One path to the origin"): each copy, from the slot taken to the next handler, is the same statements
// as pass's, but for the Cache-Status it answers with (passMarked's is h.passStatusValue,
// pass's its argument cacheStatus).
func TestPassFastPathsAgree(t *testing.T) {
	fset, files := parseCore(t)
	copies := map[string]string{}
	for _, f := range files {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			if fast := fastPath(t, fset, fn.Body.List); fast != "" {
				copies[fn.Name.Name] = strings.ReplaceAll(fast, "h.passStatusValue", "cacheStatus")
			}
		}
	}
	want, ok := copies["pass"]
	if !ok {
		t.Fatal("pass holds no fast path (from limit.Take to next.ServeHTTP)")
	}
	var names []string
	for name := range copies {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if copies[name] != want {
			t.Errorf("%s's fast path differs from pass's:\n%s\nwant:\n%s", name, copies[name], want)
		}
	}
	if len(copies) < 2 {
		t.Logf("one fast path: %v", names)
	}
}

// fastPath is the source of the statements of list from the one that takes a slot with
// limit.Take to the one that calls the next handler; "" when list has no such run.
func fastPath(t *testing.T, fset *token.FileSet, list []ast.Stmt) string {
	start := -1
	for i, st := range list {
		var buf bytes.Buffer
		if err := printer.Fprint(&buf, fset, st); err != nil {
			t.Fatal(err)
		}
		src := buf.String()
		if start < 0 && strings.Contains(src, "limit.Take(") && strings.HasPrefix(src, "slot :=") {
			start = i
		}
		if start >= 0 && strings.Contains(src, "next.ServeHTTP(") {
			var out bytes.Buffer
			for _, s := range list[start : i+1] {
				printer.Fprint(&out, fset, s)
				out.WriteString("\n")
			}
			return out.String()
		}
	}
	return ""
}
