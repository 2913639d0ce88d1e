package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
)

// usageName is the constant that holds the --help text.
const usageName = "usage"

// usageFromFile returns the value of the package-level string constant
// usageName declared in the Go file at path. The constant must be a single
// string literal: anything else (a concatenation, a reference to another
// constant) is an error rather than a guess.
func usageFromFile(path string) (string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return "", err
	}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if name.Name != usageName {
					continue
				}
				if i >= len(vs.Values) {
					return "", fmt.Errorf("%s: const %s has no value of its own", fset.Position(name.Pos()), usageName)
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return "", fmt.Errorf("%s: const %s is not a single string literal", fset.Position(name.Pos()), usageName)
				}
				return strconv.Unquote(lit.Value)
			}
		}
	}
	return "", fmt.Errorf("%s: no const %s", path, usageName)
}
