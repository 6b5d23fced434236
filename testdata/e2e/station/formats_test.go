package station

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// Every bundle and store format an airgap has written stays readable: each
// format has a fixture in testdata/formats/vN, written by the airgap of its
// time (see its README), and TestFormatFixtures runs today's binary on it —
// verify and import the old bundle, then read, import into and serve the old
// store to the real terraform.
//
// To add the fixture of a new format (before the format changes again):
//
//	AIRGAP_WRITE_FORMAT_FIXTURE=testdata/formats/vN go test -run TestWriteFormatFixture ./testdata/e2e/station
func TestFormatFixtures(t *testing.T) {
	t.Parallel()
	dirs, _ := filepath.Glob(filepath.Join(harness.Root(), "testdata", "formats", "v*"))
	if len(dirs) == 0 {
		t.Fatal("no format fixtures in testdata/formats")
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) { checkFormatFixture(t, dir) })
	}
}

func checkFormatFixture(t *testing.T, fixture string) {
	tf := harness.TerraformBin(t)
	abs, _ := filepath.Abs(fixture)
	keyring := filepath.Join(abs, "site.pub.asc")
	bundleFile := filepath.Join(abs, "site.bundle")
	work := t.TempDir()

	// The old bundle verifies and imports into a new store.
	out := harness.MustRun(t, work, nil, harness.Bin, "verify", "--keyring", keyring, bundleFile)
	if !strings.Contains(out, "OK") {
		t.Errorf("verify of the old bundle: %s", out)
	}
	// From format 2 on the bundle carries an SBOM, which verify builds
	// again with the generator that wrote it: the bytes must not move.
	if filepath.Base(fixture) != "v1" && !strings.Contains(out, "identical to the signed one") {
		t.Errorf("the old bundle's SBOM was not made again byte for byte: %s", out)
	}
	fresh := filepath.Join(work, "fresh-store")
	harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", keyring, "--store", fresh, bundleFile)

	// The old store (a copy: serve writes tls/ into it) is read, takes an
	// import, and serves the real client offline.
	old := filepath.Join(work, "old-store")
	harness.CopyDir(t, filepath.Join(abs, "store"), old)
	inv := harness.MustRun(t, work, nil, harness.Bin, "inventory", "--store", old)
	for _, want := range []string{"registry.terraform.io/hashicorp/random", "registry.terraform.io/example/vpc/aws"} {
		if !strings.Contains(inv, want) {
			t.Errorf("inventory of the old store lacks %s:\n%s", want, inv)
		}
	}
	enclave := filepath.Join(work, "enclave")
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", enclave, "--no-passphrase", "--name", "Enclave <e@site.test>")
	if v := filepath.Base(fixture); v == "v1" || v == "v2" {
		checkUnprovenCustody(t, work, old, keyring, bundleFile, enclave)
	} else {
		checkFormat3(t, work, abs, old, keyring, enclave)
	}
	srv := harness.StartServe(t, old)
	base, caFile := srv.Base, srv.CAFile
	rc := filepath.Join(work, "airgap.tfrc")
	cfg := harness.MustRun(t, work, []string{"SSL_CERT_FILE=" + caFile}, harness.Bin, "client-config", "--url", strings.TrimSuffix(base, "/"), "--mode", "registry")
	os.WriteFile(rc, []byte(cfg), 0o644)
	offline := []string{"TF_CLI_CONFIG_FILE=" + rc, "SSL_CERT_FILE=" + caFile,
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=localhost,127.0.0.1"}
	proj := filepath.Join(work, "project")
	harness.CopyDir(t, filepath.Join(abs, "project"), proj)
	lockBefore, _ := os.ReadFile(filepath.Join(proj, ".terraform.lock.hcl"))
	harness.MustRun(t, proj, offline, tf, "init", "-input=false", "-no-color", "-lockfile=readonly")
	if got, _ := os.ReadFile(filepath.Join(proj, ".terraform.lock.hcl")); !bytes.Equal(got, lockBefore) {
		t.Errorf("the fixture's lock file changed offline:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(proj, ".terraform", "modules", "vpc", "main.tf")); err != nil {
		t.Errorf("the module was not installed from the old store: %v", err)
	}
}

// checkUnprovenCustody: a store of format 1 or 2 kept no bundle
// manifests, so what it exports to the next network records its imports
// but cannot prove them, until it imports the bundle again, which keeps
// the manifest (custody.go).
func checkUnprovenCustody(t *testing.T, work, old, keyring, bundleFile, enclave string) {
	t.Helper()
	harness.MustRun(t, work, nil, harness.Bin, "export", "--from-store", old, "--sign-key", enclave+".key.asc", "--out", filepath.Join(work, "unproven.bundle"))
	if out := harness.MustRun(t, work, nil, harness.Bin, "verify", "--keyring", enclave+".pub.asc", filepath.Join(work, "unproven.bundle")); !strings.Contains(out, "custody unproven") || !strings.Contains(out, "RECORDED ONLY") {
		t.Errorf("a bundle exported from an old store does not say its custody is unproven:\n%s", out)
	}
	if out := harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", keyring, "--store", old, bundleFile); !strings.Contains(out, "already imported") || !strings.Contains(out, "now keeps its signed manifest") {
		t.Errorf("re-import into the old store: %s", out)
	}
	if out := harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", keyring, "--store", old, bundleFile); !strings.Contains(out, "already imported") || !strings.Contains(out, "nothing changed") {
		t.Errorf("second re-import into the old store: %s", out)
	}
	harness.MustRun(t, work, nil, harness.Bin, "export", "--from-store", old, "--sign-key", enclave+".key.asc", "--out", filepath.Join(work, "proven.bundle"))
	if out := harness.MustRun(t, work, nil, harness.Bin, "verify", "--keyring", enclave+".pub.asc", filepath.Join(work, "proven.bundle")); strings.Contains(out, "custody unproven") || !strings.Contains(out, "signature checked") {
		t.Errorf("a bundle exported from the old store after the re-import does not prove its custody:\n%s", out)
	}
}

// checkFormat3 checks what format 3 added: the station's approval beside
// the bundle counts for a store whose import.hcl requires one (and the
// bundle without it is refused), the provider's documentation is served
// from the old store, and the old store's export to the next network
// (enclave.bundle, written by an airgap of format 3) verifies with its
// chain of custody and imports; today's export from the old store proves
// its custody at once.
func checkFormat3(t *testing.T, work, abs, old, keyring, enclave string) {
	t.Helper()
	bare := filepath.Join(work, "unapproved.bundle")
	b, _ := os.ReadFile(filepath.Join(abs, "site.bundle"))
	os.WriteFile(bare, b, 0o644)
	before := bundletest.Snapshot(t, old)
	if _, stderr, code := harness.RunSplit(t, work, nil, "import", "--keyring", keyring, "--store", old, bare); code == 0 || !strings.Contains(stderr, "approv") {
		t.Errorf("an import of the bundle without its approval into a store that requires one: exit %d\n%s", code, stderr)
	}
	bundletest.SameTree(t, before, bundletest.Snapshot(t, old))
	if out := harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", keyring, "--store", old, filepath.Join(abs, "site.bundle")); !strings.Contains(out, "already imported") {
		t.Errorf("re-import of the approved bundle into the old store: %s", out)
	}
	if out := harness.MustRun(t, work, nil, harness.Bin, "docs", "--store", old, "hashicorp/random@3.6.2", "random_string"); !strings.Contains(out, "A random string") {
		t.Errorf("airgap docs from the old store: %s", out)
	}
	enc := filepath.Join(abs, "enclave.bundle")
	out := harness.MustRun(t, work, nil, harness.Bin, "verify", "--keyring", filepath.Join(abs, "enclave.pub.asc"), enc)
	if !strings.Contains(out, "OK") || !strings.Contains(out, "Fixture Site") || strings.Contains(out, "custody unproven") {
		t.Errorf("verify of the old enclave bundle does not show its proven chain:\n%s", out)
	}
	harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", filepath.Join(abs, "enclave.pub.asc"), "--store", filepath.Join(work, "next"), enc)
	harness.MustRun(t, work, nil, harness.Bin, "export", "--from-store", old, "--sign-key", enclave+".key.asc", "--out", filepath.Join(work, "proven.bundle"))
	if out := harness.MustRun(t, work, nil, harness.Bin, "verify", "--keyring", enclave+".pub.asc", filepath.Join(work, "proven.bundle")); strings.Contains(out, "custody unproven") || !strings.Contains(out, "signature checked") {
		t.Errorf("a bundle exported from the old format-3 store does not prove its custody:\n%s", out)
	}
}

// TestWriteFormatFixture writes the fixture of the format this airgap
// writes into $AIRGAP_WRITE_FORMAT_FIXTURE (run by hand, see
// TestFormatFixtures): a site key, a bundle exported from the stand-in
// registries, the store it imports into, and a project with the lock file
// terraform made online.
func TestWriteFormatFixture(t *testing.T) {
	out := os.Getenv("AIRGAP_WRITE_FORMAT_FIXTURE")
	if out == "" {
		t.Skip("writes a fixture only when AIRGAP_WRITE_FORMAT_FIXTURE is set")
	}
	if !filepath.IsAbs(out) { // relative to the repository, where the command above runs
		out = filepath.Join(harness.Root(), out)
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatalf("%s exists: a fixture is never rewritten", out)
	}
	tf := harness.TerraformBin(t)
	in := registrytest.World(t)
	// Format 3: the provider's documentation, from its repository at each
	// version's tag (the convention github.com/NS/terraform-provider-TYPE).
	var tags []registrytest.Release
	for _, v := range []string{"3.5.1", "3.6.0", "3.6.2"} {
		tags = append(tags, registrytest.Release{Tag: "v" + v, Files: map[string]*string{
			"docs/index.md":            registrytest.Str("---\npage_title: \"Provider: Random\"\n---\n\n# Random provider\n\nVersion " + v + ".\n"),
			"docs/resources/string.md": registrytest.Str("---\nsubcategory: \"\"\npage_title: \"random_string\"\n---\n\n# random_string\n\nA random string.\n"),
		}})
	}
	in.AddTaggedRepo(t, "hashicorp/terraform-provider-random", tags, nil)
	online := append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(t.TempDir(), "empty.tfrc"), "SOURCE_DATE_EPOCH=1767225600")
	work := t.TempDir()
	proj := filepath.Join(out, "project")
	os.MkdirAll(proj, 0o755)
	os.WriteFile(filepath.Join(proj, "main.tf"), []byte(formatFixtureProject), 0o644)
	harness.MustRun(t, proj, online, tf, "init", "-input=false", "-no-color")
	os.RemoveAll(filepath.Join(proj, ".terraform"))
	keys := filepath.Join(work, "site")
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", keys, "--name", "Fixture Site <ops@site.test>", "--no-passphrase")
	b, _ := os.ReadFile(keys + ".pub.asc")
	os.WriteFile(filepath.Join(out, "site.pub.asc"), b, 0o644)
	manifest := filepath.Join(work, "airgap.hcl")
	os.WriteFile(manifest, []byte(formatFixtureManifest), 0o644)
	harness.MustRun(t, work, online, harness.Bin, "export", "--manifest", manifest, "--sign-key", keys+".key.asc",
		"--out", filepath.Join(out, "site.bundle"), "--cache", filepath.Join(work, "cache"))
	// Format 3: the transfer station's approval beside the bundle, a store
	// whose import.hcl requires one, and the store's export to the next
	// network (a bundle with a chain of custody).
	station := filepath.Join(work, "station")
	harness.MustRun(t, work, nil, harness.Bin, "keys", "generate", "--out", station, "--name", "Fixture Station <station@site.test>", "--no-passphrase")
	harness.MustRun(t, work, nil, harness.Bin, "approve", "--key", station+".key.asc", "--keyring", keys+".pub.asc", "--note", "fixture: reviewed",
		filepath.Join(out, "site.bundle"))
	st := filepath.Join(out, "store")
	os.MkdirAll(st, 0o755)
	b, _ = os.ReadFile(station + ".pub.asc")
	os.WriteFile(filepath.Join(st, "stations.pub.asc"), b, 0o644)
	os.WriteFile(filepath.Join(st, "import.hcl"), []byte("approvals {\n  keyring  = \"stations.pub.asc\"\n  required = 1\n}\n"), 0o644)
	harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", keys+".pub.asc", "--store", st, filepath.Join(out, "site.bundle"))
	enclave := filepath.Join(work, "enclave")
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", enclave, "--name", "Fixture Enclave <enclave@site.test>", "--no-passphrase")
	b, _ = os.ReadFile(enclave + ".pub.asc")
	os.WriteFile(filepath.Join(out, "enclave.pub.asc"), b, 0o644)
	harness.MustRun(t, work, online, harness.Bin, "export", "--from-store", st, "--sign-key", enclave+".key.asc", "--out", filepath.Join(out, "enclave.bundle"))
	os.RemoveAll(filepath.Join(st, "tmp"))
	os.Remove(filepath.Join(st, "lock"))
	t.Logf("wrote %s with %s", out, harness.MustRun(t, work, nil, harness.Bin, "--version"))
}

const formatFixtureProject = `terraform {
  required_providers {
    random = {
      source  = "hashicorp/random"
      version = "~> 3.5"
    }
  }
}

module "vpc" {
  source  = "example/vpc/aws"
  version = "1.0.0"
}
`

const formatFixtureManifest = `
platforms = ["linux_amd64", "darwin_arm64"]

provider "hashicorp/random" {
  versions = "~> 3.5"
}
module "example/vpc/aws" {
  versions = "1.0.0"
}

# format 2: a gate's results and report travel in the bundle
gate "fixture" {
  for     = "modules"
  command = ["sh", "-c", "echo checked \"$1\"", "sh", "{dir}"]
  version = ["sh", "-c", "echo fixture-gate 1"]
}
`
