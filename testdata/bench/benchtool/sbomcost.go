package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/goinfo"
	"github.com/airgap/airgap/verify"
)

// sbomCost measures what the SBOM costs on a bundle's packages, one after
// the other on one core, in CPU time (user + system, getrusage), not wall
// time: the figure is the difference of two passes of about the same
// length, and on a shared machine their wall times move by more than that
// difference (a 4-package sample scaled to 60 made 2.5 % read as 15 %): the h1 hash alone (dist.H1), the h1 with the Go
// build information read in the same pass (check.ScanPackage: what export
// and the bundle check compute), and building the SBOM (check.BuildSBOM)
// from the build information the bundle carries. It prints
// "H1_S SCAN_S SBOM_S PACKAGES BYTES", the hash times for all the
// catalog's packages.
//
// The packages and build-information blobs are blobs/<hex> under blobs (an
// export cache). With sample > 0 only that many packages, spread over the
// catalog, are hashed, and the times are scaled to all by size: the real
// site's packages all carry a plugin of the same shape.
func sbomCost(t *bundletest.Standalone, bundlePath, keyring, blobs string, sample int) {
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
	path := func(d verify.Digest) string { return filepath.Join(blobs, d.Hex()) }
	var pks []dist.Package
	infos := map[verify.Digest]*goinfo.Info{}
	for _, p := range m.Catalog.Providers {
		for _, pk := range p.Packages {
			pks = append(pks, pk)
			if pk.BuildInfo == "" {
				continue
			}
			b, err := os.ReadFile(path(pk.BuildInfo))
			if err != nil {
				t.Fatal(err)
			}
			if infos[pk.Digest], err = goinfo.Decode(b); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Each figure is the best of three, the two ways of hashing taking
	// turns on each package, in CPU time: the machine is shared, and a
	// slow moment should not fall on one side only.
	var all, measured int64
	var tH1, tScan time.Duration
	for i, pk := range pks {
		all += pk.Size
		if sample > 0 && sample < len(pks) && i*sample/len(pks) == (i+1)*sample/len(pks) {
			continue // not one of the sample's evenly spread packages
		}
		measured += pk.Size
		bestH1, bestScan := time.Duration(1<<62), time.Duration(1<<62)
		for range 3 {
			start := cpuTime()
			if _, err := dist.H1(path(pk.Digest)); err != nil {
				t.Fatal(err)
			}
			bestH1 = min(bestH1, cpuTime()-start)
			start = cpuTime()
			if _, _, err := check.ScanPackage(path(pk.Digest)); err != nil {
				t.Fatal(err)
			}
			bestScan = min(bestScan, cpuTime()-start)
		}
		tH1 += bestH1
		tScan += bestScan
	}
	if measured > 0 {
		scale := float64(all) / float64(measured)
		tH1, tScan = time.Duration(float64(tH1)*scale), time.Duration(float64(tScan)*scale)
	}
	tSBOM := time.Duration(1 << 62)
	for range 3 {
		start := cpuTime()
		if _, err := check.BuildSBOM(m, func(pk dist.Package) (*goinfo.Info, bool) { i, ok := infos[pk.Digest]; return i, ok }); err != nil {
			t.Fatal(err)
		}
		tSBOM = min(tSBOM, cpuTime()-start)
	}
	fmt.Printf("%.4f %.4f %.4f %d %d\n", tH1.Seconds(), tScan.Seconds(), tSBOM.Seconds(), len(pks), all)
}

// cpuTime is the process's CPU time so far (user + system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
