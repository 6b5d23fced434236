package main

// The layering of airgap's packages, as a test: the allowed graph is
// written once, in layers below, and the test fails when a package imports
// an airgap package its row does not name, when a package has no row, or
// when a row lets a package import one listed after it (a lower layer
// reaching up).

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is the module path every airgap package starts with.
const module = "github.com/airgap/airgap"

// layers is the allowed import graph, lowest layer first: each airgap
// package (its path in the module, "." for the CLI) and the airgap
// packages it may import, each of which must have a row above it. Only
// the packages' own imports count, not their tests'; the end-to-end
// packages under testdata/ are tests and are not listed.
//
// A new package gets a row after the packages it imports. Before widening
// a row, ask whether the import goes against the layers: the dist leaves,
// verify, dist, bundle, bundle/store, server, the CLI.
var layers = []struct{ pkg, may string }{
	// The leaves: no airgap imports.
	{"dist/getter/archivetest", ""},
	{"dist/modzip", ""},
	{"dist/osfile", ""},
	{"dist/portable", ""},
	{"dist/registrytest/fixtureprovider", ""},
	{"dist/registrytest/clistub", ""},
	{"dist/sbom/sbomtest", ""},
	{"dist/zipdir", ""},
	{"server/deploy/image", ""}, // make image: the container image, no airgap imports
	{"verify/verifytest", ""},

	// Signatures and digests.
	{"verify", ""},

	// The distribution formats and the registries' protocols. dist itself
	// sits above verify: its catalog records verify.Digest values.
	{"dist", "verify"},
	{"dist/goinfo", "dist"},
	{"dist/tfconfig", "dist"},
	{"dist/docs", "dist dist/portable"},
	{"dist/sbom", "dist dist/goinfo"},
	{"dist/registry", "dist verify"},
	{"dist/getter", "dist dist/docs dist/portable dist/zipdir"},
	{"dist/vendoring", "dist dist/getter dist/portable dist/tfconfig verify"},

	// The bundle: its format, its check and its report.
	{"bundle/progress", "dist"},
	{"bundle", "bundle/progress dist dist/docs dist/goinfo dist/modzip dist/portable dist/sbom dist/zipdir verify"},
	{"bundle/approval", "bundle dist verify"},
	{"bundle/check", "bundle bundle/approval dist dist/docs dist/goinfo dist/modzip dist/portable dist/sbom dist/zipdir verify"},
	{"bundle/report", "bundle bundle/check bundle/progress dist verify"},
	{"bundle/bundletest", "bundle bundle/check dist dist/goinfo dist/modzip dist/sbom verify"},

	// The offline side's store.
	{"bundle/store", "bundle bundle/approval bundle/check bundle/progress bundle/report dist dist/goinfo dist/osfile dist/sbom dist/zipdir verify"},
	// The store in S3-compatible object storage: beside the directory
	// store, which it imports into first (a scratch directory) and reads.
	{"bundle/store/objstore", "bundle/store verify"},

	// Against the layers: these live under dist/ but stand on bundle and
	// bundle/store (export writes bundles and exports from a store, oci
	// pushes a store, registrytest serves bundletest's fixtures), so they
	// sit here, above the store, not with the rest of dist.
	{"dist/export", "bundle bundle/check bundle/store dist dist/docs dist/getter dist/goinfo dist/modzip dist/osfile dist/registry dist/sbom dist/tfconfig dist/vendoring verify"},
	{"dist/oci", "bundle/store dist verify"},
	{"dist/registrytest", "bundle/bundletest dist dist/getter/archivetest verify"},

	// The appliance.
	{"server/acl", "bundle/store dist dist/osfile"},
	{"server/internal/filestamp", "dist/osfile"},
	{"server/internal/reply", "bundle/store"},
	{"server/certs", "dist/osfile server/internal/filestamp"},
	{"server/ui", "bundle/store dist dist/docs dist/sbom server/acl server/certs verify"},
	{"server/access", "bundle/store dist dist/osfile server/acl server/internal/filestamp server/internal/reply server/ui verify"},
	{"server/ops", "dist server/access server/internal/reply verify"},
	{"server/protocol", "bundle/store dist dist/oci dist/registry server/access server/acl server/internal/filestamp server/internal/reply server/ops server/ui verify"},
	{"server", "bundle bundle/store bundle/store/objstore dist server/access server/acl server/certs server/internal/reply server/ops server/protocol server/ui"},

	// The CLI.
	{".", "bundle bundle/approval bundle/check bundle/progress bundle/report bundle/store bundle/store/objstore dist dist/docs dist/export dist/oci dist/registry dist/tfconfig server server/access server/acl server/certs server/ops server/protocol verify"},
}

func TestLayers(t *testing.T) {
	imports, err := airgapImports()
	if err != nil {
		t.Fatal(err)
	}
	checkLayers(t, imports)
}

// checkLayers reports where imports (each package and the airgap packages
// it imports) and the table disagree, and a table that is not layered.
func checkLayers(t *testing.T, imports map[string][]string) {
	listed := map[string]bool{}
	allowed := map[string]map[string]bool{}
	for _, l := range layers {
		if listed[l.pkg] {
			t.Errorf("layers: %s has two rows; give it one", l.pkg)
		}
		allowed[l.pkg] = map[string]bool{}
		for _, m := range strings.Fields(l.may) {
			if !listed[m] {
				t.Errorf("layers: the row of %s lets it import %s, which has no row above it: the table lists the lowest layer first, and a package may import only packages below it (if %s is new, give it a row above %s)", l.pkg, m, m, l.pkg)
			}
			allowed[l.pkg][m] = true
		}
		listed[l.pkg] = true
		if _, ok := imports[l.pkg]; !ok {
			t.Errorf("layers: %s has a row, but there is no such package (any more): remove its row, or rename it", l.pkg)
		}
	}
	for _, pkg := range slices.Sorted(maps.Keys(imports)) {
		imps := imports[pkg]
		if !listed[pkg] {
			t.Errorf("%s is not in the layering table: add a row for it to layers (in layers_test.go), after the packages it imports, naming the airgap packages it may import (today: %q)", pkg, strings.Join(imps, " "))
			continue
		}
		for _, imp := range imps {
			if !allowed[pkg][imp] {
				t.Errorf("%s imports %s, which its row in layers does not allow: move the code the import is for to a lower layer, or, if the import is right, add %s to the row (only if %s has a row above %s: a lower layer may not import a higher one)", pkg, imp, imp, imp, pkg)
			}
		}
	}
}

// airgapImports lists the module's packages (not those under testdata/)
// with the airgap packages each imports, outside its tests, as 'go list'
// sees them: paths relative to the module, "." for the root.
func airgapImports() (map[string][]string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(goTool, "list", "-json=ImportPath,Imports", module+"/...")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, errors.New("go list: " + err.Error() + "\n" + stderr.String())
	}
	rel := func(path string) (string, bool) {
		if path == module {
			return ".", true
		}
		r, ok := strings.CutPrefix(path, module+"/")
		return r, ok
	}
	imports := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		pkg, ok := rel(p.ImportPath)
		if !ok {
			continue
		}
		imports[pkg] = []string{}
		for _, imp := range p.Imports {
			if r, ok := rel(imp); ok {
				imports[pkg] = append(imports[pkg], r)
			}
		}
	}
	return imports, nil
}
