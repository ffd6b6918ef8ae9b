package infracheck

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// routes are the handler's registrations with the protocol layer: envelope
// functions by name (with their trigger kind) and forwarded path prefixes.
type routes struct {
	envelope map[string]string // function name → invoke trigger constant, e.g. "ServiceBusTrigger"
	forward  []string
}

// handlerRoutes reads the calls mux.Handle("name", invoke.XTrigger, fn),
// mux.HandleTrigger("name", invoke.XTrigger, binding, fn) and
// mux.Forward("/prefix/", h) in the handler's sources (handler/ and
// internal/, tests and the dev host's test handler excepted). Names may be
// string literals, string constants of the same package, or pkg.Const
// constants of another scanned package.
func handlerRoutes(roots ...string) (routes, error) {
	r := routes{envelope: map[string]string{}}
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	consts := map[string]map[string]string{} // package name → constant → value
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "testdata" && path != root || strings.Contains(filepath.ToSlash(path), "internal/local/devhost") {
					return filepath.SkipDir
				}
				return nil
			}
			if filepath.Ext(path) != ".go" || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			file, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			files[path] = file
			collectStringConsts(file, consts)
			return nil
		})
		if err != nil {
			return r, err
		}
	}
	var errs []error
	for _, file := range files {
		errs = append(errs, readRoutes(fset, file, consts, &r))
	}
	return r, errors.Join(errs...)
}

func collectStringConsts(file *ast.File, consts map[string]map[string]string) {
	pkg := file.Name.Name
	if consts[pkg] == nil {
		consts[pkg] = map[string]string{}
	}
	for _, decl := range file.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if v, err := strconv.Unquote(lit.Value); err == nil {
						consts[pkg][n.Name] = v
					}
				}
			}
		}
	}
}

func readRoutes(fset *token.FileSet, file *ast.File, consts map[string]map[string]string, r *routes) error {
	var errs []error
	value := func(e ast.Expr) (string, bool) {
		switch v := e.(type) {
		case *ast.BasicLit:
			if v.Kind == token.STRING {
				s, err := strconv.Unquote(v.Value)
				return s, err == nil
			}
		case *ast.Ident:
			s, ok := consts[file.Name.Name][v.Name]
			return s, ok
		case *ast.SelectorExpr:
			if pkg, ok := v.X.(*ast.Ident); ok {
				s, ok := consts[pkg.Name][v.Sel.Name]
				return s, ok
			}
		}
		return "", false
	}
	ast.Inspect(file, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		switch {
		case sel.Sel.Name == "Handle" && len(call.Args) == 3, sel.Sel.Name == "HandleTrigger" && len(call.Args) == 4:
			trig, ok := call.Args[1].(*ast.SelectorExpr)
			if !ok || !strings.HasSuffix(trig.Sel.Name, "Trigger") {
				return true
			}
			name, ok := value(call.Args[0])
			if !ok {
				errs = append(errs, fmt.Errorf("%s: Handle with a function name that is not a string literal or constant", fset.Position(call.Pos())))
				return true
			}
			r.envelope[name] = trig.Sel.Name
		case sel.Sel.Name == "Forward" && len(call.Args) == 2:
			if prefix, ok := value(call.Args[0]); ok {
				r.forward = append(r.forward, prefix)
			}
		}
		return true
	})
	return errors.Join(errs...)
}

func TestHandlerRoutes(t *testing.T) {
	t.Parallel()
	r, err := handlerRoutes("testdata/handler")
	if err != nil {
		t.Fatal(err)
	}
	if r.envelope["ingest-process"] != "ServiceBusTrigger" || r.envelope["nightly-summaries"] != "TimerTrigger" || len(r.forward) != 1 || r.forward[0] != "/api/" {
		t.Errorf("handlerRoutes(testdata/handler) = %+v", r)
	}
}
