package journey

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/testdata/e2e/harness"
	"github.com/airgap/airgap/verify"
)

// TestReleasesPublisherPins: a pins file's release blocks pin the keys of
// terraform's and tofu's releases at import: a release signed by a key
// the file does not list for its product is refused, naming the release
// and the key, with the store unchanged; the right keys import; a pins
// file without release blocks (unlisted = "refuse" included) means what
// it meant before: it leaves the releases to the store's rule; a release
// block for another product is refused with a hint.
func TestReleasesPublisherPins(t *testing.T) {
	t.Parallel()
	j := newReleaseJourney(t)
	harness.MustRun(t, j.work, j.env(), harness.Bin, "export", "--manifest", j.mf, "--sign-key", j.keys+".key.asc", "--out", j.bundle, "--cache", filepath.Join(j.work, "cache"))
	tfFP := verify.GroupFingerprint(verify.Fingerprint(j.rel.HashiCorp))
	tofuFP := verify.GroupFingerprint(verify.Fingerprint(j.rel.OpenTofu))
	pins := func(name, body string) string {
		p := filepath.Join(j.work, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	importWith := func(store, pinsFile string) (string, int) {
		return harness.RunBounded(t, j.work, "import", "--keyring", j.keys+".pub.asc", "--store", store, "--publisher-pins", pinsFile, j.bundle)
	}

	// terraform pinned to HashiCorp's real key: the stand-in's releases
	// are refused, the store untouched.
	wrong := pins("wrong.hcl", `namespace "registry.terraform.io/hashicorp" {
  keys = ["`+verify.GroupFingerprint(dist.DefaultReleaseKey("terraform"))+`"]
}
release "terraform" {
  keys = ["`+verify.GroupFingerprint(dist.DefaultReleaseKey("terraform"))+`"]
}
release "tofu" {
  keys = ["`+tofuFP+`"]
}
`)
	refused := filepath.Join(j.work, "refused-store")
	out, code := importWith(refused, wrong)
	if code == 0 || !strings.Contains(out, "release terraform 1.14.3") || !strings.Contains(out, tfFP) || !strings.Contains(out, "pins file") || !strings.Contains(out, "hint:") || strings.Contains(out, "release tofu 1.11.2") {
		t.Errorf("import with terraform pinned to another key: exit %d, want refused naming terraform 1.14.3 and key %s (not tofu)\n%s", code, tfFP, out)
	}
	// verify, given the same file, says so before the import.
	if out, _ := harness.RunBounded(t, j.work, "verify", "--keyring", j.keys+".pub.asc", "--publisher-pins", wrong, j.bundle); !strings.Contains(out, "import will refuse release terraform 1.14.3: signed by key "+tfFP) || strings.Contains(out, "refuse release tofu") {
		t.Errorf("verify --publisher-pins does not say the import will refuse terraform 1.14.3 (and only terraform):\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(refused, "index.json")); err == nil {
		t.Errorf("the refused import left an index in the store")
	}
	if ents, _ := os.ReadDir(filepath.Join(refused, "blobs", "sha256")); len(ents) > 0 {
		t.Errorf("the refused import left %d blobs in the store", len(ents))
	}

	// The stand-ins' keys pinned: imported.
	right := pins("right.hcl", `release "terraform" { keys = ["`+tfFP+`"] }
release "tofu" { keys = ["`+strings.ReplaceAll(tofuFP, " ", "")+`"] }
`)
	if out, code := importWith(filepath.Join(j.work, "right-store"), right); code != 0 {
		t.Errorf("import with the right release keys pinned: exit %d\n%s", code, out)
	}

	// A pins file of before release blocks: the releases follow the
	// store's rule (a product's first key), unlisted = "refuse" or not.
	old := pins("old.hcl", `namespace "registry.terraform.io/hashicorp" {
  keys = ["`+verify.GroupFingerprint(dist.DefaultReleaseKey("terraform"))+`"]
}
unlisted = "refuse"
`)
	if out, code := importWith(filepath.Join(j.work, "old-store"), old); code != 0 {
		t.Errorf("import with a pins file without release blocks: exit %d\n%s", code, out)
	}

	bad := pins("bad.hcl", `release "terraform-cli" { keys = ["`+tfFP+`"] }`)
	if out, code := importWith(filepath.Join(j.work, "bad-store"), bad); code == 0 || !strings.Contains(out, "bad.hcl:1:1") || !strings.Contains(out, "terraform, tofu") || !strings.Contains(out, "hint:") {
		t.Errorf("a release block for another product: exit %d, want refused at bad.hcl:1:1 with a hint\n%s", code, out)
	}
}
