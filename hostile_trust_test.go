package main

// Bundles validly signed by the site key that attack the transfer station
// and the import through the format-2 additions (gate reports, Go build
// information, the SBOM): each is small on the stick and used to cost the
// real 'airgap verify' and 'airgap import' memory far beyond any bound the
// code states.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist"
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
	cmd := exec.Command(airgapBin, args...)
	cmd.Dir, cmd.Env = dir, baseEnv()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
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
	if rss > trustRSSLimit {
		t.Errorf("airgap %s: peak memory %d MiB, over the %d MiB a bundle this size may cost", args[0], rss>>10, trustRSSLimit>>10)
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

// TestHostileSARIFNesting: a gate report that is SARIF with one value
// nested 12 million levels deep (24 MiB, under MaxReportSize; the bundle
// is a few KiB). Counting its findings skipped the value token by token,
// and json.Decoder keeps a word per open level: verify and import each
// took about 500 MiB to accept it (a 64 MiB report: over 1 GiB). Now a value nested deeper than
// dist.MaxSARIFDepth is not SARIF, so the result that records findings
// for it is refused, in bounded memory.
func TestHostileSARIFNesting(t *testing.T) {
	work := t.TempDir()
	site := bundletest.Key(t, "site")
	keyring := filepath.Join(work, "site.pub.asc")
	bundletest.WriteFile(t, keyring, []byte(bundletest.Armor(t, site)))
	set := bundletest.Standard(t, work, site)
	root := filepath.Join(work, "store")
	seed := filepath.Join(work, "seed.bundle")
	set.WriteBundleFile(t, seed, site, bundle.CompressionAuto)
	mustRun(t, work, nil, airgapBin, "import", "--keyring", keyring, "--store", root, seed)
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
