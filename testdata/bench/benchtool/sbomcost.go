package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/goinfo"
	"github.com/airgap/airgap/verify"
)

// sbomCost measures what the SBOM costs on a bundle's packages, one after
// the other on one core: the h1 hash alone (dist.H1, what export and the
// check computed before), the h1 with the Go build information read in the
// same pass (bundle.ScanPackage, what they compute now), and building the
// SBOM (bundle.BuildSBOM). It prints "H1_S SCAN_S SBOM_S PACKAGES BYTES".
// The packages' files are blobs/<hex> under blobs, or listed in files (a
// digest -> path JSON map, as bigbundle writes it).
func sbomCost(t *bundletest.Standalone, bundlePath, keyring, blobs, files string) {
	kr, err := verify.ReadKeyringFile(keyring)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(bundlePath)
	if err != nil {
		t.Fatal(err)
	}
	br, err := bundle.NewReader(f, kr)
	if err != nil {
		t.Fatal(err)
	}
	m := br.Manifest()
	br.Close()
	f.Close()
	paths := map[verify.Digest]string{}
	if files != "" {
		b, err := os.ReadFile(files)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &paths); err != nil {
			t.Fatal(err)
		}
	}
	path := func(d verify.Digest) string {
		if p, ok := paths[d]; ok {
			return p
		}
		return filepath.Join(blobs, d.Hex())
	}
	// Each figure is the best of three, the two ways of hashing taking
	// turns on each package: the machine is shared, and a slow moment
	// should not fall on one side only.
	var n int
	var bytes int64
	var tH1, tScan time.Duration
	infos := map[verify.Digest]*goinfo.Info{}
	for _, p := range m.Catalog.Providers {
		for _, pk := range p.Packages {
			n++
			bytes += pk.Size
			bestH1, bestScan := time.Duration(1<<62), time.Duration(1<<62)
			for range 3 {
				start := time.Now()
				if _, err := dist.H1(path(pk.Digest)); err != nil {
					t.Fatal(err)
				}
				bestH1 = min(bestH1, time.Since(start))
				start = time.Now()
				_, info, err := bundle.ScanPackage(path(pk.Digest))
				if err != nil {
					t.Fatal(err)
				}
				bestScan = min(bestScan, time.Since(start))
				infos[pk.Digest] = info
			}
			tH1 += bestH1
			tScan += bestScan
		}
	}
	tSBOM := time.Duration(1 << 62)
	for range 3 {
		start := time.Now()
		if _, err := bundle.BuildSBOM(m, func(pk dist.Package) (*goinfo.Info, bool) { i, ok := infos[pk.Digest]; return i, ok }); err != nil {
			t.Fatal(err)
		}
		tSBOM = min(tSBOM, time.Since(start))
	}
	fmt.Printf("%.4f %.4f %.4f %d %d\n", tH1.Seconds(), tScan.Seconds(), tSBOM.Seconds(), n, bytes)
}
