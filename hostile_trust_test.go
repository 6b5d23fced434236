package main

// Bundles validly signed by the site key that attack the transfer station
// and the import through the format-2 additions (gate reports, Go build
// information, the SBOM): each is small on the stick and used to cost the
// real 'airgap verify' and 'airgap import' memory far beyond any bound the
// code states.

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
	"syscall"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// trustRSSLimit is the peak resident memory, in KiB, a verify or import
// of these small bundles may reach: the binary's own (about 35 MiB) plus
// what the stated bounds allow (one 8 MiB build information document per
// worker, buffers), with room for a loaded machine.
const trustRSSLimit = 200 << 10

// runBounded runs airgap with args and fails the test if its peak
// resident memory exceeded trustRSSLimit; it returns the output and exit
// status.
func runBounded(t *testing.T, dir string, args ...string) (string, int) {
	t.Helper()
	return runBoundedEnv(t, dir, baseEnv(), trustRSSLimit, args...)
}

// runBoundedEnv is runBounded with an environment and a limit (KiB) of
// its own.
func runBoundedEnv(t *testing.T, dir string, env []string, limit int64, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(airgapBin, args...)
	cmd.Dir, cmd.Env = dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	resetPeakRSS()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	peak := pollPeakRSS(cmd.Process.Pid)
	err := cmd.Wait()
	rss := <-peak
	if rss == 0 && cmd.ProcessState != nil { // too quick to poll: wait4's figure, at least this process's
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rss = ru.Maxrss
		}
	}
	t.Logf("airgap %s: peak memory %d MiB", args[0], rss>>10)
	if rss > limit {
		t.Errorf("airgap %s: peak memory %d MiB, over the %d MiB a bundle this size may cost", args[0], rss>>10, limit>>10)
	}
	return out.String(), exitCode(err)
}

// pollPeakRSS reads the process's VmHWM (its own peak resident memory, in
// KiB) every 2 ms until it is gone, and sends the last value read. (wait4's
// ru_maxrss would do, but on Linux a child started by a large process
// inherits that process's peak: the test binary's, not airgap's.)
func pollPeakRSS(pid int) <-chan int64 {
	ch := make(chan int64, 1)
	go func() {
		var peak int64
		for {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
			_, hwm, ok := strings.Cut(string(b), "VmHWM:")
			if err != nil || !ok { // exited (a zombie has no memory left)
				ch <- peak
				return
			}
			var kb int64
			fmt.Sscan(hwm, &kb)
			peak = max(peak, kb)
			time.Sleep(2 * time.Millisecond)
		}
	}()
	return ch
}

// expectRefused runs verify and import of path; both must refuse it with
// every string of want and a hint, within trustRSSLimit, and leave the
// store at root as it was.
func expectRefused(t *testing.T, work, keyring, root, path string, want ...string) {
	t.Helper()
	before := bundletest.Snapshot(t, root)
	out, code := runBounded(t, work, "verify", "--keyring", keyring, path)
	if code != 1 {
		t.Errorf("verify accepted it (exit %d):\n%s", code, out)
	}
	for _, s := range append(want, "hint:") {
		if !strings.Contains(out, s) {
			t.Errorf("verify's message lacks %q:\n%s", s, out)
		}
	}
	out, code = runBounded(t, work, "import", "--keyring", keyring, "--store", root, path)
	if code != 1 {
		t.Errorf("import accepted it (exit %d):\n%s", code, out)
	}
	for _, s := range append(want, "hint:", "the store was not changed") {
		if !strings.Contains(out, s) {
			t.Errorf("import's message lacks %q:\n%s", s, out)
		}
	}
	bundletest.SameTree(t, before, bundletest.Snapshot(t, root))
}

// trustWorld is a site key (its public key in keyring), the Standard set
// of bundletest, and a store at root that imported it.
func trustWorld(t *testing.T) (work string, site *openpgp.Entity, keyring, root string, set *bundletest.Set) {
	t.Helper()
	work = t.TempDir()
	site = bundletest.Key(t, "site")
	keyring = filepath.Join(work, "site.pub.asc")
	bundletest.WriteFile(t, keyring, []byte(bundletest.Armor(t, site)))
	set = bundletest.Standard(t, work, site)
	root = filepath.Join(work, "store")
	seed := filepath.Join(work, "seed.bundle")
	set.WriteBundleFile(t, seed, site, bundle.CompressionAuto)
	mustRun(t, work, nil, airgapBin, "import", "--keyring", keyring, "--store", root, seed)
	return work, site, keyring, root, set
}

// TestHostileSARIFNesting: a gate report that is SARIF with one value
// nested 12 million levels deep (24 MiB, under MaxReportSize; the bundle
// is a few KiB). Counting its findings skipped the value token by token,
// and json.Decoder keeps a word per open level: verify and import each
// took about 450 MiB to accept it (a 64 MiB report: over 1 GiB). Now a
// value nested deeper than dist.MaxSARIFDepth is not SARIF, so the result
// that records findings for it is refused, in bounded memory.
func TestHostileSARIFNesting(t *testing.T) {
	work, site, keyring, root, set := trustWorld(t)
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
	expectRefused(t, work, keyring, root, path,
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
	return zipProvider(t, dir, pub, typ, plats, func(zw *zip.Writer, plat string) {
		rawFile(t, zw, "terraform-provider-"+typ+"_v1.0.0", raw)
		w, _ := zw.Create("README")
		fmt.Fprintf(w, "platform %s\n", strings.TrimPrefix(plat, "fat_"))
	})
}

// rawDeflated is a file's bytes deflated once, to be written into many
// zips (rawFile).
type rawDeflated struct {
	packed []byte
	crc    uint32
	size   int
}

func deflatedFile(b []byte) rawDeflated {
	var packed bytes.Buffer
	fw, _ := flate.NewWriter(&packed, flate.BestCompression)
	fw.Write(b)
	fw.Close()
	return rawDeflated{packed.Bytes(), crc32.ChecksumIEEE(b), len(b)}
}

// rawFile adds an executable file of already deflated bytes to zw.
func rawFile(t *testing.T, zw *zip.Writer, name string, f rawDeflated) {
	t.Helper()
	h := &zip.FileHeader{Name: name, Method: zip.Deflate, Modified: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC),
		CRC32: f.crc, CompressedSize64: uint64(len(f.packed)), UncompressedSize64: uint64(f.size)}
	h.SetMode(0o755)
	w, err := zw.CreateRaw(h)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(f.packed)
}

// zipProvider writes registry.terraform.io/hashicorp/TYPE 1.0.0 for the
// platforms (os_arch), each zip's files written by fill, with SHA256SUMS
// signed by pub.
func zipProvider(t *testing.T, dir string, pub *openpgp.Entity, typ string, plats []string, fill func(zw *zip.Writer, plat string)) *bundletest.BuiltProvider {
	t.Helper()
	bp := &bundletest.BuiltProvider{Dir: dir, Files: map[string]string{}}
	pv := dist.ProviderVersion{Host: "registry.terraform.io", Namespace: "hashicorp", Type: typ, Version: "1.0.0", Protocols: []string{"5.0"}}
	var sums bytes.Buffer
	for _, plat := range plats {
		osName, arch, _ := strings.Cut(plat, "_")
		fn := "terraform-provider-" + typ + "_1.0.0_" + plat + ".zip"
		var z bytes.Buffer
		zw := zip.NewWriter(&z)
		fill(zw, plat)
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, fn)
		bundletest.WriteFile(t, p, z.Bytes())
		h1, err := dist.H1(p)
		if err != nil {
			t.Fatal(err)
		}
		d := verify.DigestBytes(z.Bytes())
		pv.Packages = append(pv.Packages, dist.Package{OS: osName, Arch: arch, Filename: fn, Digest: d, Size: int64(z.Len()), H1: h1})
		fmt.Fprintf(&sums, "%s  %s\n", d.Hex(), fn)
		bp.Files[fn] = p
	}
	pv.ShasumsName = "terraform-provider-" + typ + "_1.0.0_SHA256SUMS"
	var sig bytes.Buffer
	if err := verify.SignDetachedAt(&sig, pub, bytes.NewReader(sums.Bytes()), time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	bp.Files[pv.ShasumsName] = filepath.Join(dir, pv.ShasumsName)
	bp.Files[pv.ShasumsName+".sig"] = bp.Files[pv.ShasumsName] + ".sig"
	bundletest.WriteFile(t, bp.Files[pv.ShasumsName], sums.Bytes())
	bundletest.WriteFile(t, bp.Files[pv.ShasumsName+".sig"], sig.Bytes())
	pv.Shasums, pv.ShasumsSig = verify.DigestBytes(sums.Bytes()), verify.DigestBytes(sig.Bytes())
	pv.SigningKeys = []dist.SigningKey{{KeyID: verify.KeyID(pub), ASCIIArmor: bundletest.Armor(t, pub)}}
	bp.ProviderVersion = pv
	return bp
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
		out, code := runBounded(t, work, "verify", "--keyring", keyring, path)
		if code != 0 || !strings.Contains(out, "100 Go build information documents read again") {
			t.Errorf("verify (exit %d):\n%s", code, out)
		}
		out, code = runBounded(t, work, "import", "--keyring", keyring, "--store", root, path)
		if code != 0 {
			t.Errorf("import (exit %d):\n%s", code, out)
		}
	})

	t.Run("SBOM over the build information it may describe: refused before reading", func(t *testing.T) {
		few := *bp
		few.Packages = bp.Packages[:40]
		path := sbomBundle(t, work, site, &few)
		expectRefused(t, work, keyring, root, path, "the bundle's SBOM", "the Go build information of its packages is over")
	})

	t.Run("SBOM over the modules it may list: refused", func(t *testing.T) {
		tiny := fatProvider(t, filepath.Join(work, "tiny"), pub, "tiny", 280, fatPlugin(4999, true))
		path := sbomBundle(t, work, site, tiny)
		expectRefused(t, work, keyring, root, path, "the bundle's SBOM", fmt.Sprintf("lists over %d modules", check.MaxSBOMModules))
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
	work, site, keyring, root, set := trustWorld(t)
	report := `{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"trivy"}},"results":[]}]}`
	set.AddGate(t, work, dist.Gate{Name: "trivy", For: dist.GateModules, Command: []string{"trivy", "config", "{dir}"}, Tool: "Version: 0.74.0"},
		dist.GateResult{Status: dist.GatePassed, Findings: &dist.GateFindings{}}, []byte(report))
	m := set.Manifest(t)
	m.Catalog.Modules[0].Gates[0].ReportBytes = 1
	path := filepath.Join(work, "report-bytes.bundle")
	bundletest.WriteSignedManifest(t, path, m, set.Files, site)
	expectRefused(t, work, keyring, root, path, "module registry.terraform.io/example/vpc/aws 1.0.0",
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
	work, site, keyring, _, _ := trustWorld(t)
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

	cmd := exec.Command(airgapBin, "verify", "--keyring", keyring, path)
	cmd.Env = append(os.Environ(), "TMPDIR="+small)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "cannot be checked here") || !strings.Contains(string(out), "hint: point TMPDIR") {
		t.Errorf("verify with a spool disk smaller than the package (%v):\n%s", err, out)
	}
	t.Logf("verify: %s", out)
	root := filepath.Join(small, "store")
	out2, code := runBounded(t, work, "import", "--keyring", keyring, "--store", root, path)
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
