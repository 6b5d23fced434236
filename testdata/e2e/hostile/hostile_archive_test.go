package hostile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// outsideChanges lists what changed under top since before, except inside
// the directories in allowed (which, with their parents, may be created).
func outsideChanges(t *testing.T, top string, before map[string]string, allowed ...string) []string {
	t.Helper()
	var out []string
	for _, c := range registrytest.Changed(before, registrytest.Snapshot(t, top)) {
		ok := false
		for _, a := range allowed {
			rel, _ := filepath.Rel(top, a)
			if strings.HasPrefix(c, rel+string(filepath.Separator)) {
				ok = true
			}
			for ; rel != "."; rel = filepath.Dir(rel) { // creating the cache and its parents
				ok = ok || c == rel+": dir"
			}
		}
		if !ok {
			out = append(out, c)
		}
	}
	return out
}

// Finding 1 of issue 11, against the real binary: a registry module whose
// archive is the link chain (a→., b→a/.., c→b/.., …, then files under the
// links, climbing up to 5 directories above the extraction root, that is
// out of the cache, its parent and the test's own directory) makes export
// fail with a clear message, and no file appears anywhere outside the cache
// — with --cache, and with the default cache under a fake $HOME.
func TestHostileModuleArchive(t *testing.T) {
	t.Parallel()
	in := registrytest.New(t)
	chain := registrytest.LinkChain(6, "pwned", "owned by a module archive")
	in.AddModule("registry.terraform.io", "evil", "chain", "aws", "1.0.0", in.AddRawArchive(t, "chain-1.0.0.tar.gz", registrytest.TarGz(t, chain)))
	in.AddModule("registry.terraform.io", "evil", "zipchain", "aws", "1.0.0", in.AddRawArchive(t, "chain-1.0.0.zip", registrytest.Zip(t, chain)))

	top := t.TempDir() // <TestDir>/001: the chain reaches <TestDir> itself
	watch := filepath.Dir(top)
	work, home := filepath.Join(top, "work"), filepath.Join(top, "home")
	for _, d := range []string{work, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--no-passphrase", "--out", "k/site")
	env := append(in.Env(), "HOME="+home, "XDG_CACHE_HOME=", "TF_CLI_CONFIG_FILE="+filepath.Join(work, "none.tfrc"))
	for _, c := range []struct {
		name, module, cache string
		args                []string
	}{
		{"tar.gz, --cache", "evil/chain/aws", filepath.Join(top, "cache"), []string{"--cache", filepath.Join(top, "cache")}},
		{"zip, --cache", "evil/zipchain/aws", filepath.Join(top, "cache"), []string{"--cache", filepath.Join(top, "cache")}},
		{"tar.gz, default cache in $HOME", "evil/chain/aws", filepath.Join(home, ".cache", "airgap"), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			manifest := filepath.Join(work, "m.hcl")
			os.WriteFile(manifest, []byte("platforms = [\"linux_amd64\"]\nmodule \""+c.module+"\" {}\n"), 0o644)
			before := registrytest.Snapshot(t, watch)
			args := append([]string{"export", "--manifest", manifest, "--sign-key", "k/site.key.asc", "--out", "evil.bundle"}, c.args...)
			out, err := harness.CmdRun(t, work, env, harness.Bin, args...)
			if harness.ExitCode(err) != 1 {
				t.Fatalf("export: exit %d, want 1\n%s", harness.ExitCode(err), out)
			}
			for _, want := range []string{"module registry.terraform.io/" + c.module + " 1.0.0", "unsafe module archive", `symlink "b"`, "hint:"} {
				if !strings.Contains(out, want) {
					t.Errorf("the message lacks %q:\n%s", want, out)
				}
			}
			if d := outsideChanges(t, watch, before, c.cache); len(d) != 0 {
				t.Fatalf("export changed files outside its cache %s: %v\n%s", c.cache, d, out)
			}
			// Nothing of the archive stays in the cache either.
			for p, v := range registrytest.Snapshot(t, c.cache) {
				if strings.Contains(p, "pwned") || strings.HasPrefix(v, "link ") {
					t.Errorf("left in the cache: %s (%s)", p, v)
				}
			}
		})
	}
}
