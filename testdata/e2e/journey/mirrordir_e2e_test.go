package journey

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// A site without a server: 'airgap mirror-dir' writes a filesystem_mirror
// tree from the store, and the real terraform and tofu install from it with
// no network at all, using the provider_installation block it prints; the
// reference lock file (made through the registry online) is used unchanged
// in both layouts, and the installed plugin runs (validate). Rewriting the
// tree is atomic and refuses directories it did not write.
const mirrorProject = `terraform {
  required_providers {
    random = {
      source  = "hashicorp/random"
      version = "3.6.2"
    }
    null = {
      source  = "hashicorp/null"
      version = "3.2.2"
    }
  }
}
`

// OpenTofu's project uses its own registry's provider: OpenTofu rewrites
// the registry.terraform.io/hashicorp/* entries of any existing lock file
// to registry.opentofu.org (UpgradeFromPredecessorProject), online or not.
const mirrorTofuProject = `terraform {
  required_providers {
    local = {
      source  = "hashicorp/local"
      version = "2.5.1"
    }
  }
}
`

func TestMirrorDirOffline(t *testing.T) {
	t.Parallel()
	tf, tofu := harness.TerraformBin(t), harness.TofuBin(t)
	in := registrytest.WorldWith(t, registrytest.BuildFixtureProvider(t, t.TempDir()))
	work := t.TempDir()
	online := append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(work, "none.tfrc"))
	clients := []struct{ name, bin, project, probe string }{
		{"terraform", tf, mirrorProject, "registry.terraform.io/hashicorp/random"},
		{"tofu", tofu, mirrorTofuProject, "registry.opentofu.org/hashicorp/local"},
	}
	refs := map[string]string{}
	for _, c := range clients {
		dir := filepath.Join(work, "ref-"+c.name)
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "main.tf"), []byte(c.project), 0o644)
		harness.MustRun(t, dir, online, c.bin, "init", "-input=false", "-no-color")
		refs[c.name] = dir
	}
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", "k/site", "--no-passphrase")
	os.WriteFile(filepath.Join(work, "airgap.hcl"), []byte("platforms = [\"linux_amd64\", \"darwin_arm64\"]\nprovider \"hashicorp/random\" {\n  versions = \"3.6.2\"\n}\nprovider \"hashicorp/null\" {\n  versions = \"3.2.2\"\n}\nprovider \"registry.opentofu.org/hashicorp/local\" {\n  versions = \"2.5.1\"\n}\n"), 0o644)
	harness.MustRun(t, work, online, harness.Bin, "export", "--manifest", "airgap.hcl", "--sign-key", "k/site.key.asc", "--out", "site.bundle", "--cache", filepath.Join(work, "cache"))
	storeDir := filepath.Join(work, "store")
	harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", "k/site.pub.asc", "--store", storeDir, "site.bundle")

	for _, layout := range []string{"packed", "unpacked"} {
		t.Run(layout, func(t *testing.T) {
			out := filepath.Join(work, "mirror-"+layout)
			res := harness.MustRun(t, work, nil, harness.Bin, "mirror-dir", "--store", storeDir, "--out", out, "--layout", layout)
			t.Log(res)
			_, block, ok := strings.Cut(res, "provider_installation {")
			if !ok || !strings.Contains(block, "filesystem_mirror") || !strings.Contains(block, out) {
				t.Fatalf("mirror-dir printed no usable provider_installation block:\n%s", res)
			}
			rc := filepath.Join(t.TempDir(), "mirror.tfrc")
			os.WriteFile(rc, []byte("provider_installation {"+block), 0o644)
			checkMirrorLayout(t, storeDir, out, layout)
			// No network at all: every proxy is dead.
			offline := []string{"TF_CLI_CONFIG_FILE=" + rc, "HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY="}
			for _, c := range clients {
				name, bin := c.name, c.bin
				t.Run(name, func(t *testing.T) {
					dir := t.TempDir()
					harness.CopyTree(t, refs[name], dir)
					refLock, _ := os.ReadFile(filepath.Join(refs[name], ".terraform.lock.hcl"))
					harness.MustRun(t, dir, offline, bin, "init", "-input=false", "-no-color", "-lockfile=readonly")
					if got, _ := os.ReadFile(filepath.Join(dir, ".terraform.lock.hcl")); !bytes.Equal(got, refLock) {
						t.Errorf("the reference lock changed:\n%s\nwant:\n%s", got, refLock)
					}
					if out := harness.MustRun(t, dir, offline, bin, "validate", "-no-color"); !strings.Contains(out, "Success") {
						t.Errorf("validate (runs the installed plugin): %s", out)
					}
					// A fresh lock from the mirror: only the installed platform's
					// h1:, with both clients, in both layouts (measured:
					// Terraform 1.11.4, OpenTofu 1.11.14).
					fresh := t.TempDir()
					os.WriteFile(filepath.Join(fresh, "main.tf"), []byte(c.project), 0o644)
					harness.MustRun(t, fresh, offline, bin, "init", "-input=false", "-no-color")
					got := harness.LockHashes(t, filepath.Join(fresh, ".terraform.lock.hcl"), c.probe)
					t.Logf("%s, %s layout, fresh lock hashes for %s: %v", name, layout, c.probe, got)
					if len(harness.OnlyPrefix(got, "h1:")) != 1 {
						t.Errorf("fresh lock: want the installed platform's h1:, got %v", got)
					}
					if n := len(harness.OnlyPrefix(got, "zh:")); n != 0 {
						t.Errorf("fresh lock from the %s layout with %s: %d zh: hashes, want none: %v", layout, name, n, got)
					}
					// Other platforms' hashes come from the tree itself.
					harness.MustRun(t, fresh, offline, bin, "providers", "lock", "-no-color", "-fs-mirror="+out, "-platform=linux_amd64", "-platform=darwin_arm64")
					if got := harness.LockHashes(t, filepath.Join(fresh, ".terraform.lock.hcl"), c.probe); len(harness.OnlyPrefix(got, "h1:")) != 2 {
						t.Errorf("providers lock -fs-mirror for two platforms (%s layout, %s): %v", layout, name, got)
					}
				})
			}
		})
	}

	// Rewriting: a tree mirror-dir wrote is replaced whole; narrower
	// selections shrink it.
	out := filepath.Join(work, "mirror-packed")
	res := harness.MustRun(t, work, nil, harness.Bin, "mirror-dir", "--store", storeDir, "--out", out, "--platform", "linux_amd64", "hashicorp/random@3.6.2", "--json")
	var doc struct {
		OK        bool     `json:"ok"`
		Packages  int      `json:"packages"`
		Providers []string `json:"providers"`
		Config    string   `json:"provider_installation"`
		Notes     []string `json:"notes"`
	}
	if err := json.Unmarshal([]byte(res), &doc); err != nil || !doc.OK || doc.Packages != 1 || len(doc.Providers) != 1 || doc.Notes == nil || !strings.Contains(doc.Config, out) {
		t.Errorf("--json: %v %+v\n%s", err, doc, res)
	}
	if _, err := os.Stat(filepath.Join(out, "registry.terraform.io", "hashicorp", "null")); err == nil {
		t.Error("the old tree's providers survived the rewrite")
	}
	// Refusals leave everything as it was.
	foreign := filepath.Join(work, "not-a-mirror")
	os.MkdirAll(foreign, 0o755)
	os.WriteFile(filepath.Join(foreign, "precious.txt"), []byte("keep"), 0o644)
	for _, c := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"--out", foreign}, "is not a tree 'airgap mirror-dir' wrote", 1},
		{[]string{"--out", filepath.Join(foreign, "precious.txt")}, "is not a directory", 1},
		{[]string{"--out", out, "hashicorp/aws"}, "the store has no provider registry.terraform.io/hashicorp/aws", 1},
		{[]string{"--out", out, "--platform", "linux_amd46"}, "linux_amd64", 2},
		{[]string{"--out", out, "--layout", "flat"}, "want packed or unpacked", 2},
		{[]string{"--out", filepath.Join(work, "nodir", "x")}, "does not exist", 1},
	} {
		got, err := harness.CmdRun(t, work, nil, harness.Bin, append([]string{"mirror-dir", "--store", storeDir}, c.args...)...)
		if err == nil || !strings.Contains(got, c.want) || harness.ExitCode(err) != c.code {
			t.Errorf("mirror-dir %v: exit %d, want %d and %q:\n%s", c.args, harness.ExitCode(err), c.code, c.want, got)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(foreign, "precious.txt")); string(b) != "keep" {
		t.Error("a refused mirror-dir touched a foreign directory")
	}
	if ents, _ := filepath.Glob(filepath.Join(work, ".*airgap-mirror*")); len(ents) > 0 {
		t.Errorf("temporary trees left behind: %v", ents)
	}
}

// checkMirrorLayout checks the tree: packed zips are hard links to the
// store's blobs; unpacked plugins are executable.
func checkMirrorLayout(t *testing.T, storeDir, out, layout string) {
	t.Helper()
	dir := filepath.Join(out, "registry.terraform.io", "hashicorp", "random")
	if layout == "packed" {
		zip := filepath.Join(dir, "terraform-provider-random_3.6.2_linux_amd64.zip")
		fi, err := os.Stat(zip)
		if err != nil {
			t.Fatal(err)
		}
		blobs, _ := filepath.Glob(filepath.Join(storeDir, "blobs", "sha256", "*"))
		linked := false
		for _, b := range blobs {
			if bi, err := os.Stat(b); err == nil && os.SameFile(fi, bi) {
				linked = true
			}
		}
		if !linked {
			t.Error("the packed zip is not a hard link to the store's blob")
		}
		return
	}
	ents, err := os.ReadDir(filepath.Join(dir, "3.6.2", "linux_amd64"))
	if err != nil || len(ents) == 0 {
		t.Fatalf("unpacked tree: %v %v", ents, err)
	}
	for _, e := range ents {
		if fi, _ := e.Info(); strings.HasPrefix(e.Name(), "terraform-provider-") && fi.Mode()&0o111 == 0 {
			t.Errorf("%s is not executable (%v)", e.Name(), fi.Mode())
		}
	}
}
