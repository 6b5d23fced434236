package dist

// ATTACK TESTS (atk-bundle review, issue 11): merging a bundle's catalog into
// the store's. A FAILING test marks an open finding.

import (
	"strings"
	"testing"

	"github.com/airgap/airgap/verify"
)

// TestAttackMergeChangesModuleZip (FAILING, finding G): CheckMerge compares a
// module version's archive and subdirectory with the store's but not its
// zip, and Merge replaces the entry: a later bundle with the same archive
// and another zip changes what the OCI path serves for a module version the
// store already serves — against "a store never changes what it serves under
// a name and version".
func TestAttackMergeChangesModuleZip(t *testing.T) {
	d := func(c string) verify.Digest { return verify.Digest("sha256:" + strings.Repeat(c, 64)) }
	mv := ModuleVersion{Host: "registry.terraform.io", Namespace: "example", Name: "vpc", System: "aws", Version: "1.0.0",
		Archive: d("a"), Zip: d("b")}
	have := Catalog{Modules: []ModuleVersion{mv}}
	evil := mv
	evil.Zip = d("c")
	next := Catalog{Modules: []ModuleVersion{evil}}
	err := have.CheckMerge(&next)
	if err == nil {
		have.Merge(&next)
		t.Errorf("a bundle that changes the zip of a module version the store serves is merged: the store's zip is now %s (was %s)",
			have.Modules[0].Zip.Short(), mv.Zip.Short())
	}
}

// TestAttackBuildMetadataTwin (FAILING, finding H): "3.6.0+evil" is a
// different Key from "3.6.0" (canonicalVersion keeps build metadata), so a
// bundle may add it next to a version the store serves, or list both in one
// bundle. Terraform and OpenTofu compare versions with
// apparentlymart/go-versions, whose Same ignores build metadata: to them it
// is the same version, and which of the two a client gets is up to the
// order of the versions list — the "never changes what it serves under a
// name and version" promise is side-stepped (with finding A, under the real
// publisher's signature).
func TestAttackBuildMetadataTwin(t *testing.T) {
	d := func(c string) verify.Digest { return verify.Digest("sha256:" + strings.Repeat(c, 64)) }
	pv := ProviderVersion{Host: "registry.terraform.io", Namespace: "hashicorp", Type: "aws", Version: "3.6.0",
		Shasums: d("a"), ShasumsSig: d("b"), Packages: []Package{{OS: "linux", Arch: "amd64", Digest: d("c")}}}
	twin := pv
	twin.Version, twin.Shasums, twin.Packages = "3.6.0+evil", d("d"), []Package{{OS: "linux", Arch: "amd64", Digest: d("e")}}
	if pv.Key() != twin.Key() {
		have := Catalog{Providers: []ProviderVersion{pv}}
		if err := have.CheckMerge(&Catalog{Providers: []ProviderVersion{twin}}); err == nil {
			t.Errorf("%s is accepted next to %s (keys %q and %q)", twin, pv, twin.Key(), pv.Key())
		}
	}
}
