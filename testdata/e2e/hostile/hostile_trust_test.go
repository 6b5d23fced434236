package hostile

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/testdata/e2e/harness"
	"github.com/airgap/airgap/verify"
)

// TestHostileSARIFNesting: a gate report that is SARIF with one value
// nested 12 million levels deep (24 MiB, under MaxReportSize; the bundle
// is a few KiB). Counting its findings skipped the value token by token,
// and json.Decoder keeps a word per open level: verify and import each
// took about 450 MiB to accept it (a 64 MiB report: over 1 GiB). Now a
// value nested deeper than dist.MaxSARIFDepth is not SARIF, so the result
// that records findings for it is refused, in bounded memory.
func TestHostileSARIFNesting(t *testing.T) {
	work, site, keyring, root, set := harness.TrustWorld(t)
	const depth = 12 << 20
	var report bytes.Buffer
	report.WriteString(`{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"trivy","properties":`)
	report.Write(bytes.Repeat([]byte("["), depth))
	report.Write(bytes.Repeat([]byte("]"), depth))
	report.WriteString(`}},"results":[]}]}`)
	set.AddGate(t, work, dist.Gate{Name: "trivy", For: dist.GateModules, Command: []string{"trivy", "config", "{dir}"}, Tool: "Version: 0.74.0"},
		dist.GateResult{Status: dist.GatePassed, Findings: &dist.GateFindings{}}, report.Bytes())
	path := filepath.Join(work, "nested.bundle")
	set.WriteBundleFile(t, path, site, bundle.CompressionAuto)
	if fi, _ := os.Stat(path); fi.Size() > 4<<20 {
		t.Fatalf("the bundle is %d bytes; the attack is a small one", fi.Size())
	}
	harness.ExpectRefused(t, work, keyring, root, path,
		"module registry.terraform.io/example/vpc/aws 1.0.0", "gate trivy result records no findings, but its report is not SARIF")
}

// fatPlugin is a plugin binary whose Go build information lists n modules
// with 900-byte paths (about n KiB of build information document) or, if
// tiny, with 6-byte paths (33 bytes of document each); highly
// compressible either way.
func fatPlugin(n int, tiny bool) []byte {
	const sentinel = "0w\xaf\x0c\x92t\b\x02A\xe1\xc1\a\xe6\xd6\x18\xe6"
	var l strings.Builder
	l.WriteString("path\texample.com/fat\nmod\texample.com/fat\tv1.0.0\t\n")
	for i := range n {
		if tiny {
			fmt.Fprintf(&l, "dep\tm%05d\tv0\t\n", i)
		} else {
			fmt.Fprintf(&l, "dep\texample.com/%s%05d\tv1.0.0\th1:%s=\n", strings.Repeat("m", 900), i, strings.Repeat("A", 43))
		}
	}
	mod := sentinel + l.String() + "\n" + sentinel[:16]
	b := append([]byte{}, "\xff Go buildinf:"...)
	b = append(b, 8, 2)
	b = append(b, make([]byte, 16)...)
	b = binary.AppendUvarint(b, 8)
	b = append(b, "go1.22.5"...)
	b = binary.AppendUvarint(b, uint64(len(mod)))
	b = append(b, mod...)
	return append(b, make([]byte, 64)...)
}

// fatProvider writes registry.terraform.io/hashicorp/TYPE 1.0.0 for n
// platforms (fat_p000…), each zip the same deflated plugin (fatPlugin,
// compressed once) beside a file that tells them apart, signed by pub.
func fatProvider(t *testing.T, dir string, pub *openpgp.Entity, typ string, n int, plugin []byte) *bundletest.BuiltProvider {
	t.Helper()
	raw := deflatedFile(plugin)
	var plats []string
	for i := range n {
		plats = append(plats, fmt.Sprintf("fat_p%03d", i))
	}
	return harness.ZipProvider(t, dir, pub, typ, plats, func(zw *zip.Writer, plat string) {
		harness.RawFile(t, zw, "terraform-provider-"+typ+"_v1.0.0", raw)
		w, _ := zw.Create("README")
		fmt.Fprintf(w, "platform %s\n", strings.TrimPrefix(plat, "fat_"))
	})
}

func deflatedFile(b []byte) harness.RawDeflated {
	var packed bytes.Buffer
	fw, _ := flate.NewWriter(&packed, flate.BestCompression)
	fw.Write(b)
	fw.Close()
	return harness.RawDeflated{Packed: packed.Bytes(), CRC: crc32.ChecksumIEEE(b), Size: len(b)}
}

// TestHostileBuildInfoMemory: one provider version for 100 platforms, each
// package a 60 KiB zip whose plugin carries 4 MiB of Go build information
// (within goinfo's bounds). The checker kept every package's document in
// memory until the end, SBOM or not: verify and import each reached
// 1.1 GiB with 150 of them in a 36 KiB bundle (and 100 000 platforms fit
// in a manifest). With an SBOM, 40 such packages made the check build an
// SBOM of about 500 MB in memory before comparing it: 3 GiB. Now documents are kept only for a bundle
// with an SBOM, and such a bundle's documents may total at most
// bundle.MaxSBOMSize, which check.Manifest holds before any blob is read.
// Documents of many one-character modules stay under that (280 packages
// of 5000: 46 MB) yet made the check build 1.4 million SBOM components;
// now the modules an SBOM is built from are at most check.MaxSBOMModules,
// counted as the zips stream by.
func TestHostileBuildInfoMemory(t *testing.T) {
	work := t.TempDir()
	site := bundletest.Key(t, "site")
	pub := bundletest.Key(t, "publisher")
	keyring := filepath.Join(work, "site.pub.asc")
	bundletest.WriteFile(t, keyring, []byte(bundletest.Armor(t, site)))
	bp := fatProvider(t, filepath.Join(work, "fat"), pub, "fat", 100, fatPlugin(4000, false))
	root := filepath.Join(work, "store")

	t.Run("no SBOM: imported in bounded memory", func(t *testing.T) {
		set := bundletest.NewSet()
		set.AddProvider(bp)
		set.AddBuildInfo(t, filepath.Join(work, "fat"))
		path := filepath.Join(work, "fat.bundle")
		set.WriteBundleFile(t, path, site, bundle.CompressionAuto)
		fi, _ := os.Stat(path)
		t.Logf("bundle: %d KiB", fi.Size()>>10)
		out, code := harness.RunBounded(t, work, "verify", "--keyring", keyring, path)
		if code != 0 || !strings.Contains(out, "100 plugins read again") {
			t.Errorf("verify (exit %d):\n%s", code, out)
		}
		out, code = harness.RunBounded(t, work, "import", "--keyring", keyring, "--store", root, path)
		if code != 0 {
			t.Errorf("import (exit %d):\n%s", code, out)
		}
	})

	t.Run("SBOM over the build information it may describe: refused before reading", func(t *testing.T) {
		few := *bp
		few.Packages = bp.Packages[:40]
		path := sbomBundle(t, work, site, &few)
		harness.ExpectRefused(t, work, keyring, root, path, "the bundle's SBOM", "the Go build information of its packages is over")
	})

	t.Run("SBOM over the modules it may list: refused", func(t *testing.T) {
		tiny := fatProvider(t, filepath.Join(work, "tiny"), pub, "tiny", 280, fatPlugin(4999, true))
		path := sbomBundle(t, work, site, tiny)
		harness.ExpectRefused(t, work, keyring, root, path, "the bundle's SBOM", fmt.Sprintf("lists over %d modules", check.MaxSBOMModules))
	})
}

// sbomBundle writes a bundle of bp's packages with their build information
// and an SBOM that cannot be theirs (the check must refuse it before it
// could compare).
func sbomBundle(t *testing.T, work string, site *openpgp.Entity, bp *bundletest.BuiltProvider) string {
	t.Helper()
	set := bundletest.NewSet()
	set.AddProvider(bp)
	set.AddBuildInfo(t, bp.Dir)
	m := set.Manifest(t)
	sbom := filepath.Join(t.TempDir(), "sbom.json")
	bundletest.WriteFile(t, sbom, []byte(`{"bomFormat":"CycloneDX"}`))
	m.SBOM = bundletest.FileDigest(t, sbom)
	m.Blobs = append(m.Blobs, bundle.Blob{Digest: m.SBOM, Size: 25, Role: dist.RoleSBOM})
	m.Normalize()
	files := map[verify.Digest]string{m.SBOM: sbom}
	for d, p := range set.Files {
		files[d] = p
	}
	path := filepath.Join(t.TempDir(), "sbom.bundle")
	bundletest.WriteSignedManifest(t, path, m, files, site)
	return path
}

// TestHostileReportBytes: a gate result whose report_bytes is not its
// report's size. Verify and import accepted it, and 'verify --json' showed
// the signed figure (here 1 for a 78-byte report) as the size of the
// report it had checked; now both refuse it.
func TestHostileReportBytes(t *testing.T) {
	work, site, keyring, root, set := harness.TrustWorld(t)
	report := `{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"trivy"}},"results":[]}]}`
	set.AddGate(t, work, dist.Gate{Name: "trivy", For: dist.GateModules, Command: []string{"trivy", "config", "{dir}"}, Tool: "Version: 0.74.0"},
		dist.GateResult{Status: dist.GatePassed, Findings: &dist.GateFindings{}}, []byte(report))
	m := set.Manifest(t)
	m.Catalog.Modules[0].Gates[0].ReportBytes = 1
	path := filepath.Join(work, "report-bytes.bundle")
	bundletest.WriteSignedManifest(t, path, m, set.Files, site)
	harness.ExpectRefused(t, work, keyring, root, path, "module registry.terraform.io/example/vpc/aws 1.0.0",
		fmt.Sprintf("its gate trivy result says its report is 1 bytes, but the report (%s) is %d bytes", m.Catalog.Modules[0].Gates[0].Report.Short(), len(report)))
}

// TestHostileBlobLargerThanDisk: a bundle signed by the site key whose
// package is larger than the disk that would hold it (a hostile one states
// a huge blob of zeros, which zstd packs 32,000:1; an honest one meets a
// small disk). verify refuses before spooling it, and import before
// staging anything: neither fills the disk first, and neither leaves a
// file behind.
func TestHostileBlobLargerThanDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("mounting a small tmpfs needs root (CI runs as root)")
	}
	work, site, keyring, _, _ := harness.TrustWorld(t)
	small := filepath.Join(work, "small")
	os.MkdirAll(small, 0o755)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", small).CombinedOutput(); err != nil {
		t.Fatalf("mounting a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", small).Run() })

	set := bundletest.NewSet()
	set.AddProvider(bundletest.BuildProvider(t, filepath.Join(work, "big"), bundletest.Provider{Host: "registry.terraform.io", Namespace: "hashicorp",
		Type: "big", Version: "1.0.0", Platforms: []string{"linux_amd64"}, Signer: bundletest.Key(t, "publisher"), PackageSize: 12 << 20}))
	path := filepath.Join(work, "big.bundle")
	set.WriteBundleFile(t, path, site, bundle.CompressionAuto)

	cmd := exec.Command(harness.Bin, "verify", "--keyring", keyring, path)
	cmd.Env = append(os.Environ(), "TMPDIR="+small)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "cannot be checked here") || !strings.Contains(string(out), "hint: point TMPDIR") {
		t.Errorf("verify with a spool disk smaller than the package (%v):\n%s", err, out)
	}
	t.Logf("verify: %s", out)
	root := filepath.Join(small, "store")
	out2, code := harness.RunBounded(t, work, "import", "--keyring", keyring, "--store", root, path)
	for _, want := range []string{"do not fit on the disk holding the store", "nothing was staged", "needs about 12", "are free now", "the store was not changed"} {
		if !strings.Contains(out2, want) {
			t.Errorf("import's message lacks %q (exit %d):\n%s", want, code, out2)
		}
	}
	t.Logf("import: %s", out2)
	if left, _ := os.ReadDir(small); len(left) != 0 {
		t.Errorf("left on the small disk: %v", left)
	}
}
