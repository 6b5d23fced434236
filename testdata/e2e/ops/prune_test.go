package ops

import (
	"encoding/json"
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
	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
	"github.com/airgap/airgap/verify"
)

// pruneFixture imports one provider in n versions (one platform each) into
// a new store and returns it with the keyring.
func pruneFixture(t *testing.T, work string, n int) (root string) {
	t.Helper()
	signer := bundletest.Key(t, "site")
	pub, _ := verify.PublicArmor(signer)
	keyring := filepath.Join(work, "site.pub.asc")
	os.WriteFile(keyring, []byte(pub), 0o644)
	set := bundletest.NewSet()
	for i := 0; i < n; i++ {
		set.AddProvider(bundletest.BuildProvider(t, filepath.Join(work, "p", fmt.Sprint(i)), bundletest.Provider{
			Host: "registry.terraform.io", Namespace: "example", Type: "many", Version: fmt.Sprintf("1.%d.0", i),
			Platforms: []string{"linux_amd64"}, Signer: bundletest.Key(t, "publisher"), PackageSize: 16 << 10,
		}))
	}
	b := filepath.Join(work, "many.bundle")
	set.WriteBundleFile(t, b, signer, bundle.CompressionZstd)
	root = filepath.Join(work, "store")
	harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", keyring, "--store", root, b)
	return root
}

func readIndexFile(t *testing.T, root string) *store.Index {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ix store.Index
	if err := json.Unmarshal(b, &ix); err != nil {
		t.Fatal(err)
	}
	return &ix
}

// unreferenced counts blobs present that the index does not refer to.
func unreferenced(t *testing.T, root string) int {
	t.Helper()
	inv, err := store.LoadInventory(root)
	if err != nil {
		t.Fatal(err)
	}
	// What the index refers to: the catalog's blobs and those its import
	// history keeps (approvals, the bundles' signed manifests for the
	// chain of custody).
	used := readIndexFile(t, root).Blobs()
	n := 0
	for _, d := range inv.Blobs {
		if _, ok := used[d]; !ok {
			n++
		}
	}
	return n
}

func TestPruneAndGC(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	root := pruneFixture(t, work, 5)
	before := bundletest.Snapshot(t, root)

	out := harness.MustRun(t, work, nil, harness.Bin, "prune", "--store", root, "--keep", "2", "--dry-run")
	if !strings.Contains(out, "would remove provider registry.terraform.io/example/many 1.0.0") || strings.Contains(out, "1.4.0") || !strings.Contains(out, "9 blob(s)") {
		t.Errorf("dry run:\n%s", out)
	}
	bundletest.SameTree(t, before, bundletest.Snapshot(t, root))

	// Wrong requests change nothing and exit 2 (command line) or 1.
	for _, args := range [][]string{{"--keep", "2", "--older-than", "1d"}, {}, {"--older-than", "soon"}} {
		if _, _, code := harness.RunSplit(t, work, nil, append([]string{"prune", "--store", root}, args...)...); code != 2 {
			t.Errorf("prune %v: exit %d, want 2", args, code)
		}
	}
	if _, stderr, code := harness.RunSplit(t, work, nil, "prune", "--store", root, "example/many@9.9.9"); code != 1 || !strings.Contains(stderr, "not in the store") {
		t.Errorf("pruning an absent version: %d %s", code, stderr)
	}
	bundletest.SameTree(t, before, bundletest.Snapshot(t, root))

	out = harness.MustRun(t, work, nil, harness.Bin, "prune", "--store", root, "--keep", "2")
	if !strings.Contains(out, "removed 3 version(s)") {
		t.Errorf("prune:\n%s", out)
	}
	if n := len(readIndexFile(t, root).Catalog.Providers); n != 2 {
		t.Errorf("%d versions after --keep 2", n)
	}
	harness.CheckConsistent(t, root)
	if n := unreferenced(t, root); n != 0 {
		t.Errorf("%d unreferenced blobs left after prune", n)
	}
	out = harness.MustRun(t, work, nil, harness.Bin, "prune", "--store", root, "registry.terraform.io/example/many@1.3.0")
	if !strings.Contains(out, "removed provider registry.terraform.io/example/many 1.3.0") {
		t.Errorf("prune ADDRESS@VERSION:\n%s", out)
	}
	// --older-than: the import was just now, so 1h removes nothing.
	if out := harness.MustRun(t, work, nil, harness.Bin, "prune", "--store", root, "--older-than", "1h"); !strings.Contains(out, "nothing to prune") {
		t.Errorf("--older-than 1h:\n%s", out)
	}
	time.Sleep(1100 * time.Millisecond) // import times are stamped to the second
	if out := harness.MustRun(t, work, nil, harness.Bin, "prune", "--store", root, "--older-than", "0s", "--dry-run"); !strings.Contains(out, "would remove provider registry.terraform.io/example/many 1.4.0") {
		t.Errorf("--older-than 0s:\n%s", out)
	}
	// gc removes stray blobs and temp files, and is recorded.
	stray := store.BlobPath(root, verify.DigestBytes([]byte("stray")))
	os.WriteFile(stray, []byte("stray"), 0o444)
	os.WriteFile(filepath.Join(root, "tmp", "leftover"), []byte("x"), 0o644)
	out = harness.MustRun(t, work, nil, harness.Bin, "gc", "--store", root)
	if !strings.Contains(out, "removed 1 unreferenced blob(s)") || !strings.Contains(out, "1 temporary file(s)") {
		t.Errorf("gc:\n%s", out)
	}
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Error("gc left the stray blob")
	}
	inv := harness.MustRun(t, work, nil, harness.Bin, "inventory", "--store", root)
	for _, w := range []string{"Prune and gc runs:", "prune --keep 2", "removed provider registry.terraform.io/example/many 1.0.0", " gc "} {
		if !strings.Contains(inv, w) {
			t.Errorf("inventory lacks %q:\n%s", w, inv)
		}
	}
}

// TestPruneGCSurviveKill kills the real 'airgap prune' and 'airgap gc' at
// random moments: the index always parses and refers only to present,
// intact blobs, it is either the old or the new catalog, and a re-run
// completes (nothing unreferenced left).
func TestPruneGCSurviveKill(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	work := t.TempDir()
	golden := pruneFixture(t, work, 60)
	cp := func(dst string) string {
		t.Helper()
		if out, err := exec.Command("cp", "-a", golden, dst).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
		return dst
	}
	// A store whose index is already pruned but whose blobs are all there:
	// what gc works on.
	pruned := cp(filepath.Join(work, "pruned"))
	harness.MustRun(t, work, nil, harness.Bin, "prune", "--store", pruned, "--keep", "1")
	prunedIndex, _ := os.ReadFile(filepath.Join(pruned, "index.json"))

	for _, verb := range []string{"prune", "gc"} {
		args := []string{"--keep", "1"}
		if verb == "gc" {
			args = nil
		}
		setup := func(i int) string {
			dir := cp(filepath.Join(work, fmt.Sprintf("%s-%d", verb, i)))
			if verb == "gc" {
				os.WriteFile(filepath.Join(dir, "index.json"), prunedIndex, 0o644)
			}
			return dir
		}
		probe := setup(-1)
		start := time.Now()
		harness.MustRun(t, work, nil, harness.Bin, append([]string{verb, "--store", probe}, args...)...)
		full := time.Since(start)
		t.Logf("a full %s takes %v", verb, full.Round(time.Millisecond))
		rng := rand.New(rand.NewSource(time.Now().UnixNano()))
		killed := 0
		const runs = 12
		for i := 0; i < runs; i++ {
			dir := setup(i)
			cmd := exec.Command(harness.Bin, append([]string{verb, "--store", dir}, args...)...)
			cmd.Env = harness.BaseEnv()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Duration(rng.Int63n(int64(full))))
			cmd.Process.Kill()
			if cmd.Wait() != nil {
				killed++
			}
			harness.CheckConsistent(t, dir)
			if n := len(readIndexFile(t, dir).Catalog.Providers); n != 60 && n != 1 {
				t.Fatalf("%s run %d: %d versions in the index, neither before nor after", verb, i, n)
			}
			harness.MustRun(t, work, nil, harness.Bin, append([]string{verb, "--store", dir}, args...)...)
			harness.CheckConsistent(t, dir)
			if n := len(readIndexFile(t, dir).Catalog.Providers); n != 1 {
				t.Fatalf("%s run %d: re-run left %d versions", verb, i, n)
			}
			if n := unreferenced(t, dir); n != 0 {
				t.Fatalf("%s run %d: re-run left %d unreferenced blobs", verb, i, n)
			}
			os.RemoveAll(dir)
		}
		t.Logf("%s: %d of %d runs killed before they finished; store consistent each time", verb, killed, runs)
		if killed == 0 {
			t.Errorf("no %s run was killed mid-way: the test did not exercise the kill", verb)
		}
	}
}

// TestPruneGCTerraform: a store of random 3.5.1, 3.6.0 and 3.6.2 pruned to
// the newest and collected still serves real terraform init, while a
// project locked to a pruned version fails.
func TestPruneGCTerraform(t *testing.T) {
	t.Parallel()
	tf := harness.TerraformBin(t)
	in := registrytest.World(t)
	online := append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(t.TempDir(), "empty.tfrc"))
	work := t.TempDir()
	keys := filepath.Join(work, "site")
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", keys, "--no-passphrase")
	mf := filepath.Join(work, "airgap.hcl")
	os.WriteFile(mf, []byte("platforms = [\"linux_amd64\"]\nprovider \"hashicorp/random\" {\n  all = true\n}\n"), 0o644)
	b := filepath.Join(work, "b.bundle")
	harness.MustRun(t, work, online, harness.Bin, "export", "--manifest", mf, "--sign-key", keys+".key.asc", "--out", b, "--cache", filepath.Join(work, "cache"))
	root := filepath.Join(work, "store")
	harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", keys+".pub.asc", "--store", root, b)
	srv := harness.StartServe(t, root)
	base, caFile := srv.Base, srv.CAFile
	out := harness.MustRun(t, work, nil, harness.Bin, "prune", "--store", root, "--keep", "1")
	if !strings.Contains(out, "3.5.1") || !strings.Contains(out, "3.6.0") || strings.Contains(out, "3.6.2") {
		t.Fatalf("prune --keep 1:\n%s", out)
	}
	harness.MustRun(t, work, nil, harness.Bin, "gc", "--store", root)
	harness.CheckConsistent(t, root)
	time.Sleep(2 * time.Second) // serve reloads within 2 s

	cfg := harness.MustRun(t, work, []string{"SSL_CERT_FILE=" + caFile}, harness.Bin, "client-config", "--url", strings.TrimSuffix(base, "/"))
	rc := filepath.Join(work, "airgap.tfrc")
	os.WriteFile(rc, []byte(cfg), 0o644)
	offline := []string{"TF_CLI_CONFIG_FILE=" + rc, "SSL_CERT_FILE=" + caFile,
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=localhost,127.0.0.1"}
	for _, tc := range []struct {
		constraint string
		ok         bool
	}{{"~> 3.5", true}, {"3.6.0", false}} {
		dir := filepath.Join(t.TempDir(), "p")
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "main.tf"), []byte(`terraform {
  required_providers {
    random = {
      source  = "hashicorp/random"
      version = "`+tc.constraint+`"
    }
  }
}
`), 0o644)
		out, err := harness.CmdRun(t, dir, offline, tf, "init", "-input=false", "-no-color")
		if (err == nil) != tc.ok {
			t.Errorf("terraform init with %q after prune+gc: %v\n%s", tc.constraint, err, out)
		}
		if tc.ok && !strings.Contains(out, "3.6.2") {
			t.Errorf("init did not install the kept 3.6.2:\n%s", out)
		}
	}
}
