package server_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestSubpackagesDoNotImportServer: the dependency goes one way, from the
// app (package server) to the packages of its concerns (access file,
// certificates, operations, pages), never back: none of their files, tests
// included, imports package server.
func TestSubpackagesDoNotImportServer(t *testing.T) {
	const mod = "github.com/airgap/airgap/"
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "deploy") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || filepath.Dir(path) == "." {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p == mod+"server" {
				t.Errorf("%s imports package server: a sub-package must not depend on the app", path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
