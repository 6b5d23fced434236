package harness

import (
	"archive/zip"
	"bytes"
	"fmt"
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
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// trustRSSLimit is the peak resident memory, in KiB, a verify or import
// of these small bundles may reach: the binary's own (about 35 MiB) plus
// what the stated bounds allow (one 8 MiB build information document per
// worker, buffers), with room for a loaded machine.
const trustRSSLimit = 200 << 10

// RunBounded runs airgap with args and fails the test if its peak
// resident memory exceeded trustRSSLimit; it returns the output and exit
// status.
func RunBounded(t *testing.T, dir string, args ...string) (string, int) {
	t.Helper()
	return RunBoundedEnv(t, dir, BaseEnv(), trustRSSLimit, args...)
}

// RunBoundedEnv is runBounded with an environment and a limit (KiB) of
// its own.
func RunBoundedEnv(t *testing.T, dir string, env []string, limit int64, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(Bin, args...)
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
	return out.String(), ExitCode(err)
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

// ExpectRefused runs verify and import of path; both must refuse it with
// every string of want and a hint, within trustRSSLimit, and leave the
// store at root as it was.
func ExpectRefused(t *testing.T, work, keyring, root, path string, want ...string) {
	t.Helper()
	before := bundletest.Snapshot(t, root)
	out, code := RunBounded(t, work, "verify", "--keyring", keyring, path)
	if code != 1 {
		t.Errorf("verify accepted it (exit %d):\n%s", code, out)
	}
	for _, s := range append(want, "hint:") {
		if !strings.Contains(out, s) {
			t.Errorf("verify's message lacks %q:\n%s", s, out)
		}
	}
	out, code = RunBounded(t, work, "import", "--keyring", keyring, "--store", root, path)
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

// TrustWorld is a site key (its public key in keyring), the Standard set
// of bundletest, and a store at root that imported it.
func TrustWorld(t *testing.T) (work string, site *openpgp.Entity, keyring, root string, set *bundletest.Set) {
	t.Helper()
	work = t.TempDir()
	site = bundletest.Key(t, "site")
	keyring = filepath.Join(work, "site.pub.asc")
	bundletest.WriteFile(t, keyring, []byte(bundletest.Armor(t, site)))
	set = bundletest.Standard(t, work, site)
	root = filepath.Join(work, "store")
	seed := filepath.Join(work, "seed.bundle")
	set.WriteBundleFile(t, seed, site, bundle.CompressionAuto)
	MustRun(t, work, nil, Bin, "import", "--keyring", keyring, "--store", root, seed)
	return work, site, keyring, root, set
}

// RawDeflated is a file's bytes deflated once, to be written into many
// zips (rawFile).
type RawDeflated struct {
	Packed []byte
	CRC    uint32
	Size   int
}

// RawFile adds an executable file of already deflated bytes to zw.
func RawFile(t *testing.T, zw *zip.Writer, name string, f RawDeflated) {
	t.Helper()
	h := &zip.FileHeader{Name: name, Method: zip.Deflate, Modified: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC),
		CRC32: f.CRC, CompressedSize64: uint64(len(f.Packed)), UncompressedSize64: uint64(f.Size)}
	h.SetMode(0o755)
	w, err := zw.CreateRaw(h)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(f.Packed)
}

// ZipProvider writes registry.terraform.io/hashicorp/TYPE 1.0.0 for the
// platforms (os_arch), each zip's files written by fill, with SHA256SUMS
// signed by pub.
func ZipProvider(t *testing.T, dir string, pub *openpgp.Entity, typ string, plats []string, fill func(zw *zip.Writer, plat string)) *bundletest.BuiltProvider {
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
