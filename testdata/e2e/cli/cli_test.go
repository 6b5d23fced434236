package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

func TestCLI(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	if out := harness.MustRun(t, work, nil, harness.Bin, "--version"); !strings.HasPrefix(out, "airgap ") {
		t.Errorf("--version: %q", out)
	}
	if out := harness.MustRun(t, work, nil, harness.Bin, "help", "export"); !strings.Contains(out, "--manifest") || !strings.Contains(out, "--dry-run") {
		t.Errorf("help export: %q", out)
	}
	out, err := harness.CmdRun(t, work, nil, harness.Bin, "frobnicate")
	if harness.ExitCode(err) != 2 || !strings.Contains(out, "unknown command") {
		t.Errorf("unknown verb: %d %q", harness.ExitCode(err), out)
	}
	out, err = harness.CmdRun(t, work, nil, harness.Bin, "import", "--store", "x")
	if harness.ExitCode(err) != 2 || !strings.Contains(out, "hint:") {
		t.Errorf("missing flags: %d %q", harness.ExitCode(err), out)
	}

	in := registrytest.World(t)
	online := append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(work, "none.tfrc"))
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", "k/site", "--no-passphrase")
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", "k/other", "--no-passphrase")

	// --dry-run resolves without downloading.
	os.WriteFile(filepath.Join(work, "ok.hcl"), []byte("platforms = [\"linux_amd64\"]\nprovider \"hashicorp/random\" {\n  latest = 2\n}\n"), 0o644)
	out = harness.MustRun(t, work, online, harness.Bin, "export", "--manifest", "ok.hcl", "--dry-run", "--cache", "cache")
	if !strings.Contains(out, "random 3.6.0: linux_amd64") || !strings.Contains(out, "random 3.6.2: linux_amd64") {
		t.Errorf("dry run: %s", out)
	}
	if ents, _ := os.ReadDir(filepath.Join(work, "cache", "blobs", "sha256")); len(ents) != 0 {
		t.Errorf("--dry-run downloaded %d files", len(ents))
	}
	// It says why each entry is planned: its manifest block, or the module
	// that calls it.
	os.WriteFile(filepath.Join(work, "why.hcl"), []byte("platforms = [\"linux_amd64\"]\nprovider \"hashicorp/random\" {\n  versions = \"3.6.0\"\n}\nmodule \"example/vpc/aws\" {\n  versions = \"1.0.0\"\n}\n"), 0o644)
	out = harness.MustRun(t, work, online, harness.Bin, "export", "--manifest", "why.hcl", "--dry-run", "--cache", "cache")
	for _, want := range []string{"random 3.6.0: linux_amd64\n    why: why.hcl:2\n", "vpc/aws 1.0.0: git::https://github.com/example/terraform-aws-vpc?ref=v1.0.0\n    why: why.hcl:5\n",
		"subnet-2.1.0.tar.gz\n    why: called by registry.terraform.io/example/vpc/aws 1.0.0\n",
		"null 3.2.2: linux_amd64\n    why: required by module registry.terraform.io/example/vpc/aws 1.0.0\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the dry run does not say %q:\n%s", want, out)
		}
	}

	// A failed export leaves no bundle, partial or not.
	in.Tamper.Store("terraform-provider-random_3.6.2_linux_amd64.zip")
	out, err = harness.CmdRun(t, work, online, harness.Bin, "export", "--manifest", "ok.hcl", "--sign-key", "k/site.key.asc", "--out", "b.bundle", "--cache", "cache")
	in.Tamper.Store("")
	if harness.ExitCode(err) != 1 || !strings.Contains(out, "digest mismatch") {
		t.Errorf("tampered export: %d %q", harness.ExitCode(err), out)
	}
	if ents, _ := filepath.Glob(filepath.Join(work, "*bundle*")); len(ents) != 0 {
		t.Errorf("a failed export left %v", ents)
	}

	harness.MustRun(t, work, online, harness.Bin, "export", "--manifest", "ok.hcl", "--sign-key", "k/site.key.asc", "--out", "b.bundle", "--cache", "cache")
	out = harness.MustRun(t, work, nil, harness.Bin, "verify", "--keyring", "k/site.pub.asc", "--json", "b.bundle")
	var rep struct {
		OK        bool `json:"ok"`
		Packages  int  `json:"provider_packages"`
		Blobs     int  `json:"blobs"`
		Signer    struct{ Fingerprint string }
		ErrorText string `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || !rep.OK || rep.Packages != 2 || rep.Blobs != 9 || // 2 zips, SHA256SUMS and signature, 2 build information documents, the SBOM
		rep.Signer.Fingerprint == "" {
		t.Errorf("verify --json: %v %s", err, out)
	}
	// The wrong keyring: refused, names the signer, store untouched.
	out, err = harness.CmdRun(t, work, nil, harness.Bin, "import", "--keyring", "k/other.pub.asc", "--store", "store", "b.bundle")
	if harness.ExitCode(err) != 1 || !strings.Contains(out, "not in the keyring") || !strings.Contains(out, "fingerprint") || !strings.Contains(out, "the store was not changed") {
		t.Errorf("wrong key: %d %q", harness.ExitCode(err), out)
	}
	out, err = harness.CmdRun(t, work, nil, harness.Bin, "verify", "--keyring", "k/other.pub.asc", "--json", "b.bundle")
	if harness.ExitCode(err) != 1 || !strings.Contains(out, `"ok": false`) {
		t.Errorf("verify --json with the wrong key: %d %q", harness.ExitCode(err), out)
	}
	harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", "k/site.pub.asc", "--store", "store", "b.bundle")
	out = harness.MustRun(t, work, nil, harness.Bin, "inventory", "--store", "store")
	if !strings.Contains(out, "registry.terraform.io/hashicorp/random") || !strings.Contains(out, "Imported bundles:") {
		t.Errorf("inventory: %s", out)
	}
	out = harness.MustRun(t, work, nil, harness.Bin, "client-config", "--url", "https://127.0.0.1:1", "--store", "store", "--mode", "mirror", "--tool", "tofu")
	if !strings.Contains(out, `url              = "https://127.0.0.1:1/mirror/"`) || !strings.Contains(out, "trust_all_hashes = true") || !strings.Contains(out, "TF_CLI_CONFIG_FILE") || !strings.Contains(out, "~/.tofurc") {
		t.Errorf("client-config: %s", out)
	}
}
