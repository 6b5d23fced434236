package journey

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
	"github.com/airgap/airgap/verify"
)

// releaseManifest asks for the newest two terraform 1.14 releases and the
// newest tofu 1.11 for linux_amd64 and darwin_arm64, pinned to the
// stand-in publishers' keys.
func releaseManifest(rel *harness.Releases) string {
	return `platforms = ["linux_amd64", "darwin_arm64"]

cli "terraform" {
  versions      = "~> 1.14"
  latest        = 2
  publisher_key = "` + rel.HashiCorpKey + `"
}
cli "tofu" {
  versions      = "~> 1.11.0"
  platforms     = ["linux_amd64"]
  publisher_key = "` + rel.OpenTofuKey + `"
}
`
}

// releaseJourney exports the release manifest from a stand-in internet with
// release trees, and verifies and imports the bundle.
type releaseJourney struct {
	in                   *registrytest.Internet
	rel                  *harness.Releases
	work, keys, bundle   string
	store, online, mf    string
	exportOut, verifyOut string
}

func newReleaseJourney(t *testing.T) *releaseJourney {
	t.Helper()
	j := &releaseJourney{in: registrytest.New(t), work: t.TempDir()}
	j.rel = harness.ReleaseWorld(t, j.in)
	j.keys = filepath.Join(j.work, "keys", "site")
	os.MkdirAll(filepath.Dir(j.keys), 0o700)
	harness.MustRun(t, j.work, nil, harness.Bin, "keygen", "--no-passphrase", "--out", j.keys, "--name", "Site Ops <ops@site.test>")
	j.mf = filepath.Join(j.work, "airgap.hcl")
	os.WriteFile(j.mf, []byte(releaseManifest(j.rel)), 0o644)
	j.bundle = filepath.Join(j.work, "site.bundle")
	j.online = j.work
	return j
}

func (j *releaseJourney) env() []string {
	return append(j.in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(j.work, "empty.tfrc"))
}

func (j *releaseJourney) exportVerifyImport(t *testing.T) {
	t.Helper()
	j.exportOut = harness.MustRun(t, j.work, j.env(), harness.Bin, "export", "--manifest", j.mf, "--sign-key", j.keys+".key.asc", "--out", j.bundle, "--cache", filepath.Join(j.work, "cache"))
	j.verifyOut = harness.MustRun(t, j.work, nil, harness.Bin, "verify", "--keyring", j.keys+".pub.asc", j.bundle)
	j.store = filepath.Join(j.work, "store")
	harness.MustRun(t, j.work, nil, harness.Bin, "import", "--keyring", j.keys+".pub.asc", "--store", j.store, j.bundle)
}

// TestReleasesExportVerifyImport: the cli blocks select the right
// releases, every file comes across byte for byte, and the store's
// catalog holds the releases with their signers.
func TestReleasesExportVerifyImport(t *testing.T) {
	t.Parallel()
	j := newReleaseJourney(t)
	j.exportVerifyImport(t)
	var ix struct {
		Catalog dist.Catalog `json:"catalog"`
	}
	b, err := os.ReadFile(filepath.Join(j.store, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &ix); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range ix.Catalog.Releases {
		var plats []string
		for _, bd := range r.Builds {
			plats = append(plats, bd.Filename)
			src := filepath.Join(j.in.Dir, "cli", r.Product, r.Version, bd.Filename)
			want, _ := os.ReadFile(src)
			have, err := os.ReadFile(filepath.Join(j.store, "blobs", "sha256", bd.Digest.Hex()))
			if err != nil || string(have) != string(want) {
				t.Errorf("%s %s: the store's zip is not the publisher's bytes (%v)", r, bd.Platform(), err)
			}
		}
		got = append(got, r.String()+" "+strings.Join(plats, ",")+" "+r.KeyPin)
	}
	want := []string{
		"terraform 1.14.2 terraform_1.14.2_darwin_arm64.zip,terraform_1.14.2_linux_amd64.zip manifest",
		"terraform 1.14.3 terraform_1.14.3_darwin_arm64.zip,terraform_1.14.3_linux_amd64.zip manifest",
		"tofu 1.11.2 tofu_1.11.2_linux_amd64.tar.gz,tofu_1.11.2_linux_amd64.zip manifest",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the store holds releases\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, s := range []string{"release terraform 1.14.3", "release tofu 1.11.2"} {
		if !strings.Contains(j.exportOut, s) {
			t.Errorf("export does not mention %q:\n%s", s, j.exportOut)
		}
	}
	// verify names each release and its signer; inventory lists them.
	for _, r := range []struct{ rel, signer string }{{"terraform 1.14.3", "HashiCorp stand-in"}, {"tofu 1.11.2", "OpenTofu stand-in"}} {
		if !strings.Contains(j.verifyOut, "release:    "+r.rel+": SHA256SUMS signed by "+r.signer) {
			t.Errorf("verify does not show %s signed by %s:\n%s", r.rel, r.signer, j.verifyOut)
		}
	}
	inv := harness.MustRun(t, j.work, nil, harness.Bin, "inventory", "--store", j.store)
	fp := verify.GroupFingerprint(verify.Fingerprint(j.rel.HashiCorp))
	if !strings.Contains(inv, "CLI releases") || !strings.Contains(inv, "terraform_1.14.3_linux_amd64.zip") || !strings.Contains(inv, "signed by key "+fp) {
		t.Errorf("inventory does not list the releases and their key %s:\n%s", fp, inv)
	}
}

// TestReleasesDelta: a delta bundle (--since the previous one) leaves out
// the archives and files of the releases the base carried; verify defers
// what it cannot check without them, and import checks the releases with
// the store's copies and adds the new one.
func TestReleasesDelta(t *testing.T) {
	t.Parallel()
	j := newReleaseJourney(t)
	first := strings.Replace(releaseManifest(j.rel), "latest        = 2", "versions      = \"1.14.2\"", 1)
	first = strings.Replace(first, `  versions      = "~> 1.14"`+"\n", "", 1)
	os.WriteFile(j.mf, []byte(first), 0o644)
	j.exportVerifyImport(t)
	base := j.bundle

	os.WriteFile(j.mf, []byte(releaseManifest(j.rel)), 0o644)
	delta := filepath.Join(j.work, "delta.bundle")
	harness.MustRun(t, j.work, j.env(), harness.Bin, "export", "--manifest", j.mf, "--sign-key", j.keys+".key.asc", "--out", delta, "--since", base, "--cache", filepath.Join(j.work, "cache"))
	br := harness.OpenBundle(t, delta, j.keys+".pub.asc")
	omitted := 0
	for _, b := range br.Manifest().Blobs {
		if b.Omitted && (b.Role == dist.RoleReleaseZip || b.Role == dist.RoleReleaseKey) {
			omitted++
		}
	}
	if omitted == 0 {
		t.Errorf("the delta carries again every release file the base has")
	}
	harness.MustRun(t, j.work, nil, harness.Bin, "verify", "--keyring", j.keys+".pub.asc", delta)
	harness.MustRun(t, j.work, nil, harness.Bin, "import", "--keyring", j.keys+".pub.asc", "--store", j.store, delta)
	inv := harness.MustRun(t, j.work, nil, harness.Bin, "inventory", "--store", j.store)
	for _, v := range []string{"terraform_1.14.2_linux_amd64.zip", "terraform_1.14.3_linux_amd64.zip", "tofu_1.11.2_linux_amd64.zip"} {
		if !strings.Contains(inv, v) {
			t.Errorf("after the delta the store lacks %s:\n%s", v, inv)
		}
	}
}

// TestReleasesWithdraw: a withdraw block with cli = true takes a release
// out of the store (no longer served), and a later bundle carrying it is
// refused until a reinstate block lifts the withdrawal.
func TestReleasesWithdraw(t *testing.T) {
	t.Parallel()
	j := newReleaseJourney(t)
	j.exportVerifyImport(t)
	carrying := j.bundle
	wmf := filepath.Join(j.work, "withdraw.hcl")
	os.WriteFile(wmf, []byte(`withdraw "terraform" {
  versions = "1.14.2"
  reason   = "a broken build"
  cli      = true
}
`), 0o644)
	wb := filepath.Join(j.work, "withdraw.bundle")
	harness.MustRun(t, j.work, j.env(), harness.Bin, "export", "--manifest", wmf, "--sign-key", j.keys+".key.asc", "--out", wb, "--cache", filepath.Join(j.work, "cache"))
	out := harness.MustRun(t, j.work, nil, harness.Bin, "import", "--keyring", j.keys+".pub.asc", "--store", j.store, wb)
	t.Logf("import of the withdrawal:\n%s", out)
	inv := harness.MustRun(t, j.work, nil, harness.Bin, "inventory", "--store", j.store)
	if strings.Contains(inv, "terraform_1.14.2_linux_amd64.zip") || !strings.Contains(inv, "terraform_1.14.3_linux_amd64.zip") || !strings.Contains(inv, "a broken build") {
		t.Errorf("after the withdrawal the inventory says:\n%s", inv)
	}
	s := harness.StartServe(t, j.store)
	cl := harness.CAFileClient(t, s.CAFile)
	if resp, _ := harness.HTTPGet(t, cl, s.Base+"releases/terraform/1.14.2/index.json"); resp.StatusCode != 404 {
		t.Errorf("the withdrawn release is still served: %d", resp.StatusCode)
	}
	out, code := harness.RunBounded(t, j.work, "import", "--keyring", j.keys+".pub.asc", "--store", j.store, carrying)
	if code != 1 || !strings.Contains(out, "release terraform 1.14.2, which bundle") || !strings.Contains(out, "cli      = true") {
		t.Errorf("import of a bundle carrying the withdrawn release: exit %d\n%s", code, out)
	}
}
