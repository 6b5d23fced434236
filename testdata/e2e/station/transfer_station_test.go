package station

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
	"github.com/airgap/airgap/verify"
)

const stationFirst = `platforms = ["linux_amd64", "darwin_arm64"]
provider "hashicorp/random" {
  versions = "3.6.0"
}
provider "registry.opentofu.org/hashicorp/local" {
  versions = "2.5.1"
}
module "example/wrap/aws" {}
`

const stationSecond = `platforms = ["linux_amd64", "darwin_arm64"]
provider "hashicorp/random" {
  versions = "3.7.0"
}
provider "hashicorp/null" {
  versions = "3.2.2"
}
provider "registry.opentofu.org/hashicorp/local" {
  versions = "2.5.1"
}
withdraw "hashicorp/random" {
  versions = "3.6.0"
  reason   = "CVE-2026-0001: use 3.7.0"
}
`

// TestTransferStationReview: what verify shows for bundles with vendored
// modules, a site re-signed provider, a new publisher key (refused, then
// declared), a withdrawal, and the difference to the offline store's
// inventory — in text and JSON; --strict's exit status; and the import
// refusing the undeclared new key, naming both keys, while the store stays
// as it was.
func TestTransferStationReview(t *testing.T) {
	t.Parallel()
	in := registrytest.World(t)
	in.AddVendorModules(t)
	s := harness.NewStation(t, in)
	oldKey := verify.Fingerprint(in.Publisher)
	oldG := verify.GroupFingerprint(oldKey)
	first := s.Export(t, "first", stationFirst)

	// 1. The first bundle: vendored module, site re-signed provider.
	out, code := s.Verify(t, first)
	if code != 0 {
		t.Fatalf("verify: %d\n%s", code, out)
	}
	t.Logf("first bundle, text:\n%s", out)
	for _, want := range []string{
		"OK, NEEDS ATTENTION (1)",
		"! site resigned: provider registry.opentofu.org/hashicorp/local 2.5.1 is not signed by its publisher",
		"registry.terraform.io/hashicorp/random 3.6.0  publisher-signed",
		"fingerprint " + oldG,
		"registry.opentofu.org/hashicorp/local 2.5.1  site re-signed",
		"linux_amd64    sha256:",
		`vendored main.tf:4 module "net": git::https://github.com/example/net.git//sub?ref=v1 -> ./.airgap/modules/`,
		"registry.terraform.io/example/wrap/aws 1.0.0",
		"the bundle approves", // no: nothing declared (checked below)
	} {
		if want == "the bundle approves" {
			if strings.Contains(out, want) {
				t.Errorf("the first bundle claims a declaration:\n%s", out)
			}
			continue
		}
		if !strings.Contains(out, want) {
			t.Errorf("verify text lacks %q", want)
		}
	}
	r, _, code := s.VerifyJSON(t, first)
	if code != 0 || !r.OK || r.Status != "needs_attention" || len(r.AttentionOf("site_resigned")) != 1 {
		t.Errorf("verify --json: %d %+v", code, r)
	}
	if p, ok := r.Provider("registry.terraform.io/hashicorp/random", "3.6.0"); !ok || p.Trust != "publisher_signed" || p.Signature == nil ||
		p.Signature.Signer.Fingerprint != oldKey || len(p.Platforms) != 2 || p.KeyStatus != "unknown" {
		t.Errorf("random 3.6.0 in JSON: %+v", p)
	}
	if len(r.Modules) == 0 || len(r.Modules[len(r.Modules)-1].Vendored) == 0 {
		t.Errorf("vendored rewrites missing from JSON: %+v", r.Modules)
	}
	if _, code := s.Verify(t, "--strict", first); code != 3 {
		t.Errorf("verify --strict of a bundle that needs attention: exit %d, want 3", code)
	}
	harness.MustRun(t, s.Work, nil, harness.Bin, "import", "--keyring", s.Keyring, "--store", s.Store, first)
	inv := harness.MustRun(t, s.Work, nil, harness.Bin, "inventory", "--store", s.Store)
	if !strings.Contains(inv, "Publisher keys") || !strings.Contains(inv, oldG+" publisher <publisher@example.test>") || !strings.Contains(inv, "(first use, bundle ") {
		t.Errorf("inventory does not show the pinned key:\n%s", inv)
	}
	have := filepath.Join(s.Work, "have.json")
	os.WriteFile(have, []byte(harness.MustRunStdout(t, s.Work, "inventory", "--store", s.Store, "--json")), 0o644)

	// 2. The publisher rotates its key; the next bundle brings a version
	// signed by the new key, a version the store has, and a withdrawal.
	in.Publisher = bundletest.Key(t, "rotated publisher")
	newKey := verify.Fingerprint(in.Publisher)
	newG := verify.GroupFingerprint(newKey)
	in.AddProvider(t, "registry.terraform.io", "hashicorp", "random", "3.7.0", []string{"linux_amd64", "darwin_arm64"}, 8<<10)
	second := s.Export(t, "second", stationSecond)
	out, code = s.Verify(t, "--against", have, second)
	t.Logf("second bundle against the inventory, text:\n%s", out)
	if code != 4 {
		t.Errorf("verify of a bundle the import will refuse, without --strict: exit %d, want 4", code)
	}
	for _, want := range []string{
		"! publisher key refused: import will refuse registry.terraform.io/hashicorp/random 3.7.0: key " + newG + " (rotated publisher <rotated publisher@example.test>)",
		"registry.terraform.io/hashicorp/random 3.7.0  publisher-signed [new]",
		"key for registry.terraform.io/hashicorp: new refused",
		"registry.terraform.io/hashicorp/null 3.2.2  publisher-signed [new]",
		"withdraws: provider registry.terraform.io/hashicorp/random 3.6.0 (CVE-2026-0001: use 3.7.0)",
		"had  " + oldG + " publisher <publisher@example.test>",
		"now  " + newG,
		"Against " + have,
		"provider registry.terraform.io/hashicorp/random 3.6.0: served now: the import takes it out",
		"provider registry.opentofu.org/hashicorp/local 2.5.1 (darwin_arm64, linux_amd64)",
		"registry.terraform.io/hashicorp: " + oldG + " publisher <publisher@example.test> -> " + newG,
		"refused: 1 entry (publisher key)",
		"provider registry.terraform.io/hashicorp/random 3.7.0: publisher key: signed by key " + newG,
		"Verdict: import will refuse: 1 entry (publisher key)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("verify --against text lacks %q", want)
		}
	}
	r, raw, code := s.VerifyJSON(t, "--against", have, second)
	if code != 4 || r.Status != "needs_attention" || len(r.AttentionOf("publisher_key_refused")) != 1 || r.Against == nil {
		t.Fatalf("verify --against --json: %d %+v", code, r)
	}
	// The version the import refuses is listed as refused only: the
	// summary's counts are the lines listed (finding 2 of issue 30).
	if len(r.Against.Added) != 1 || len(r.Against.AlreadyPresent) != 1 || r.Against.AlreadyPresent[0].Address != "registry.opentofu.org/hashicorp/local" ||
		len(r.Against.Withdrawn) != 1 || r.Against.Withdrawn[0].Version != "3.6.0" || len(r.Against.Refused) != 1 || r.Against.Refused[0].Version != "3.7.0" {
		t.Errorf("against: %+v", r.Against)
	}
	if kc := r.Against.KeyChanges; len(kc) != 1 || kc[0].Namespace != "registry.terraform.io/hashicorp" || len(kc[0].Before) != 1 ||
		kc[0].Before[0].Fingerprint != oldKey || kc[0].Key.Fingerprint != newKey || kc[0].Key.Status != "new_refused" {
		t.Errorf("key changes: %+v", kc)
	}
	if p, _ := r.Provider("registry.terraform.io/hashicorp/random", "3.7.0"); p.KeyStatus != "new_refused" || p.InStore != "new" {
		t.Errorf("random 3.7.0: %+v", p)
	}
	if _, ok := raw["checks"].(map[string]any)["sha256sums_signatures"]; !ok {
		t.Errorf("checks: %v", raw["checks"])
	}
	if _, code := s.Verify(t, "--strict", "--against", have, second); code != 4 {
		t.Errorf("--strict: exit %d, want 4 (a forecast refusal wins over needing attention)", code)
	}

	// The import refuses it, naming the namespace and both keys.
	before := bundletest.Snapshot(t, s.Store)
	out, err := harness.CmdRun(t, s.Work, nil, harness.Bin, "import", "--keyring", s.Keyring, "--store", s.Store, second)
	for _, want := range []string{"publisher key not accepted", "namespace registry.terraform.io/hashicorp", newG, "rotated publisher", oldG,
		"--accept-publisher-key '" + newG + "'", "the store was not changed"} {
		if err == nil || !strings.Contains(out, want) {
			t.Errorf("import of the new key (err %v) lacks %q:\n%s", err, want, out)
		}
	}
	bundletest.SameTree(t, before, bundletest.Snapshot(t, s.Store))

	// 3. Exported again with the new key approved: verify shows it
	// declared, the import pins it.
	declared := s.Export(t, "declared", stationSecond, "--accept-new-publisher-key", strings.ToLower(newKey))
	r, _, _ = s.VerifyJSON(t, "--against", have, declared)
	if p, _ := r.Provider("registry.terraform.io/hashicorp/random", "3.7.0"); p.KeyStatus != "new_declared" || len(r.AttentionOf("new_publisher_key")) != 1 || len(r.AttentionOf("publisher_key_refused")) != 0 {
		t.Errorf("the declared key: %+v %+v", p, r.Attention)
	}
	out = harness.MustRun(t, s.Work, nil, harness.Bin, "import", "--keyring", s.Keyring, "--store", s.Store, declared)
	if !strings.Contains(out, "pinned publisher key for registry.terraform.io/hashicorp: "+newG) || !strings.Contains(out, "declared by bundle") {
		t.Errorf("import of the declared key:\n%s", out)
	}
	inv = harness.MustRun(t, s.Work, nil, harness.Bin, "inventory", "--store", s.Store)
	if !strings.Contains(inv, oldG) || !strings.Contains(inv, newG) || !strings.Contains(inv, "withdrawn") {
		t.Errorf("inventory after the rotation:\n%s", inv)
	}
	// An --accept-new-publisher-key that signs nothing is refused at export.
	if out, err := harness.CmdRun(t, s.Work, s.Online, harness.Bin, "export", "--manifest", filepath.Join(s.Work, "second.hcl"), "--sign-key", "k/site.key.asc",
		"--out", filepath.Join(s.Work, "x.bundle"), "--cache", filepath.Join(s.Work, "cache"), "--accept-new-publisher-key", verify.Fingerprint(bundletest.Key(t, "stranger"))); err == nil ||
		!strings.Contains(out, "no provider of this export is signed by that key") || !strings.Contains(out, newG) {
		t.Errorf("export with an unused --accept-new-publisher-key (err %v):\n%s", err, out)
	}
}

// TestRotatedKeyTerraformInstall: a namespace's key is rotated at the
// offline side with --accept-publisher-key, and the real terraform
// installs the new version from the appliance, checking its signature
// against the new key.
func TestRotatedKeyTerraformInstall(t *testing.T) {
	t.Parallel()
	tf := harness.TerraformBin(t)
	in := registrytest.World(t)
	s := harness.NewStation(t, in)
	first := s.Export(t, "first", "platforms = [\"linux_amd64\"]\nprovider \"hashicorp/random\" {\n  versions = \"3.6.2\"\n}\n")
	harness.MustRun(t, s.Work, nil, harness.Bin, "import", "--keyring", s.Keyring, "--store", s.Store, first)
	in.Publisher = bundletest.Key(t, "rotated publisher")
	newKey, newID := verify.Fingerprint(in.Publisher), verify.KeyID(in.Publisher)
	in.AddProvider(t, "registry.terraform.io", "hashicorp", "random", "3.7.0", []string{"linux_amd64"}, 8<<10)
	second := s.Export(t, "second", "platforms = [\"linux_amd64\"]\nprovider \"hashicorp/random\" {\n  versions = \"3.7.0\"\n}\n")
	if out, err := harness.CmdRun(t, s.Work, nil, harness.Bin, "import", "--keyring", s.Keyring, "--store", s.Store, second); err == nil {
		t.Fatalf("the new key was accepted without approval:\n%s", out)
	}
	harness.MustRun(t, s.Work, nil, harness.Bin, "import", "--keyring", s.Keyring, "--store", s.Store, "--accept-publisher-key", spacedFingerprint(newKey), second)

	srv := harness.StartServe(t, s.Store)
	base, caFile := srv.Base, srv.CAFile
	rc := filepath.Join(t.TempDir(), "airgap.tfrc")
	os.WriteFile(rc, []byte(harness.MustRun(t, s.Work, []string{"SSL_CERT_FILE=" + caFile}, harness.Bin, "client-config", "--url", strings.TrimSuffix(base, "/"), "--mode", "registry")), 0o644)
	offline := []string{"TF_CLI_CONFIG_FILE=" + rc, "SSL_CERT_FILE=" + caFile, "HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=localhost,127.0.0.1"}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "main.tf"), []byte("terraform {\n  required_providers {\n    random = {\n      source  = \"hashicorp/random\"\n      version = \"3.7.0\"\n    }\n  }\n}\n"), 0o644)
	out := harness.MustRun(t, dir, offline, tf, "init", "-input=false", "-no-color")
	if !strings.Contains(out, "Installed hashicorp/random v3.7.0") || !strings.Contains(out, "key ID "+newID) {
		t.Errorf("terraform did not install 3.7.0 signed by the rotated key %s:\n%s", newID, out)
	}
}

// spacedFingerprint writes a fingerprint as gpg prints it.
func spacedFingerprint(fp string) string {
	var parts []string
	for i := 0; i < len(fp); i += 4 {
		parts = append(parts, fp[i:i+4])
	}
	return strings.Join(parts, " ")
}
