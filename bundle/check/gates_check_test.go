package check_test

// Gate results, build information and the SBOM against a hostile signer:
// a manifest signed by the site key that says something its blobs do not.

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/report"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/goinfo"
	"github.com/airgap/airgap/dist/sbom"
	"github.com/airgap/airgap/dist/sbom/sbomtest"
	"github.com/airgap/airgap/verify"
)

const (
	sarifOneError = `{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"trivy"}},"results":[{"ruleId":"AWS-0107","level":"error","message":{"text":"open"}}]}]}`
	sarifNone     = `{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"govulncheck"}},"results":[]}]}`
)

// gatedSet is bundletest.Standard with build information, an SBOM, a gate
// over modules (waived: one error, exit 1) and one over providers (passed).
func gatedSet(t *testing.T, site *openpgp.Entity) (*bundletest.Set, string) {
	t.Helper()
	dir := t.TempDir()
	set := bundletest.Standard(t, dir, site)
	set.AddBuildInfo(t, dir)
	set.AddGate(t, dir, dist.Gate{Name: "trivy", For: dist.GateModules, Command: []string{"trivy", "config", "{dir}"}, Tool: "Version: 0.74.0"},
		dist.GateResult{Status: dist.GateWaived, ExitCode: 1, Findings: &dist.GateFindings{Error: 1}, Waiver: "AWS-0107 accepted"}, []byte(sarifOneError))
	set.AddGate(t, dir, dist.Gate{Name: "govulncheck", For: dist.GateProviders, Command: []string{"govulncheck", "-mode=binary", "{binary}"}, Tool: "Scanner: govulncheck@v1.9.0", FailLevel: "error"},
		dist.GateResult{Status: dist.GatePassed, ExitCode: 0, Findings: &dist.GateFindings{}}, []byte(sarifNone))
	set.SBOM = true
	return set, dir
}

// checkManifest writes m (signed by site, whatever it says) with files and
// runs verify's check.
func checkManifest(t *testing.T, m *bundle.Manifest, files map[verify.Digest]string, site *openpgp.Entity) (*report.Report, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "b.bundle")
	bundletest.WriteSignedManifest(t, path, m, files, site)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep := &report.Report{}
	return rep, report.Check(f, openpgp.EntityList{site}, rep)
}

// clone deep-copies a manifest through its JSON.
func clone(t *testing.T, m *bundle.Manifest) *bundle.Manifest {
	b, _ := m.Marshal()
	var c bundle.Manifest
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

func TestCheckGatesAndSBOM(t *testing.T) {
	site := bundletest.Key(t, "site")
	set, dir := gatedSet(t, site)
	m := set.Manifest(t)
	rep, err := checkManifest(t, m, set.Files, site)
	if err != nil {
		t.Fatalf("the honest bundle: %v", err)
	}
	c := rep.Checks
	if c.SBOM != "checked" || c.Reports != 2 || c.BuildInfo != 4 {
		t.Fatalf("report: SBOM %q, %d reports, %d build information documents", c.SBOM, c.Reports, c.BuildInfo)
	}
	var sb bytes.Buffer
	if err := c.WriteSBOM(&sb); err != nil {
		t.Fatal(err)
	}
	sbomtest.Validate(t, sb.Bytes())
	if verify.DigestBytes(sb.Bytes()) != m.SBOM {
		t.Fatal("the checked SBOM is not the signed one")
	}
	text := rep.Text()
	for _, want := range []string{"  trivy over every module (Version: 0.74.0)", "gate trivy: waived (exit 1, 1 error), waived: AWS-0107 accepted",
		"gate govulncheck on linux_amd64: passed (exit 0, no findings)", "! gate waived: module ", "identical to the signed one"} {
		if !strings.Contains(text, want) {
			t.Errorf("verify's text lacks %q:\n%s", want, text)
		}
	}

	// Each lie, signed by the site key, is refused by name.
	otherDoc := goinfo.Encode(&goinfo.Info{File: "terraform-provider-random_v3.6.0", None: goinfo.NonePre118})
	otherPath := filepath.Join(dir, "other-build-info")
	os.WriteFile(otherPath, otherDoc, 0o644)
	for _, c := range []struct {
		name string
		edit func(m *bundle.Manifest, files map[verify.Digest]string)
		want string
	}{
		{"result of a gate not listed", func(m *bundle.Manifest, _ map[verify.Digest]string) {
			m.Catalog.Modules[0].Gates[0].Gate = "ghost"
			m.Gates = m.Gates[:1] // govulncheck only
		}, "which the bundle does not list"},
		{"result on the wrong kind of entry", func(m *bundle.Manifest, _ map[verify.Digest]string) {
			p := &m.Catalog.Providers[0].Packages[0]
			p.Gates = append(p.Gates, m.Catalog.Modules[0].Gates[0])
		}, "which runs over modules"},
		{"an entry without the gate's result", func(m *bundle.Manifest, _ map[verify.Digest]string) {
			m.Catalog.Providers[1].Packages[1].Gates = nil
		}, "has no result of gate govulncheck"},
		{"findings that disagree with the SARIF report", func(m *bundle.Manifest, _ map[verify.Digest]string) {
			m.Catalog.Modules[0].Gates[0].Findings = &dist.GateFindings{Warning: 1}
		}, "but its SARIF report has 1 error"},
		{"a failed result recorded as passed", func(m *bundle.Manifest, _ map[verify.Digest]string) {
			r := &m.Catalog.Providers[0].Packages[0].Gates[0]
			r.Findings = &dist.GateFindings{Error: 2}
		}, "recorded as passed, but exit status 0 with 2 error fails it"},
		{"a passing result recorded as waived", func(m *bundle.Manifest, _ map[verify.Digest]string) {
			r := &m.Catalog.Modules[0].Gates[0]
			r.ExitCode, r.Findings = 0, &dist.GateFindings{}
		}, "recorded as waived, but exit status 0"},
		{"another tool than the gate ran", func(m *bundle.Manifest, _ map[verify.Digest]string) {
			m.Catalog.Modules[0].Gates[0].Tool = "Version: 0.1.0"
		}, "but the gate ran"},
		{"build information that is not the plugin's", func(m *bundle.Manifest, files map[verify.Digest]string) {
			d := verify.DigestBytes(otherDoc)
			files[d] = otherPath
			old := m.Catalog.Providers[0].Packages[0].BuildInfo
			m.Catalog.Providers[0].Packages[0].BuildInfo = d
			for i := range m.Blobs {
				if m.Blobs[i].Digest == old {
					m.Blobs[i] = bundle.Blob{Digest: d, Size: int64(len(otherDoc)), Role: dist.RoleGoBuildInfo}
				}
			}
			m.Normalize()
		}, "but its plugin's is"},
		{"an SBOM of something else", func(m *bundle.Manifest, files map[verify.Digest]string) {
			m.Tool = "airgap other" // the SBOM names the tool: this one is not of this manifest
		}, "it does not describe this bundle"},
		{"an SBOM with a package lacking build information", func(m *bundle.Manifest, _ map[verify.Digest]string) {
			old := m.Catalog.Providers[0].Packages[0].BuildInfo
			m.Catalog.Providers[0].Packages[0].BuildInfo = ""
			if _, used := m.Catalog.Blobs()[old]; !used {
				for i, b := range m.Blobs {
					if b.Digest == old {
						m.Blobs = append(m.Blobs[:i], m.Blobs[i+1:]...)
						break
					}
				}
			}
		}, "has an SBOM but no Go build information"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := clone(t, m)
			files := map[verify.Digest]string{}
			for d, p := range set.Files {
				files[d] = p
			}
			c.edit(bad, files)
			_, err := checkManifest(t, bad, files, site)
			if !errors.Is(err, bundle.ErrInconsistent) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want the bundle refused as inconsistent, saying %q; got %v", c.want, err)
			}
		})
	}
}

// The SBOM's generator version: a bundle written before it was recorded
// (absent: generator 1) checks as before; one from a newer generator is
// refused with what to do, not as a lie; the field without an SBOM is.
func TestSBOMGenerator(t *testing.T) {
	site := bundletest.Key(t, "site")
	set, _ := gatedSet(t, site)
	m := set.Manifest(t)
	if m.SBOMGenerator != sbom.Generator {
		t.Fatalf("an SBOM written as generator %d, want %d", m.SBOMGenerator, sbom.Generator)
	}
	old := clone(t, m)
	old.SBOMGenerator = 0
	if rep, err := checkManifest(t, old, set.Files, site); err != nil || rep.Checks.SBOM != "checked" {
		t.Fatalf("a bundle without sbom_generator: %v (SBOM %q)", err, rep.Checks.SBOM)
	}
	newer := clone(t, m)
	newer.SBOMGenerator = sbom.Generator + 1
	_, err := checkManifest(t, newer, set.Files, site)
	if err == nil || !strings.Contains(err.Error(), "written by a newer airgap") || !strings.Contains(err.Error(), "hint:") {
		t.Fatalf("an SBOM of a newer generator: %v", err)
	}
	bare := clone(t, m)
	bare.SBOM = ""
	for i, b := range bare.Blobs {
		if b.Role == dist.RoleSBOM {
			bare.Blobs = append(bare.Blobs[:i], bare.Blobs[i+1:]...)
			break
		}
	}
	if err := bare.Validate(); err == nil || !strings.Contains(err.Error(), "no SBOM") {
		t.Fatalf("sbom_generator without an SBOM: %v", err)
	}
}

// What Validate refuses before anything is read: a report blob no result
// names, roles and fields that a format-1 manifest cannot have, a report
// that is not SARIF with findings recorded.
func TestManifestGateFields(t *testing.T) {
	site := bundletest.Key(t, "site")
	set, dir := gatedSet(t, site)
	m := set.Manifest(t)

	stray := []byte("a report nobody names\n")
	sp := filepath.Join(dir, "stray")
	os.WriteFile(sp, stray, 0o644)
	bad := clone(t, m)
	bad.Blobs = append(bad.Blobs, bundle.Blob{Digest: verify.DigestBytes(stray), Size: int64(len(stray)), Role: dist.RoleGateReport})
	bad.Normalize()
	files := map[verify.Digest]string{verify.DigestBytes(stray): sp}
	for d, p := range set.Files {
		files[d] = p
	}
	if _, err := checkManifest(t, bad, files, site); err == nil || !strings.Contains(err.Error(), "not used by the catalog") {
		t.Errorf("a report blob no result names: %v", err)
	}

	old := clone(t, m)
	old.Format = 1
	if err := old.Validate(); err == nil || !strings.Contains(err.Error(), "format-1") {
		t.Errorf("a format-1 manifest with gates and an SBOM: %v", err)
	}

	text := []byte("plain text report\n")
	tp := filepath.Join(dir, "text")
	os.WriteFile(tp, text, 0o644)
	notSARIF := clone(t, m)
	r := &notSARIF.Catalog.Modules[0].Gates[0]
	oldReport := r.Report
	r.Report, r.ReportBytes = verify.DigestBytes(text), int64(len(text))
	for i := range notSARIF.Blobs {
		if notSARIF.Blobs[i].Digest == oldReport {
			notSARIF.Blobs[i] = bundle.Blob{Digest: r.Report, Size: r.ReportBytes, Role: dist.RoleGateReport}
		}
	}
	notSARIF.Normalize()
	files[r.Report] = tp
	if _, err := checkManifest(t, notSARIF, files, site); !errors.Is(err, bundle.ErrInconsistent) || !strings.Contains(err.Error(), "but its report is not SARIF") {
		t.Errorf("findings recorded for a report that is not SARIF: %v", err)
	}
}

// CountSARIF: levels, the default level, and what is not SARIF.
func TestCountSARIF(t *testing.T) {
	for _, c := range []struct {
		doc  string
		want string // "" for not SARIF
	}{
		{sarifOneError, "1 error"},
		{sarifNone, "no findings"},
		{`{"runs":[{"results":[{"level":"note"},{},{"level":"none"}]}],"version":"2.1.0"}`, "1 warning, 1 note, 1 none"},
		{`{"version":"2.1.0","runs":[{"results":[{"level":"fatal"}]}]}`, ""},
		{`{"version":"2.0.0","runs":[]}`, ""},
		{`{"version":"2.1.0"}`, ""},
		{`{"version":"2.1.0","runs":[]} trailing`, ""},
		{`not json at all`, ""},
		{`{"version":"2.1.0","runs":[{"results":[{"level":"error"}`, ""},
	} {
		f, ok := dist.CountSARIF(strings.NewReader(c.doc))
		switch {
		case c.want == "" && ok:
			t.Errorf("%s: taken as SARIF (%s)", c.doc, f)
		case c.want != "" && (!ok || f.String() != c.want):
			t.Errorf("%s: %v %v, want %s", c.doc, f, ok, c.want)
		}
	}
}
