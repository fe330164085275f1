package pbsdirect_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// forbiddenAssertions are the types production code must not discover by
// type assertion (x.(T)) or type switch: a capability of a store or target
// is a named interface declared beside the contract it extends
// (chunkstore/caps.go, restore's target capabilities), so that a new
// backend or target sees what it may implement. Each is keyed by the
// package (relative to the module) that declares the type.
var forbiddenAssertions = map[string][]string{
	"chunkstore": {"*Chain"},
	"restore":    {"Discard", "*Discard"},
}

// assertionViolations returns the forbidden type assertions of one parsed
// file of package rel (relative to the module): to an anonymous interface
// (x.(interface{ … })), or to a type of forbiddenAssertions, whether
// qualified by an import of its package or, inside that package, not. Each
// is "file:line: what".
func assertionViolations(fset *token.FileSet, f *ast.File, rel string) []string {
	// names maps the names this file knows the packages of forbiddenAssertions
	// by to those packages ("" for the file's own package).
	names := map[string]string{}
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			continue
		}
		r, ok := relative(p)
		if _, forbidden := forbiddenAssertions[r]; !ok || !forbidden {
			continue
		}
		name := r[strings.LastIndex(r, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		names[name] = r
	}
	describe := func(typ ast.Expr) string {
		star := ""
		if s, ok := typ.(*ast.StarExpr); ok {
			star, typ = "*", s.X
		}
		switch t := typ.(type) {
		case *ast.InterfaceType:
			if star == "" {
				return "an anonymous interface: name the capability beside the contract it extends"
			}
		case *ast.SelectorExpr:
			if id, ok := t.X.(*ast.Ident); ok {
				if p, ok := names[id.Name]; ok && slices.Contains(forbiddenAssertions[p], star+t.Sel.Name) {
					return fmt.Sprintf("%s%s.%s: state the capability as a named interface", star, id.Name, t.Sel.Name)
				}
			}
		case *ast.Ident:
			if slices.Contains(forbiddenAssertions[rel], star+t.Name) {
				return fmt.Sprintf("%s%s of package %s: state the capability as a named interface", star, t.Name, rel)
			}
		}
		return ""
	}
	var bad []string
	report := func(pos token.Pos, typ ast.Expr) {
		if typ == nil {
			return
		}
		if what := describe(typ); what != "" {
			bad = append(bad, fmt.Sprintf("%s: type assertion to %s", fset.Position(pos), what))
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.TypeAssertExpr:
			report(n.Pos(), n.Type) // nil in a type switch's x.(type)
		case *ast.TypeSwitchStmt:
			for _, c := range n.Body.List {
				for _, typ := range c.(*ast.CaseClause).List {
					report(typ.Pos(), typ)
				}
			}
		}
		return true
	})
	return bad
}

// TestNoForbiddenAssertions parses every non-test Go file of the module and
// fails on a type assertion that assertionViolations forbids, so that a
// capability discovered by an anonymous interface or a concrete type cannot
// come back unnoticed.
func TestNoForbiddenAssertions(t *testing.T) {
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		rel := filepath.ToSlash(filepath.Dir(p))
		if rel == "." {
			rel = ""
		}
		for _, v := range assertionViolations(fset, f, rel) {
			t.Error(v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("parsed only %d non-test Go files: the walk missed the module", files)
	}
}

// TestAssertionViolations shows that assertionViolations catches each
// forbidden kind of type assertion, and leaves named capabilities alone.
func TestAssertionViolations(t *testing.T) {
	const imports = `import (
	"github.com/pbsdirect/pbsdirect/chunkstore"
	rs "github.com/pbsdirect/pbsdirect/restore"
)
`
	tests := []struct {
		name string
		rel  string // the snippet's package, relative to the module
		body string
		want int
	}{
		{"named capability", "snapshot", `func f(s chunkstore.Store) { _, _ = s.(chunkstore.LeftOutReporter) }`, 0},
		{"anonymous interface", "snapshot", `func f(s chunkstore.Store) { _, _ = s.(interface{ LeftOut() []error }) }`, 1},
		{"empty interface", "snapshot", `func f(s any) { _ = s.(interface{}) }`, 1},
		{"chain", "cmd/pbsdirect", `func f(s chunkstore.Store) { _, _ = s.(*chunkstore.Chain) }`, 1},
		{"chain in a type switch", "verify", `func f(s chunkstore.Store) { switch s.(type) { case *chunkstore.Chain, chunkstore.MemberStore: } }`, 1},
		{"anonymous interface in a type switch", "verify", `func f(s any) { switch v := s.(type) { case interface{ Close() error }: _ = v } }`, 1},
		{"discard under another name", "verify", `func f(t rs.Target) { _, _ = t.(rs.Discard); _, _ = t.(*rs.Discard) }`, 2},
		{"discarder capability", "verify", `func f(t rs.Target) { _, _ = t.(rs.Discarder) }`, 0},
		{"discard inside restore", "restore", `func f(t Target) { _, _ = t.(Discard) }`, 1},
		{"a Discard of another package", "verify", `func f(t Target) { _, _ = t.(Discard) }`, 0},
		{"chain inside chunkstore", "chunkstore", `func f(s Store) { _, _ = s.(*Chain) }`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "package p\n" + imports + "var _ = chunkstore.Store(nil)\nvar _ rs.Target\n" + tt.body + "\n"
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "snippet.go", src, 0)
			if err != nil {
				t.Fatal(err)
			}
			got := assertionViolations(fset, f, tt.rel)
			if len(got) != tt.want {
				t.Errorf("got %d violations, want %d: %q", len(got), tt.want, got)
			}
		})
	}
}
