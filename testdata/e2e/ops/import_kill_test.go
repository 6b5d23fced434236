package ops

import (
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/testdata/e2e/harness"
	"github.com/airgap/airgap/verify"
)

func TestImportSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	work := t.TempDir()
	signer := bundletest.Key(t, "site")
	pub, _ := verify.PublicArmor(signer)
	keyring := filepath.Join(work, "site.pub.asc")
	os.WriteFile(keyring, []byte(pub), 0o644)

	seed := bundletest.Standard(t, filepath.Join(work, "seed"), signer)
	seedBundle := filepath.Join(work, "seed.bundle")
	seed.WriteBundleFile(t, seedBundle, signer, bundle.CompressionZstd)
	big := bundletest.NewSet()
	for i := 0; i < 16; i++ {
		big.AddProvider(bundletest.BuildProvider(t, filepath.Join(work, "big", fmt.Sprint(i)), bundletest.Provider{
			Host: "registry.terraform.io", Namespace: "example", Type: fmt.Sprintf("p%02d", i), Version: "1.0.0",
			Platforms: []string{"linux_amd64"}, Signer: bundletest.Key(t, "publisher"), PackageSize: 3 << 20,
		}))
	}
	bigBundle := filepath.Join(work, "big.bundle")
	big.WriteBundleFile(t, bigBundle, signer, bundle.CompressionZstd)

	root := filepath.Join(work, "store")
	harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", keyring, "--store", root, seedBundle)
	base := harness.CheckConsistent(t, root)

	// How long a whole import takes, to spread the kills over it: the
	// shorter of two probes (a probe slowed by other tests' load would put
	// most kills after the end).
	var full time.Duration
	for i := 0; i < 2; i++ {
		probe := filepath.Join(work, fmt.Sprint("probe", i))
		start := time.Now()
		harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", keyring, "--store", probe, bigBundle)
		if d := time.Since(start); i == 0 || d < full {
			full = d
		}
	}
	t.Logf("a full import takes %v", full.Round(time.Millisecond))

	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	killedMid := 0
	const runs = 24
	for i := 0; i < runs; i++ {
		cmd := exec.Command(harness.Bin, "import", "--keyring", keyring, "--store", root, bigBundle)
		cmd.Env = harness.BaseEnv()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		delay := time.Duration(rng.Int63n(int64(full) * 11 / 10))
		time.Sleep(delay)
		cmd.Process.Kill()
		err := cmd.Wait()
		if err != nil {
			killedMid++
		}
		n := harness.CheckConsistent(t, root)
		if n != base && n != base+len(big.Files) {
			t.Fatalf("run %d: the index refers to %d blobs: neither before (%d) nor after (%d)", i, n, base, base+len(big.Files))
		}
		if n == base+len(big.Files) {
			// Completed before the kill: start again from the seed only.
			os.Chmod(filepath.Join(root, "blobs", "sha256"), 0o755)
			os.RemoveAll(root)
			harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", keyring, "--store", root, seedBundle)
		}
	}
	if killedMid < runs/2 {
		t.Errorf("only %d of %d imports were killed before finishing; the kills are not exercising the import", killedMid, runs)
	}
	out := harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", keyring, "--store", root, bigBundle)
	if !strings.Contains(out, "imported") && !strings.Contains(out, "already imported") {
		t.Fatalf("re-import after kills: %s", out)
	}
	if n := harness.CheckConsistent(t, root); n != base+len(big.Files) {
		t.Fatalf("after re-import the index refers to %d blobs, want %d", n, base+len(big.Files))
	}
	if ents, _ := os.ReadDir(filepath.Join(root, "tmp")); len(ents) != 0 {
		t.Errorf("tmp/ still holds %d leftovers after a completed import", len(ents))
	}
	t.Logf("%d of %d imports killed mid-way; store consistent after each", killedMid, runs)
}
