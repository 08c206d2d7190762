// Command yaegilint reports Go constructs that compile but misbehave in Yaegi v0.16.1, the
// interpreter Traefik runs Weir in. `go vet` cannot see these; each was reproduced (see
// docs/yaegi.md).
//
// Usage: go run ./scripts/yaegilint DIR... where DIR/... also walks the folders below DIR
// (vendor/ and testdata/ are skipped).
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Packages that Yaegi v0.16.1 does not provide.
var missingPackages = map[string]bool{"slices": true, "maps": true, "iter": true, "cmp": true}

func main() {
	fset := token.NewFileSet()
	problems := 0
	report := func(pos token.Pos, format string, args ...interface{}) {
		problems++
		fmt.Printf("%s: %s\n", fset.Position(pos), fmt.Sprintf(format, args...))
	}
	for _, arg := range os.Args[1:] {
		root := strings.TrimSuffix(arg, "/...")
		recursive := root != arg
		err := filepath.Walk(root, func(path string, info os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			if info.IsDir() {
				name := info.Name()
				if path != root && (!recursive || name == "vendor" || name == "testdata" || strings.HasPrefix(name, ".")) {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
			if err != nil {
				return err
			}
			check(f, report)
			if !strings.HasSuffix(path, "_test.go") {
				checkSelects(fset, f, report)
			}
			return nil
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	if problems > 0 {
		fmt.Printf("%d construct(s) that Yaegi v0.16.1 gets wrong\n", problems)
		os.Exit(1)
	}
}

func check(f *ast.File, report func(token.Pos, string, ...interface{})) {
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); missingPackages[p] {
			report(imp.Pos(), "package %s is not in Yaegi v0.16.1's standard library", p)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			checkAssign(n, report)
		case *ast.FuncDecl:
			if n.Type.TypeParams != nil {
				report(n.Pos(), "type parameters: Yaegi v0.16.1 panics on generic code")
			}

		case *ast.GenDecl:
			if n.Tok == token.CONST {
				checkConst(n, report)
			}
		case *ast.TypeSpec:
			if n.TypeParams != nil {
				report(n.Pos(), "type parameters: Yaegi v0.16.1 panics on generic types")
			}
		case *ast.SwitchStmt:
			for _, c := range n.Body.List {
				cc, ok := c.(*ast.CaseClause)
				if !ok {
					continue
				}
				if n.Tag == nil && len(cc.List) > 1 {
					report(cc.Pos(), "a case list in a switch without a tag: Yaegi v0.16.1 evaluates only its first expression; write one case each")
				}
				for _, e := range cc.List {
					if id, ok := e.(*ast.Ident); ok && id.Name == "nil" && n.Tag != nil {
						report(e.Pos(), "case nil in a switch with a tag: Yaegi v0.16.1 never matches a nil pointer with it; compare with == nil")
					}
				}
			}
		case *ast.CommClause:
			if a, ok := n.Comm.(*ast.AssignStmt); ok && a.Tok == token.ASSIGN {
				report(n.Pos(), "a select case assigning a receive to existing variables: Yaegi v0.16.1 panics (reflect.Select: invalid Dir); receive with := and assign in the case")
			}
			if a, ok := n.Comm.(*ast.AssignStmt); ok && len(a.Lhs) == 2 && len(a.Rhs) == 1 {
				if u, ok := a.Rhs[0].(*ast.UnaryExpr); ok && u.Op == token.ARROW {
					if _, ok := u.X.(*ast.SelectorExpr); ok {
						report(n.Pos(), "a select case receiving with ok from a field (case v, ok := <-p.ch): Yaegi v0.16.1 never takes it; copy the channel to a local variable first")
					}
				}
			}
		case *ast.CallExpr:
			if isAbortPanic(n) {
				report(n.Pos(), "panic(http.ErrAbortHandler): Yaegi v0.16.1 hands a panic raised in interpreted code on as a reflect.Value, which net/http and Traefik log as a crash; raise it from compiled code (abortAnswer)")
			}
		case *ast.RangeStmt:
			if lit, ok := n.X.(*ast.BasicLit); ok && lit.Kind == token.INT {
				report(n.Pos(), "range over an integer is not supported by Yaegi v0.16.1")
			}
		}
		return true
	})
}

// sharedSelectMark, in the comment right above a select statement, says that its cases
// being shared was weighed and is borne, and why.
const sharedSelectMark = "yaegilint:shared-select"

// checkSelects flags every select statement of a non-test file but those marked
// sharedSelectMark: Yaegi v0.16.1 keeps one array of cases per select statement, shared by
// every goroutine running it, so a goroutine can wait on, and receive from, another's
// channels (docs/yaegi.md). Weir waits through core/wait instead. Tests are left out: a test
// wait that takes another's channel fails or hangs the test, it never reaches a user.
func checkSelects(fset *token.FileSet, f *ast.File, report func(token.Pos, string, ...interface{})) {
	marked := map[int]bool{}
	for _, g := range f.Comments {
		if strings.Contains(g.Text(), sharedSelectMark) {
			marked[fset.Position(g.End()).Line+1] = true
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectStmt); ok && !marked[fset.Position(sel.Pos()).Line] {
			report(sel.Pos(), "a select statement: Yaegi v0.16.1 shares its cases between every goroutine running it, which can receive from each other's channels; wait with core/wait (Either, EitherValue, Any, Ready, Poke), or mark a select whose sharing is borne with %q and why", sharedSelectMark)
		}
		return true
	})
}

// checkAssign flags the parallel assignments Yaegi v0.16.1 gets wrong:
//   - `a, b = f(), x` (a call beside a non-call, with =, not :=) loses the non-call side's
//     value or the call's;
//   - `a, b = nil, nil` panics with "reflect: New(nil)".
func checkAssign(n *ast.AssignStmt, report func(token.Pos, string, ...interface{})) {
	if n.Tok != token.ASSIGN || len(n.Lhs) < 2 || len(n.Rhs) != len(n.Lhs) {
		return
	}
	calls, nils := 0, 0
	for _, r := range n.Rhs {
		if _, ok := unparen(r).(*ast.CallExpr); ok {
			calls++
		}
		if id, ok := r.(*ast.Ident); ok && id.Name == "nil" {
			nils++
		}
	}
	if calls > 0 && calls < len(n.Rhs) {
		report(n.Pos(), "parallel assignment mixing calls and other values: Yaegi v0.16.1 assigns one side wrong; write one assignment per variable")
	}
	if nils > 1 {
		report(n.Pos(), "parallel assignment of nil values: Yaegi v0.16.1 panics (reflect: New(nil)); write one assignment per variable")
	}
}

// checkConst flags constants declared with a type of the package's own and a value computed
// by an operator (`KindGauge Kind = iota + 1`, `Max Size = 2 << 10`): Yaegi v0.16.1 gives
// such a constant the underlying type, and == then finds it unequal to every value of the
// named type, itself included. The implicit repetitions of such a spec share its flaw and its
// report. A conversion (Kind(2) + 3), a literal (Kind = 1), a bare iota, a predeclared
// type and another package's type (time.Duration) are fine.
func checkConst(n *ast.GenDecl, report func(token.Pos, string, ...interface{})) {
	for _, s := range n.Specs {
		vs, ok := s.(*ast.ValueSpec)
		if !ok {
			continue
		}
		typ, ok := vs.Type.(*ast.Ident)
		if !ok || predeclared[typ.Name] {
			continue
		}
		for _, v := range vs.Values {
			if _, ok := unparen(v).(*ast.BinaryExpr); ok {
				report(v.Pos(), "a constant of type %s computed by an operator: Yaegi v0.16.1 compares it unequal to every %s, itself included; write each value out as a literal", typ.Name, typ.Name)
			}
		}
	}
}

// predeclared are the types Go declares, which constants computed by an operator may have.
var predeclared = map[string]bool{
	"bool": true, "byte": true, "complex64": true, "complex128": true, "float32": true, "float64": true,
	"int": true, "int8": true, "int16": true, "int32": true, "int64": true, "rune": true, "string": true,
	"uint": true, "uint8": true, "uint16": true, "uint32": true, "uint64": true, "uintptr": true,
}

// isAbortPanic tells whether call is panic(http.ErrAbortHandler).
func isAbortPanic(call *ast.CallExpr) bool {
	if id, ok := call.Fun.(*ast.Ident); !ok || id.Name != "panic" || len(call.Args) != 1 {
		return false
	}
	sel, ok := unparen(call.Args[0]).(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "ErrAbortHandler" {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "http"
}

func unparen(e ast.Expr) ast.Expr {
	for {
		p, ok := e.(*ast.ParenExpr)
		if !ok {
			return e
		}
		e = p.X
	}
}
