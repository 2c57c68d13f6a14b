package layering_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/internal/layering"
)

// The wire contract's rule: a route's path and a request's query parameters
// are spelled in api alone. Outside it, code names a path by its api
// constant, encodes a query with the request type's Values and reads one
// with its api.Parse*Query, so that a parameter renamed on one side breaks
// the build instead of a user. The relay's own routes are spelled in its
// contract package, relay/relayapi, the same way. Tests and test helpers (spacesdtest, ...)
// are outside the rule: they spell the wire on purpose, to hold it.
func TestContractIsSpelledInAPIOnly(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch d.Name() {
			case ".git", "testdata", "node_modules", "vendor":
				return filepath.SkipDir
			}
			if strings.HasSuffix(d.Name(), "test") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || filepath.Dir(rel) == "api" || filepath.Dir(rel) == filepath.FromSlash(layering.RelayAPI) {
			return nil
		}
		files++
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, rel, src(t, path), parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, v := range contractViolations(fset, f) {
			t.Error(v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("checked %d files under %s: not the module", files, root)
	}
}

// The checker sees each way around the contract.
func TestContractViolationsAreFound(t *testing.T) {
	for _, code := range []string{
		`c.JSON(ctx, "GET", "/v1/windows", nil, nil, &w)`,
		`mux.Handle("/health", h)`,
		`q := url.Values{}`,
		`q := url.Values{"path": {p}}`,
		`q := make(url.Values)`,
		`p := r.URL.Query().Get("path")`,
		`q := r.URL.Query(); use(q)`,
		`p := r.FormValue("path")`,
		`_, err := api.ParseFileStatQuery(url.Values{"path": {p}})`,
	} {
		if len(contractViolations(parse(t, code))) == 0 {
			t.Errorf("%s passed the contract's rule", code)
		}
	}
	for _, code := range []string{
		`c.JSON(ctx, "GET", api.PathWindows, api.WindowsQuery{AppName: a}.Values(), nil, &w)`,
		`q, err := api.ParseFileStatQuery(r.URL.Query())`,
		`o, err := api.ParseStreamQuery(r.URL.Query())`,
		`func (c *Client) url(path string, q url.Values) string { return "" }`,
		`log.Print("/v1 is the prefix of the routes")`,
	} {
		if v := contractViolations(parse(t, code)); len(v) != 0 {
			t.Errorf("%s: %v", code, v)
		}
	}
}

func src(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func parse(t *testing.T, stmt string) (*token.FileSet, *ast.File) {
	t.Helper()
	src := "package p\n\n" + stmt
	if !strings.HasPrefix(stmt, "func ") {
		src = "package p\n\nfunc f() {\n" + stmt + "\n}\n"
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
	return fset, f
}

// contractViolations lists where f spells a path or a query of the
// contract itself.
func contractViolations(fset *token.FileSet, f *ast.File) []string {
	// r.URL.Query() is fine as the argument of an api (or relayapi: the
	// relay's own contract) parser.
	parsed := map[ast.Expr]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok && (isSelector(c.Fun, "api") || isSelector(c.Fun, "relayapi")) && strings.HasPrefix(c.Fun.(*ast.SelectorExpr).Sel.Name, "Parse") {
			for _, a := range c.Args {
				parsed[a] = true
			}
		}
		return true
	})
	systemPaths := []string{api.PathHealth, api.PathCapabilities, api.PathMetrics}
	var bad []string
	at := func(n ast.Node, msg string) { bad = append(bad, fset.Position(n.Pos()).String()+": "+msg) }
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BasicLit:
			if s, err := strconv.Unquote(n.Value); n.Kind == token.STRING && err == nil &&
				(strings.HasPrefix(s, "/v1/") || slices.Contains(systemPaths, s)) {
				at(n, "path "+n.Value+" written as a literal: use its api.Path constant")
			}
		case *ast.CompositeLit:
			if isSelector(n.Type, "url") && n.Type.(*ast.SelectorExpr).Sel.Name == "Values" {
				at(n, "a query built by hand: encode the request's api type with Values")
			}
		case *ast.CallExpr:
			if isIdent(n.Fun, "make") && len(n.Args) > 0 && isSelector(n.Args[0], "url") {
				at(n, "a query built by hand: encode the request's api type with Values")
			}
			fun, ok := n.Fun.(*ast.SelectorExpr)
			switch {
			case !ok:
			case fun.Sel.Name == "Query" && isField(fun.X, "URL") && !parsed[n]:
				at(n, "a query read by hand: read it with the request's api.Parse*Query")
			case fun.Sel.Name == "FormValue" || fun.Sel.Name == "PostFormValue" || fun.Sel.Name == "ParseForm":
				at(n, "a form read by hand ("+fun.Sel.Name+"): read the query with the request's api.Parse*Query")
			}
		}
		return true
	})
	return bad
}

// isSelector says e is pkg.Something.
func isSelector(e ast.Expr, pkg string) bool {
	s, ok := e.(*ast.SelectorExpr)
	return ok && isIdent(s.X, pkg)
}

// isField says e is something.name.
func isField(e ast.Expr, name string) bool {
	s, ok := e.(*ast.SelectorExpr)
	return ok && s.Sel.Name == name
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}
