package journey

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestDeltaBundles: a delta carries only what the base lacks, refuses a
// store without its base, and applies on top of it.
func TestDeltaBundles(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	in := registrytest.World(t)
	in.AddProvider(t, "registry.terraform.io", "example", "big", "1.0.0", []string{"linux_amd64", "darwin_arm64"}, 2<<20)
	bigNew := in.AddProvider(t, "registry.terraform.io", "example", "big", "1.1.0", []string{"linux_amd64", "darwin_arm64"}, 2<<20)
	online := append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(work, "none.tfrc"))
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", "k/site", "--no-passphrase")
	write := func(name, body string) { os.WriteFile(filepath.Join(work, name), []byte(body), 0o644) }
	write("base.hcl", "platforms = [\"linux_amd64\", \"darwin_arm64\"]\nprovider \"hashicorp/random\" {\n  versions = \"3.6.0\"\n}\nprovider \"example/big\" {\n  versions = \"1.0.0\"\n}\nmodule \"example/sub/aws\" {}\n")
	write("next.hcl", "platforms = [\"linux_amd64\", \"darwin_arm64\"]\nprovider \"hashicorp/random\" {\n  versions = \"3.6.0\"\n}\nprovider \"example/big\" {\n  all = true\n}\nmodule \"example/sub/aws\" {}\n")
	exp := func(args ...string) string {
		return harness.MustRun(t, work, online, harness.Bin, append([]string{"export", "--sign-key", "k/site.key.asc", "--cache", "cache", "--compression", "none"}, args...)...)
	}
	exp("--manifest", "base.hcl", "--out", "base.bundle")
	exp("--manifest", "next.hcl", "--out", "full.bundle")
	exp("--manifest", "next.hcl", "--out", "delta.bundle", "--since", "base.bundle")

	size := func(p string) int64 { fi, _ := os.Stat(filepath.Join(work, p)); return fi.Size() }
	var newPkgs int64
	for _, pk := range bigNew.Packages {
		newPkgs += pk.Size
	}
	newPkgs += 2 * 1024 // the new version's SHA256SUMS and signature
	manifestBytes := int64(64 << 10)
	t.Logf("base %d B, full %d B, delta %d B; new packages %d B", size("base.bundle"), size("full.bundle"), size("delta.bundle"), newPkgs)
	if size("delta.bundle") > newPkgs+manifestBytes {
		t.Errorf("the delta (%d B) is bigger than the new packages plus the manifest (%d B)", size("delta.bundle"), newPkgs+manifestBytes)
	}
	out := harness.MustRun(t, work, nil, harness.Bin, "verify", "--keyring", "k/site.pub.asc", "delta.bundle")
	if !strings.Contains(out, "delta bundle") {
		t.Errorf("verify does not say delta: %s", out)
	}
	// Into an empty store: refused before anything changes, naming the base.
	out, err := harness.CmdRun(t, work, nil, harness.Bin, "import", "--keyring", "k/site.pub.asc", "--store", "fresh", "delta.bundle")
	if err == nil || !strings.Contains(out, "needs") || !strings.Contains(out, "base.bundle") || !strings.Contains(out, "example/big 1.0.0") {
		t.Fatalf("delta into an empty store: %v %s", err, out)
	}
	if ents, _ := os.ReadDir(filepath.Join(work, "fresh", "blobs", "sha256")); len(ents) != 0 {
		t.Errorf("a refused delta left %d blobs", len(ents))
	}
	// On its base: applies.
	harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", "k/site.pub.asc", "--store", "store", "base.bundle")
	out = harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", "k/site.pub.asc", "--store", "store", "delta.bundle")
	if !strings.Contains(out, "example/big 1.1.0") {
		t.Errorf("delta import: %s", out)
	}
	// --have from the offline inventory gives the same content.
	inv := harness.MustRun(t, work, nil, harness.Bin, "inventory", "--store", "store", "--json")
	write("inv.json", inv)
	harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", "k/site.pub.asc", "--store", "store2", "base.bundle")
	inv2 := harness.MustRun(t, work, nil, harness.Bin, "inventory", "--store", "store2", "--json")
	write("inv2.json", inv2)
	exp("--manifest", "next.hcl", "--out", "delta2.bundle", "--have", "inv2.json")
	// The versions the delta leaves unchanged (random 3.6.0, big 1.0.0):
	// one line for their signatures, not one each, and how to list them.
	out = harness.MustRun(t, work, nil, harness.Bin, "verify", "--keyring", "k/site.pub.asc", "delta2.bundle")
	if strings.Contains(out, "signature: left for import") || !strings.Contains(out, "signatures of 2 provider versions left for import") ||
		!strings.Contains(out, "select(.signature == null)") {
		t.Errorf("verify of a --have delta, the unchanged signatures:\n%s", out)
	}
	if d1, d2 := size("delta.bundle"), size("delta2.bundle"); d2 > d1+4096 || d2 < d1-4096 {
		t.Errorf("--have delta %d B vs --since delta %d B", d2, d1)
	}
	harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", "k/site.pub.asc", "--store", "store2", "delta2.bundle")
}

// TestSplitVolumes: parts are checked against the signed index before
// anything is imported; a missing, truncated, corrupt or foreign part is
// named; the parts are never changed.
func TestSplitVolumes(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	in := registrytest.World(t)
	in.AddProvider(t, "registry.terraform.io", "example", "big", "1.0.0", []string{"linux_amd64", "darwin_arm64"}, 2<<20)
	online := append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(work, "none.tfrc"))
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", "k/site", "--no-passphrase")
	os.WriteFile(filepath.Join(work, "m.hcl"), []byte("platforms = [\"linux_amd64\", \"darwin_arm64\"]\nprovider \"example/big\" {}\nprovider \"hashicorp/random\" {}\n"), 0o644)
	os.MkdirAll(filepath.Join(work, "a"), 0o755)
	os.MkdirAll(filepath.Join(work, "b"), 0o755)
	harness.MustRun(t, work, online, harness.Bin, "export", "--manifest", "m.hcl", "--sign-key", "k/site.key.asc", "--cache", "cache",
		"--compression", "none", "--out", "a/site.bundle", "--split", "1MiB")
	parts, _ := filepath.Glob(filepath.Join(work, "a", "site.bundle.0*"))
	if len(parts) < 5 {
		t.Fatalf("parts: %v", parts)
	}
	if _, err := os.Stat(filepath.Join(work, "a", "site.bundle")); err == nil {
		t.Error("the unsplit bundle was left next to the parts")
	}
	// Another bundle's parts, for the "foreign part" case.
	os.WriteFile(filepath.Join(work, "m2.hcl"), []byte("platforms = [\"linux_amd64\", \"darwin_arm64\"]\nprovider \"example/big\" {}\n"), 0o644)
	harness.MustRun(t, work, online, harness.Bin, "export", "--manifest", "m2.hcl", "--sign-key", "k/site.key.asc", "--cache", "cache",
		"--compression", "none", "--out", "b/site.bundle", "--split", "1MiB")

	out := harness.MustRun(t, work, nil, harness.Bin, "verify", "--keyring", "k/site.pub.asc", "a/site.bundle.001")
	if !strings.Contains(out, "split into") {
		t.Errorf("verify: %s", out)
	}
	snapshot := func() map[string]string {
		m := map[string]string{}
		ps, _ := filepath.Glob(filepath.Join(work, "a", "site.bundle.0*"))
		for _, p := range ps {
			b, _ := os.ReadFile(p)
			m[p] = string(b)
		}
		return m
	}
	orig := snapshot()
	restore := func() {
		for p, b := range orig {
			os.WriteFile(p, []byte(b), 0o644)
		}
	}
	p3 := filepath.Join(work, "a", "site.bundle.003")
	cases := []struct {
		name   string
		damage func()
		want   string
	}{
		{"missing middle part", func() { os.Remove(p3) }, "part 3 of"},
		{"truncated part", func() { os.Truncate(p3, 1000) }, "site.bundle.003) is truncated"},
		{"corrupt part", func() { b := []byte(orig[p3]); b[500] ^= 1; os.WriteFile(p3, b, 0o644) }, "site.bundle.003) is corrupt"},
		{"part from another bundle", func() {
			b, _ := os.ReadFile(filepath.Join(work, "b", "site.bundle.002"))
			os.WriteFile(filepath.Join(work, "a", "site.bundle.002"), b, 0o644)
		}, "site.bundle.002) is corrupt or from another bundle"},
		{"missing index", func() { os.Remove(filepath.Join(work, "a", "site.bundle.000")) }, ".000"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.damage()
			defer restore()
			before := snapshot()
			out, err := harness.CmdRun(t, work, nil, harness.Bin, "import", "--keyring", "k/site.pub.asc", "--store", "store", "a/site.bundle.001")
			if err == nil || !strings.Contains(out, c.want) {
				t.Errorf("import: %v: %s (want %q)", err, out, c.want)
			}
			if _, err := os.Stat(filepath.Join(work, "store", "index.json")); err == nil {
				t.Error("something was imported from a damaged set")
			}
			after := snapshot()
			if len(after) != len(before) {
				t.Error("the parts were changed")
			}
			for p, b := range before {
				if after[p] != b {
					t.Errorf("%s was changed", p)
				}
			}
		})
	}
	restore()
	harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", "k/site.pub.asc", "--store", "store", "a/site.bundle.002")
	// join gives back the bundle; split of that gives the same parts.
	harness.MustRun(t, work, nil, harness.Bin, "join", "--keyring", "k/site.pub.asc", "--out", "joined.bundle", "a/site.bundle.000")
	harness.MustRun(t, work, nil, harness.Bin, "verify", "--keyring", "k/site.pub.asc", "joined.bundle")
	os.MkdirAll(filepath.Join(work, "c"), 0o755)
	b, _ := os.ReadFile(filepath.Join(work, "joined.bundle"))
	os.WriteFile(filepath.Join(work, "c", "site.bundle"), b, 0o644)
	harness.MustRun(t, work, nil, harness.Bin, "split", "--size", "1MiB", "--sign-key", "k/site.key.asc", "c/site.bundle")
	for i := 1; i <= len(parts)-1; i++ {
		n := "site.bundle.00" + string(rune('0'+i))
		x, _ := os.ReadFile(filepath.Join(work, "a", n))
		y, _ := os.ReadFile(filepath.Join(work, "c", n))
		if !bytes.Equal(x, y) {
			t.Errorf("re-split part %s differs", n)
		}
	}
}

// TestResumableExport: Ctrl-C mid-export, then a re-run fetches only what is
// missing, resuming the interrupted download with a Range request.
func TestResumableExport(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	in := registrytest.World(t)
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0"} {
		in.AddProvider(t, "registry.terraform.io", "example", "big", v, []string{"linux_amd64"}, 1<<20)
	}
	online := append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(work, "none.tfrc"))
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", "k/site", "--no-passphrase")
	os.WriteFile(filepath.Join(work, "m.hcl"), []byte("platforms = [\"linux_amd64\"]\nprovider \"example/big\" {\n  all = true\n}\n"), 0o644)
	args := []string{"export", "--manifest", "m.hcl", "--sign-key", "k/site.key.asc", "--cache", "cache", "--out", "site.bundle", "--jobs", "1"}

	in.Throttle.Store(1 << 20) // 1 MiB/s: each package takes about a second
	cmd := exec.Command(harness.Bin, args...)
	cmd.Dir, cmd.Env = work, append(harness.BaseEnv(), online...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1600 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if err == nil {
		t.Fatalf("the export finished before Ctrl-C; output:\n%s", out.String())
	}
	if _, err := os.Stat(filepath.Join(work, "site.bundle")); err == nil {
		t.Fatal("an interrupted export left a bundle")
	}
	partials, _ := filepath.Glob(filepath.Join(work, "cache", "partial", "*"))
	done, _ := filepath.Glob(filepath.Join(work, "cache", "blobs", "sha256", "*"))
	t.Logf("after Ctrl-C: %d partial download(s), %d verified files in the cache\n%s", len(partials), len(done), out.String())
	if len(partials) == 0 {
		t.Fatal("no partial download was kept to resume")
	}
	type pkgState struct {
		file             string
		before           int32
		verified, partly bool
	}
	var states []pkgState
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0"} {
		pk := in.Provider("registry.terraform.io", "example", "big", v).Packages[0]
		st := pkgState{file: pk.Filename, before: in.Downloaded(pk.Filename)}
		_, err1 := os.Stat(filepath.Join(work, "cache", "blobs", "sha256", pk.Digest.Hex()))
		_, err2 := os.Stat(filepath.Join(work, "cache", "partial", pk.Digest.Hex()))
		st.verified, st.partly = err1 == nil, err2 == nil
		states = append(states, st)
	}
	in.Throttle.Store(0)
	harness.MustRun(t, work, online, harness.Bin, args...)
	if in.RangeRequests.Load() == 0 {
		t.Error("the interrupted download was not resumed with a Range request")
	}
	for _, st := range states {
		got := in.Downloaded(st.file) - st.before
		switch {
		case st.verified && got != 0:
			t.Errorf("%s was verified before Ctrl-C but fetched %d more times", st.file, got)
		case !st.verified && got != 1:
			t.Errorf("%s (partial=%v) was fetched %d times on the re-run, want 1", st.file, st.partly, got)
		}
	}
	harness.MustRun(t, work, nil, harness.Bin, "verify", "--keyring", "k/site.pub.asc", "site.bundle")
}
