package store_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/sbom/sbomtest"
)

// gatedBundle is bundletest.Standard with build information, an SBOM and
// the given gates, each passed on every entry of its kind.
func gatedBundle(t *testing.T, signer *openpgp.Entity, gates ...dist.Gate) ([]byte, *bundle.Manifest) {
	t.Helper()
	dir := t.TempDir()
	set := bundletest.Standard(t, dir, signer)
	set.AddBuildInfo(t, dir)
	for _, g := range gates {
		set.AddGate(t, dir, g, dist.GateResult{Status: dist.GatePassed}, []byte(g.Name+": no findings\n"))
	}
	set.SBOM = true
	var b bytes.Buffer
	m := set.WriteBundle(t, &b, signer, bundle.CompressionZstd)
	return b.Bytes(), m
}

var (
	trivyGate = dist.Gate{Name: "trivy", For: dist.GateModules, Command: []string{"trivy", "{dir}"}, Tool: "trivy 0.74.0"}
	vulnGate  = dist.Gate{Name: "govulncheck", For: dist.GateProviders, Command: []string{"govulncheck", "{binary}"}, Tool: "govulncheck 1.9.0"}
)

// RequireGates refuses a bundle in which an entry of the required kind
// lacks the gate, naming the entries; the store is not changed. A bundle
// that has every required result imports; its SBOM blob is checked, not
// kept; the store's SBOM describes what it serves.
func TestRequireGates(t *testing.T) {
	signer := bundletest.Key(t, "site")
	kr := openpgp.EntityList{signer}
	onlyTrivy, _ := gatedBundle(t, signer, trivyGate)
	both, m := gatedBundle(t, signer, trivyGate, vulnGate)
	root := filepath.Join(t.TempDir(), "store")
	if _, err := store.Import(root, bytes.NewReader(onlyTrivy), store.ImportOptions{Keyring: kr}); err != nil {
		t.Fatal(err)
	}
	before := bundletest.Snapshot(t, root)
	for _, c := range []struct {
		reqs []string
		want []string
	}{
		{[]string{"providers:govulncheck"}, []string{"4 entries", "govulncheck: provider registry.opentofu.org/hashicorp/null 3.2.2 linux_amd64", "govulncheck: provider registry.terraform.io/hashicorp/random 3.6.0 darwin_arm64"}},
		{[]string{"govulncheck"}, []string{"5 entries", "govulncheck: module registry.terraform.io/example/vpc/aws 1.0.0"}},
		{[]string{"modules:trivy", "modules:scorecard"}, []string{"1 entry", "scorecard: module registry.terraform.io/example/vpc/aws 1.0.0"}},
	} {
		var reqs []store.GateRequirement
		for _, s := range c.reqs {
			r, err := store.ParseGateRequirement(s)
			if err != nil {
				t.Fatal(err)
			}
			reqs = append(reqs, r)
		}
		_, err := store.Import(root, bytes.NewReader(onlyTrivy), store.ImportOptions{Keyring: kr, Policies: []store.Policy{store.RequireGates(reqs)}})
		if !errors.Is(err, store.ErrGateMissing) || !strings.Contains(err.Error(), "the store was not changed") {
			t.Fatalf("%v: want ErrGateMissing, got %v", c.reqs, err)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: the refusal does not say %q:\n%v", c.reqs, w, err)
			}
		}
	}
	bundletest.SameTree(t, before, bundletest.Snapshot(t, root))

	reqs := []store.GateRequirement{{Gate: "trivy", Kind: "modules"}, {Gate: "govulncheck", Kind: "providers"}}
	if _, err := store.Import(root, bytes.NewReader(both), store.ImportOptions{Keyring: kr, Policies: []store.Policy{store.RequireGates(reqs)}}); err != nil {
		t.Fatalf("a bundle with every required gate: %v", err)
	}
	if _, err := os.Stat(store.BlobPath(root, m.SBOM)); err == nil {
		t.Error("the bundle's SBOM blob was kept in the store")
	}
	inv, err := store.LoadInventory(root)
	if err != nil {
		t.Fatal(err)
	}
	if g := inv.Catalog.Modules[0].Gates; len(g) != 1 || g[0].Gate != "trivy" {
		t.Errorf("the module's gate results in the store: %+v", g)
	}
	if g := inv.Catalog.Providers[0].Packages[0].Gates; len(g) != 1 || g[0].Gate != "govulncheck" {
		t.Errorf("a package's gate results in the store: %+v", g)
	}
	var text bytes.Buffer
	inv.WriteText(&text, root)
	if !strings.Contains(text.String(), "gate govulncheck: passed (exit 0)") || !strings.Contains(text.String(), filepath.Join(root, "blobs", "sha256")) {
		t.Errorf("inventory does not show the results with their reports:\n%s", text.String())
	}
	sb, err := store.SBOM(root, &inv.Index, "airgap test")
	if err != nil {
		t.Fatal(err)
	}
	sbomtest.Validate(t, sb)
	if !bytes.Contains(sb, []byte(`"name":"registry.terraform.io/hashicorp/random"`)) || !bytes.Contains(sb, []byte(`"airgap:go:build-info","value":"none: `)) {
		t.Errorf("the store's SBOM: %.400s", sb)
	}
	// Re-importing the same bundle takes the packages' build information
	// from the store (they are known) and still checks the SBOM.
	res, err := store.Import(root, bytes.NewReader(both), store.ImportOptions{Keyring: kr})
	if err != nil || !res.Unchanged {
		t.Fatalf("re-import: %+v %v", res, err)
	}
}

// STORE/import.hcl requires gates of every import; a broken file is
// refused at file:line before anything is read.
func TestImportConfig(t *testing.T) {
	root := t.TempDir()
	if reqs, err := store.ReadImportConfig(root); err != nil || len(reqs) != 0 {
		t.Fatalf("no file: %v %v", reqs, err)
	}
	cfg := filepath.Join(root, store.ImportConfigName)
	os.WriteFile(cfg, []byte("require_gate = [\"modules:trivy\", \"govulncheck\"]\n"), 0o644)
	reqs, err := store.ReadImportConfig(root)
	if err != nil || len(reqs) != 2 || reqs[0] != (store.GateRequirement{Gate: "trivy", Kind: "modules"}) || reqs[1] != (store.GateRequirement{Gate: "govulncheck"}) {
		t.Fatalf("read %v %v", reqs, err)
	}
	for _, bad := range []struct{ text, want string }{
		{"require_gates = [\"x\"]\n", `import.hcl:1:1: Unsupported argument: An argument named "require_gates" is not expected here. Did you mean "require_gate"?`},
		{"require_gate = [\"tools:x\"]\n", "modules:NAME or providers:NAME"},
		{"require_gate = \"x\"\n", "import.hcl:1"},
	} {
		os.WriteFile(cfg, []byte(bad.text), 0o644)
		if _, err := store.ReadImportConfig(root); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: want %q, got %v", bad.text, bad.want, err)
		}
	}
}
