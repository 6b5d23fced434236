package station

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
	"github.com/airgap/airgap/verify"
)

// TestFirstBundleStation: the first bundle into a store that requires a
// station approval and takes publisher keys only from the station. The
// empty store's inventory (text and JSON) carries its policy; the
// forecast refuses the namespace's first key until the station accepts
// it; approve without accepting it writes nothing; with it, the forecast
// says "first use: will pin KEY for NAMESPACE", the import pins it as
// approved at the station, and terraform init installs. A store that
// takes first keys by first use forecasts the same pin, as trust on first
// use.
func TestFirstBundleStation(t *testing.T) {
	t.Parallel()
	tf := harness.TerraformBin(t)
	in := registrytest.World(t)
	s := harness.NewStation(t, in)
	stationKey := s.WithStation(t, stationPolicy)
	pubKey := verify.Fingerprint(in.Publisher)
	pinLine := "first use: will pin " + verify.GroupFingerprint(pubKey) + " (publisher <publisher@example.test>) for registry.terraform.io/hashicorp"

	text := harness.MustRun(t, s.Work, nil, harness.Bin, "inventory", "--store", s.Store)
	for _, want := range []string{"store " + s.Store + ": 0 provider versions", "import rules (import.hcl): every bundle needs 1 approval(s)",
		"import rules (import.hcl): new publisher keys, a namespace's first one too, are approved only at the transfer station", "none yet"} {
		if !strings.Contains(text, want) {
			t.Errorf("the empty store's inventory lacks %q:\n%s", want, text)
		}
	}
	have := s.Inventory(t, "have")
	var inv struct {
		Policy *struct {
			PublisherKeyApprovals string `json:"publisher_key_approvals"`
			Approvals             *struct{ Required int }
		}
		Imports []any
		Blobs   []any
	}
	if data, _ := os.ReadFile(have); json.Unmarshal(data, &inv) != nil || inv.Policy == nil || inv.Policy.PublisherKeyApprovals != "station" ||
		inv.Policy.Approvals == nil || inv.Policy.Approvals.Required != 1 || inv.Imports == nil || inv.Blobs == nil {
		t.Fatalf("the empty store's inventory --json does not carry its policy:\n%s", data)
	}

	const manifest = "platforms = [\"linux_amd64\"]\nprovider \"hashicorp/random\" {\n  versions = \"3.6.2\"\n}\n"
	b := s.Export(t, "first", manifest)
	// The export against the empty store's inventory says so first.
	out := harness.MustRun(t, s.Work, s.Online, harness.Bin, "export", "--manifest", filepath.Join(s.Work, "first.hcl"), "--sign-key", "k/site.key.asc",
		"--out", filepath.Join(s.Work, "against-have.bundle"), "--cache", filepath.Join(s.Work, "cache"), "--have", have)
	if want := "takes its first one only from the station; this bundle will be refused unless approved there"; !strings.Contains(out, want) ||
		!strings.Contains(out, "'airgap approve --key STATION.key.asc --accept-publisher-key "+pubKey+" BUNDLE'") {
		t.Errorf("export --have of the empty store does not warn %q:\n%s", want, out)
	}
	out, code := s.Verify(t, "--against", have, b)
	t.Logf("the forecast of the first bundle:\n%s", out)
	for _, want := range []string{"provider registry.terraform.io/hashicorp/random 3.6.2: publisher key:",
		"the namespace's first publisher key; this store takes publisher keys, its first ones too, only from a transfer station's approval"} {
		if code != 4 || !strings.Contains(out, want) {
			t.Errorf("the forecast (exit %d, want 4) lacks %q", code, want)
		}
	}

	// Approving the bundle without accepting the key would not make the
	// import accept it: approve writes nothing; the import refuses.
	if out, err := harness.CmdRun(t, s.Work, nil, harness.Bin, "approve", "--key", stationKey, "--keyring", s.Keyring, "--against", have, b); harness.ExitCode(err) != 4 ||
		!strings.Contains(out, "first publisher key") {
		t.Errorf("approve without accepting the first key (exit %d):\n%s", harness.ExitCode(err), out)
	}
	if _, err := os.Stat(b + ".approval"); err == nil {
		t.Fatal("a refused approve wrote an approval")
	}
	harness.MustRun(t, s.Work, nil, harness.Bin, "approve", "--key", stationKey, "--keyring", s.Keyring, b)
	before := bundletest.Snapshot(t, s.Store)
	out, err := harness.CmdRun(t, s.Work, nil, harness.Bin, "import", "--keyring", s.Keyring, "--store", s.Store, b)
	if err == nil || !strings.Contains(out, "first publisher key") || !strings.Contains(out, "airgap approve --key STATION.key.asc --accept-publisher-key '"+verify.GroupFingerprint(pubKey)+"' BUNDLE") {
		t.Errorf("the import with an approval that does not accept the first key (err %v):\n%s", err, out)
	}
	bundletest.SameTree(t, before, bundletest.Snapshot(t, s.Store))
	os.Remove(b + ".approval")

	// Accepted at the station: forecast, import, terraform.
	stdout, stderr, code := harness.RunSplit(t, s.Work, nil, "approve", "--key", stationKey, "--keyring", s.Keyring, "--against", have, "--accept-publisher-key", pubKey, b)
	if code != 0 || !strings.Contains(stdout, "Verdict: import will accept") || !strings.Contains(stdout, pinLine+" (approved at the transfer station)") {
		t.Fatalf("approve --accept-publisher-key of the first key: exit %d\n%s\n%s", code, stdout, stderr)
	}
	r, raw, code := s.VerifyJSON(t, "--against", have, b)
	if code != 0 || r.Forecast == nil || r.Forecast.Verdict != "accept" {
		t.Errorf("verify --json with the approval: exit %d, %+v", code, r.Forecast)
	}
	pins, _ := raw["forecast"].(map[string]any)["pins"].([]any)
	if len(pins) != 1 {
		t.Fatalf("verify --json's forecast.pins: %v", raw["forecast"])
	}
	if p := pins[0].(map[string]any); p["namespace"] != "registry.terraform.io/hashicorp" || p["first_use"] != true || p["how"] != "approved_at_station" ||
		p["key"].(map[string]any)["fingerprint"] != pubKey {
		t.Errorf("verify --json's forecast.pins: %v", pins)
	}
	out = harness.MustRun(t, s.Work, nil, harness.Bin, "import", "--keyring", s.Keyring, "--store", s.Store, b)
	if !strings.Contains(out, "pinned publisher key for registry.terraform.io/hashicorp: "+verify.GroupFingerprint(pubKey)) {
		t.Errorf("the import does not pin the first key:\n%s", out)
	}
	var after struct {
		PublisherKeys []struct {
			Namespace string
			Keys      []struct{ Fingerprint, How string }
		} `json:"publisher_keys"`
	}
	json.Unmarshal([]byte(harness.MustRunStdout(t, s.Work, "inventory", "--store", s.Store, "--json")), &after)
	if len(after.PublisherKeys) != 1 || len(after.PublisherKeys[0].Keys) != 1 || after.PublisherKeys[0].Keys[0].How != "approved_at_station" {
		t.Errorf("the store's pins after the first import: %+v", after.PublisherKeys)
	}
	srv := harness.StartServe(t, s.Store)
	rc := filepath.Join(t.TempDir(), "airgap.tfrc")
	os.WriteFile(rc, []byte(harness.MustRun(t, s.Work, []string{"SSL_CERT_FILE=" + srv.CAFile}, harness.Bin, "client-config", "--url", strings.TrimSuffix(srv.Base, "/"), "--mode", "registry")), 0o644)
	offline := []string{"TF_CLI_CONFIG_FILE=" + rc, "SSL_CERT_FILE=" + srv.CAFile, "HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=localhost,127.0.0.1"}
	dir := filepath.Join(t.TempDir(), "project")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "main.tf"), []byte("terraform {\n  required_providers {\n    random = {\n      source  = \"hashicorp/random\"\n      version = \"3.6.2\"\n    }\n  }\n}\n"), 0o644)
	if out := harness.MustRun(t, dir, offline, tf, "init", "-input=false", "-no-color"); !strings.Contains(out, "Installed hashicorp/random v3.6.2") {
		t.Errorf("terraform did not install 3.6.2:\n%s", out)
	}

	// A store that requires an approval but pins first keys by first use
	// forecasts that pin, and reads the bundle, which lacks only its
	// approval, as one it will accept once approved.
	tofu := filepath.Join(s.Work, "tofu-store")
	os.MkdirAll(tofu, 0o755)
	os.WriteFile(filepath.Join(tofu, "import.hcl"), []byte(strings.TrimSuffix(stationPolicy, "publisher_key_approvals = \"station\"\n")), 0o644)
	pub, _ := os.ReadFile(filepath.Join(s.Store, "stations.pub.asc"))
	os.WriteFile(filepath.Join(tofu, "stations.pub.asc"), pub, 0o644)
	p := filepath.Join(s.Work, "tofu.json")
	os.WriteFile(p, []byte(harness.MustRunStdout(t, s.Work, "inventory", "--store", tofu, "--json")), 0o644)
	os.Rename(b+".approval", b+".kept")
	out, code = s.Verify(t, "--against", p, b)
	for _, want := range []string{pinLine + " (trust on first use", "import:    will accept once approved (1 of 1 required approval(s) missing",
		"Verdict: import will accept once approved: 1 of 1 required approval(s) missing ('airgap approve' at the transfer station)",
		"the import will accept it once approved at the transfer station"} {
		if code != 4 || !strings.Contains(out, want) {
			t.Errorf("the forecast of a first-use store that requires an approval (exit %d, want 4) lacks %q:\n%s", code, want, out)
		}
	}
	if strings.Contains(out, "WILL REFUSE") {
		t.Errorf("a bundle that lacks only its approval reads WILL REFUSE:\n%s", out)
	}
}
