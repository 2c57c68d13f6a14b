package api_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
)

// Every Kind constant of the package has its meaning in api.Kinds, once:
// docs/errors.md is generated from that list, so a kind left out would
// be a kind nobody can look up.
func TestEveryKindHasAMeaning(t *testing.T) {
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	declared := map[string]bool{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Kind" {
					continue
				}
				for _, v := range vs.Values {
					if lit, ok := v.(*ast.BasicLit); ok {
						declared[strings.Trim(lit.Value, `"`)] = true
					}
				}
			}
		}
	}
	if len(declared) == 0 {
		t.Fatal("found no Kind constants: the test no longer reads the package")
	}
	documented := map[string]bool{}
	for _, k := range api.Kinds() {
		if documented[string(k.Kind)] {
			t.Errorf("kind %s is in api.Kinds twice", k.Kind)
		}
		documented[string(k.Kind)] = true
		if !declared[string(k.Kind)] {
			t.Errorf("api.Kinds lists %s, which is no Kind constant", k.Kind)
		}
		if k.Meaning == "" || api.DefaultHint(k.Kind) == "" {
			t.Errorf("kind %s lacks a meaning or a default hint", k.Kind)
		}
	}
	for k := range declared {
		if !documented[k] {
			t.Errorf("kind %s has no meaning in api.Kinds", k)
		}
	}
}

// Every field of api.Limits is described in api.LimitDocs, in the
// struct's order: docs/api.md's table of limits is generated from it.
func TestEveryLimitIsDescribed(t *testing.T) {
	docs := api.LimitDocs()
	rt := reflect.TypeFor[api.Limits]()
	if rt.NumField() != len(docs) {
		t.Errorf("api.Limits has %d fields, api.LimitDocs describes %d", rt.NumField(), len(docs))
	}
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if i >= len(docs) || docs[i].Name != name || docs[i].Meaning == "" {
			t.Errorf("api.Limits field %s (%q) is not described at position %d of api.LimitDocs", rt.Field(i).Name, name, i)
		}
	}
}
