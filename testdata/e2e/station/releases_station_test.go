package station

import (
	"os"
	"strings"
	"testing"

	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
	"github.com/airgap/airgap/verify"
)

// TestStationReleaseKeys: in a store that takes new publisher keys only
// from the transfer station, a product's first release key that the
// export manifest pinned (not airgap) needs the station's approval, and so
// does a later release signed by another key; 'airgap approve
// --accept-publisher-key' names the release's key, and the import takes
// it then and only then, the store unchanged by each refusal.
func TestStationReleaseKeys(t *testing.T) {
	t.Parallel()
	in := registrytest.New(t)
	rel := harness.ReleaseWorld(t, in)
	s := harness.NewStation(t, in)
	stationKey := s.WithStation(t, stationPolicy)
	manifest := func(v, key string) string {
		return "platforms = [\"linux_amd64\"]\ncli \"terraform\" {\n  versions      = \"" + v + "\"\n  publisher_key = \"" + key + "\"\n}\n"
	}
	importOut := func(b string) (string, error) {
		return harness.CmdRun(t, s.Work, nil, harness.Bin, "import", "--keyring", s.Keyring, "--store", s.Store, b)
	}
	hcFP := verify.Fingerprint(rel.HashiCorp)
	b1 := s.Export(t, "first", manifest("1.14.2", rel.HashiCorpKey))
	harness.MustRun(t, s.Work, nil, harness.Bin, "approve", "--key", stationKey, "--keyring", s.Keyring, b1)
	if out, err := importOut(b1); err == nil || !strings.Contains(out, "release terraform 1.14.2: signed by key "+verify.GroupFingerprint(hcFP)) ||
		!strings.Contains(out, "the store takes a product's first key only from the transfer station") {
		t.Fatalf("the first release key, pinned by the manifest, was not refused without the station's approval of it (%v):\n%s", err, out)
	}
	os.Remove(b1 + ".approval") // the station approves again, with the key (one approval counts per station key)
	harness.MustRun(t, s.Work, nil, harness.Bin, "approve", "--key", stationKey, "--keyring", s.Keyring, "--accept-publisher-key", hcFP, b1)
	harness.MustRun(t, s.Work, nil, harness.Bin, "import", "--keyring", s.Keyring, "--store", s.Store, b1)

	// The publisher's next release, signed by another key.
	in.AddCLIRelease(t, "terraform", "1.15.0", []string{"linux_amd64"}, harness.CLIStub(t), rel.OpenTofu)
	b2 := s.Export(t, "second", manifest("1.15.0", rel.OpenTofuKey))
	harness.MustRun(t, s.Work, nil, harness.Bin, "approve", "--key", stationKey, "--keyring", s.Keyring, b2)
	newFP := verify.Fingerprint(rel.OpenTofu)
	if out, err := importOut(b2); err == nil || !strings.Contains(out, "the store's terraform releases are signed by "+verify.GroupFingerprint(hcFP)) || !strings.Contains(out, "airgap approve") {
		t.Fatalf("a release signed by a new key was not refused (%v):\n%s", err, out)
	}
	if out, err := harness.CmdRun(t, s.Work, nil, harness.Bin, "import", "--keyring", s.Keyring, "--store", s.Store, "--accept-publisher-key", newFP, b2); err == nil || !strings.Contains(out, "only from a transfer station") {
		t.Errorf("--accept-publisher-key at import was taken in a store that takes keys only from the station (%v):\n%s", err, out)
	}
	os.Remove(b2 + ".approval")
	harness.MustRun(t, s.Work, nil, harness.Bin, "approve", "--key", stationKey, "--keyring", s.Keyring, "--accept-publisher-key", newFP, b2)
	harness.MustRun(t, s.Work, nil, harness.Bin, "import", "--keyring", s.Keyring, "--store", s.Store, b2)
	inv := harness.MustRun(t, s.Work, nil, harness.Bin, "inventory", "--store", s.Store)
	if !strings.Contains(inv, "terraform_1.15.0_linux_amd64.zip") {
		t.Errorf("the approved release is not in the store:\n%s", inv)
	}
}
