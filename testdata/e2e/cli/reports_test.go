package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/testdata/e2e/harness"
	"github.com/airgap/airgap/verify"
)

// TestReportsSpeakInAddresses: what import, gc and prune say names
// addresses and versions, against the real binary. A bundle that only
// adds gate results to entries the store has says so per entry; a
// withdrawal and a reinstatement count as catalog changes (in the import's
// summary and the inventory's history); gc names each blob it deletes by
// the version and part it was (the withdrawn provider's package and
// SHA256SUMS), in text and JSON, and its dry run says the same; prune
// names each blob of the version it removes.
func TestReportsSpeakInAddresses(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	signer := bundletest.Key(t, "site")
	pub, _ := verify.PublicArmor(signer)
	keyring := filepath.Join(work, "site.pub.asc")
	os.WriteFile(keyring, []byte(pub), 0o644)
	dir := filepath.Join(work, "set")
	set := bundletest.Standard(t, dir, signer)
	set.AddProvider(bundletest.BuildProvider(t, filepath.Join(work, "old"), bundletest.Provider{
		Host: "registry.terraform.io", Namespace: "hashicorp", Type: "random", Version: "3.5.0",
		Platforms: []string{"linux_amd64"}, Signer: bundletest.Key(t, "publisher"), PackageSize: 8 << 10,
	}))
	first := filepath.Join(work, "first.bundle")
	set.WriteBundleFile(t, first, signer, bundle.CompressionZstd)
	// The same entries, scanned since by a module gate.
	set.AddGate(t, dir, dist.Gate{Name: "trivy", For: dist.GateModules, Command: []string{"trivy", "config", "{dir}"}, Tool: "Version: 0.74.0"},
		dist.GateResult{Status: dist.GatePassed}, []byte("no findings\n"))
	scanned := filepath.Join(work, "scanned.bundle")
	set.WriteBundleFile(t, scanned, signer, bundle.CompressionZstd)
	old := dist.Withdrawal{Kind: dist.KindProvider, Addr: "registry.terraform.io/hashicorp/random", Versions: []string{"3.5.0"}, Reason: "bad build"}
	withdraw, reinstate := filepath.Join(work, "withdraw.bundle"), filepath.Join(work, "reinstate.bundle")
	harness.WriteCurationBundle(t, withdraw, signer, []dist.Withdrawal{old}, nil)
	harness.WriteCurationBundle(t, reinstate, signer, nil, []dist.Withdrawal{{Kind: old.Kind, Addr: old.Addr, Versions: old.Versions, Reason: "rebuilt"}})

	root := filepath.Join(work, "store")
	imp := func(b string) string {
		return harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", keyring, "--store", root, b)
	}
	says := func(what, out string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s does not say %q:\n%s", what, w, out)
			}
		}
	}
	imp(first)
	says("the import of gate results for entries already present", imp(scanned),
		"0 catalog changes; 1 updates to entries already present (gate results, docs)",
		"updated module registry.terraform.io/example/vpc/aws 1.0.0: gate trivy passed (new)")
	says("the import of a withdrawal", imp(withdraw), "1 catalog changes (1 withdrawn)",
		"withdrew provider registry.terraform.io/hashicorp/random 3.5.0")

	pkg := "package of provider registry.terraform.io/hashicorp/random 3.5.0 linux_amd64 (terraform-provider-random_3.5.0_linux_amd64.zip) (withdrawn)"
	sums := "SHA256SUMS of provider registry.terraform.io/hashicorp/random 3.5.0 (withdrawn)"
	says("gc --dry-run", harness.MustRunStdout(t, work, "gc", "--store", root, "--dry-run"), "would remove blob ", pkg, sums)
	var doc struct {
		Removed []struct {
			Blob  string `json:"blob"`
			Bytes int64  `json:"bytes"`
			What  string `json:"what"`
		} `json:"removed"`
	}
	out := harness.MustRunStdout(t, work, "gc", "--store", root, "--json")
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Removed) != 3 {
		t.Fatalf("gc --json (want the package, SHA256SUMS and signature of 3.5.0): %v\n%s", err, out)
	}
	var whats []string
	for _, r := range doc.Removed {
		if r.Bytes <= 0 || !strings.HasPrefix(r.Blob, "sha256:") {
			t.Errorf("gc --json removed %+v", r)
		}
		whats = append(whats, r.What)
	}
	says("gc --json", strings.Join(whats, "\n"), pkg, sums, "SHA256SUMS signature of provider registry.terraform.io/hashicorp/random 3.5.0 (withdrawn)")

	says("prune", harness.MustRunStdout(t, work, "prune", "--store", root, "hashicorp/random@3.6.0"),
		"removed provider registry.terraform.io/hashicorp/random 3.6.0",
		"removed blob ", "package of provider registry.terraform.io/hashicorp/random 3.6.0 darwin_arm64 (terraform-provider-random_3.6.0_darwin_arm64.zip) (pruned)")
	says("the import of a reinstatement", imp(reinstate), "1 catalog changes (1 reinstated)")
	says("inventory's history", harness.MustRun(t, work, nil, harness.Bin, "inventory", "--store", root),
		"0 catalog changes; 1 updates to entries already present (gate results, docs)", "updated module registry.terraform.io/example/vpc/aws 1.0.0: gate trivy passed (new)",
		"1 catalog changes (1 withdrawn)", "1 catalog changes (1 reinstated)")
}
