package harness

import (
	"os"
	"path/filepath"
	"sync"
)

var root = sync.OnceValue(func() string {
	dir, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && len(b) > 0 && string(b[:len("module github.com/airgap/airgap\n")]) == "module github.com/airgap/airgap\n" {
			return d
		}
		if filepath.Dir(d) == d {
			panic("harness: no airgap go.mod above " + dir)
		}
	}
})

// Root is the repository's top directory. The end-to-end tests run in
// their own package directories under testdata/e2e, so whatever they read
// or build from the repository (README.md, docs/, server/deploy/, the
// Makefile, testdata/) they find through it.
func Root() string { return root() }
