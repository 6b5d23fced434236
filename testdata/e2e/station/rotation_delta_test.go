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

// TestRotationDelta: the publisher rotates its key and re-signs a version
// the offline store already holds (its packages and SHA256SUMS unchanged).
// A --have delta and a --since bundle both bring the new signature; each
// carries the unchanged SHA256SUMS beside it, so that the station can check
// the signature: verify --against names the key change, approve
// --accept-publisher-key takes it, the import pins it, and terraform
// init installs the version signed by the new key.
func TestRotationDelta(t *testing.T) {
	t.Parallel()
	tf := harness.TerraformBin(t)
	in := registrytest.World(t)
	s := harness.NewStation(t, in)
	stationKey := s.WithStation(t, stationPolicy)
	const manifest = "platforms = [\"linux_amd64\"]\nprovider \"hashicorp/random\" {\n  versions = \"3.6.2\"\n}\n"
	b1 := s.Export(t, "first", manifest)
	harness.MustRun(t, s.Work, nil, harness.Bin, "approve", "--key", stationKey, "--keyring", s.Keyring, "--accept-publisher-key", verify.Fingerprint(in.Publisher), b1)
	harness.MustRun(t, s.Work, nil, harness.Bin, "import", "--keyring", s.Keyring, "--store", s.Store, b1)
	have := s.Inventory(t, "have")
	other := filepath.Join(s.Work, "store-since")
	harness.CopyTree(t, s.Store, other)

	// The rotation: 3.6.2 re-signed by the new key.
	in.Publisher = bundletest.Key(t, "rotated publisher")
	newKey, newID := verify.Fingerprint(in.Publisher), verify.KeyID(in.Publisher)
	in.Resign(t, "registry.terraform.io", "hashicorp", "random", "3.6.2")

	out := harness.MustRun(t, s.Work, s.Online, harness.Bin, "export", "--manifest", filepath.Join(s.Work, "first.hcl"), "--sign-key", "k/site.key.asc",
		"--out", filepath.Join(s.Work, "delta.bundle"), "--cache", filepath.Join(s.Work, "cache"), "--have", have)
	delta := filepath.Join(s.Work, "delta.bundle")
	if want := "'airgap approve --key STATION.key.asc --accept-publisher-key " + newKey + " BUNDLE'"; !strings.Contains(out, want) {
		t.Errorf("the export's warning does not give the station's command %s:\n%s", want, out)
	}
	since := s.Export(t, "since", manifest, "--since", b1)
	for _, c := range []struct{ name, bundle, store string }{{"--have", delta, s.Store}, {"--since", since, other}} {
		out, code := s.Verify(t, "--against", have, c.bundle)
		t.Logf("%s: the forecast:\n%s", c.name, out)
		for _, want := range []string{"provider registry.terraform.io/hashicorp/random 3.6.2: publisher key:", "import:    WILL REFUSE"} {
			if code != 4 || !strings.Contains(out, want) {
				t.Errorf("%s: verify --against (exit %d, want 4) lacks %q", c.name, code, want)
			}
		}
		if strings.Contains(out, "signature: left for import") {
			t.Errorf("%s: the forecast leaves the new signature for import", c.name)
		}
		stdout, stderr, code := harness.RunSplit(t, s.Work, nil, "approve", "--key", stationKey, "--keyring", s.Keyring, "--against", have,
			"--accept-publisher-key", newKey, c.bundle)
		if code != 0 || !strings.Contains(stdout, "Verdict: import will accept") {
			t.Fatalf("%s: approve --accept-publisher-key: exit %d\n%s\n%s", c.name, code, stdout, stderr)
		}
		// Approved, the version is already present, and the against section
		// says what the import still changes in it: its signature.
		out, _ = s.Verify(t, "--against", have, c.bundle)
		if !strings.Contains(out, "already present: 1 (1 of them updated by the import)\n") ||
			!strings.Contains(out, "provider registry.terraform.io/hashicorp/random 3.6.2 (linux_amd64): the import updates its SHA256SUMS signature\n") {
			t.Errorf("%s: verify --against, approved, does not say the import updates the signature:\n%s", c.name, out)
		}
		out = harness.MustRun(t, s.Work, nil, harness.Bin, "import", "--keyring", s.Keyring, "--store", c.store, c.bundle)
		if !strings.Contains(out, "pinned publisher key for registry.terraform.io/hashicorp: "+verify.GroupFingerprint(newKey)) {
			t.Errorf("%s: the import does not pin the new key:\n%s", c.name, out)
		}
	}

	// terraform init installs 3.6.2 from each store, signed by the new key.
	for _, st := range []string{s.Store, other} {
		srv := harness.StartServe(t, st)
		rc := filepath.Join(t.TempDir(), "airgap.tfrc")
		os.WriteFile(rc, []byte(harness.MustRun(t, s.Work, []string{"SSL_CERT_FILE=" + srv.CAFile}, harness.Bin, "client-config", "--url", strings.TrimSuffix(srv.Base, "/"), "--mode", "registry")), 0o644)
		offline := []string{"TF_CLI_CONFIG_FILE=" + rc, "SSL_CERT_FILE=" + srv.CAFile, "HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=localhost,127.0.0.1"}
		dir := filepath.Join(t.TempDir(), "project")
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "main.tf"), []byte("terraform {\n  required_providers {\n    random = {\n      source  = \"hashicorp/random\"\n      version = \"3.6.2\"\n    }\n  }\n}\n"), 0o644)
		out := harness.MustRun(t, dir, offline, tf, "init", "-input=false", "-no-color")
		if !strings.Contains(out, "Installed hashicorp/random v3.6.2") || !strings.Contains(out, "key ID "+newID) {
			t.Errorf("%s: terraform did not install 3.6.2 signed by the rotated key:\n%s", st, out)
		}
	}
}
