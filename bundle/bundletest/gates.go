package bundletest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/goinfo"
	"github.com/airgap/airgap/dist/sbom"
	"github.com/airgap/airgap/verify"
)

// AddBuildInfo records every provider package's Go build information, as
// export does: read from the zip (check.ScanPackage), written to dir as a
// blob of role dist.RoleGoBuildInfo, named by the package.
func (s *Set) AddBuildInfo(t testing.TB, dir string) {
	t.Helper()
	for i := range s.Catalog.Providers {
		for j := range s.Catalog.Providers[i].Packages {
			pk := &s.Catalog.Providers[i].Packages[j]
			_, info, err := check.ScanPackage(s.Files[pk.Digest])
			if err != nil {
				t.Fatal(err)
			}
			pk.BuildInfo = s.addBytes(t, dir, goinfo.Encode(info), dist.RoleGoBuildInfo)
		}
	}
}

// AddGate lists gate g and gives every entry of its kind the result r,
// whose report (the bytes report) is written to dir.
func (s *Set) AddGate(t testing.TB, dir string, g dist.Gate, r dist.GateResult, report []byte) {
	t.Helper()
	r.Gate, r.Tool = g.Name, g.Tool
	r.Report = s.addBytes(t, dir, report, dist.RoleGateReport)
	r.ReportBytes = int64(len(report))
	s.Gates = append(s.Gates, g)
	for i := range s.Catalog.Providers {
		for j := range s.Catalog.Providers[i].Packages {
			if g.For == dist.GateProviders {
				pk := &s.Catalog.Providers[i].Packages[j]
				pk.Gates = append(pk.Gates, r)
			}
		}
	}
	for i := range s.Catalog.Modules {
		if g.For == dist.GateModules {
			s.Catalog.Modules[i].Gates = append(s.Catalog.Modules[i].Gates, r)
		}
	}
}

func (s *Set) addBytes(t testing.TB, dir string, b []byte, role string) verify.Digest {
	t.Helper()
	d := verify.DigestBytes(b)
	p := filepath.Join(dir, d.Hex())
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	s.Files[d], s.Roles[d] = p, role
	return d
}

// addSBOM makes m's SBOM from the build information documents of the set
// (check.BuildSBOM, as export does) and lists it.
func (s *Set) addSBOM(t testing.TB, m *bundle.Manifest) {
	t.Helper()
	b, err := check.BuildSBOM(m, func(pk dist.Package) (*goinfo.Info, bool) {
		doc, err := os.ReadFile(s.Files[pk.BuildInfo])
		if err != nil {
			return nil, false
		}
		info, err := goinfo.Decode(doc)
		return info, err == nil
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(s.Files[m.Blobs[0].Digest])
	d := s.addBytes(t, dir, b, dist.RoleSBOM)
	m.SBOM, m.SBOMGenerator = d, sbom.Generator
	m.Blobs = append(m.Blobs, bundle.Blob{Digest: d, Size: int64(len(b)), Role: dist.RoleSBOM})
	m.Normalize()
}
