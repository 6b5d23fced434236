package dist

import (
	"reflect"
	"strings"
	"testing"

	"github.com/airgap/airgap/verify"
)

// TestEntryUpdates: gate results a bundle brings for entries the catalog
// has with the same content are listed (new, changed status, run again);
// the same results, other content and new entries are not.
func TestEntryUpdates(t *testing.T) {
	d := func(s string) verify.Digest { return verify.Digest("sha256:" + strings.Repeat(s, 64)) }
	res := func(gate, status, report string) GateResult {
		return GateResult{Gate: gate, Status: status, Report: d(report)}
	}
	mod := func(archive string, gates ...GateResult) ModuleVersion {
		return ModuleVersion{Host: "registry.terraform.io", Namespace: "example", Name: "vpc", System: "aws", Version: "1.0.0", Archive: d(archive), Gates: gates}
	}
	prov := func(digest string, gates ...GateResult) ProviderVersion {
		return ProviderVersion{Host: "registry.terraform.io", Namespace: "hashicorp", Type: "random", Version: "3.6.0",
			Packages: []Package{{OS: "linux", Arch: "amd64", Digest: d(digest), Gates: gates}}}
	}
	old := &Catalog{Modules: []ModuleVersion{mod("a", res("lint", GateWaived, "1"), res("same", GatePassed, "2"))}, Providers: []ProviderVersion{prov("c")}}
	next := &Catalog{Modules: []ModuleVersion{mod("a", res("lint", GatePassed, "3"), res("same", GatePassed, "2"), res("trivy", GatePassed, "4"))},
		Providers: []ProviderVersion{prov("c", res("vuln", GatePassed, "5"))}}
	want := []string{
		"module registry.terraform.io/example/vpc/aws 1.0.0: gate lint passed (was waived)",
		"module registry.terraform.io/example/vpc/aws 1.0.0: gate trivy passed (new)",
		"provider registry.terraform.io/hashicorp/random 3.6.0 linux_amd64: gate vuln passed (new)",
	}
	if got := EntryUpdates(old, next); !reflect.DeepEqual(got, want) {
		t.Errorf("EntryUpdates:\n%q\nwant\n%q", got, want)
	}
	other := &Catalog{Modules: []ModuleVersion{mod("b", res("trivy", GatePassed, "4"))}, Providers: []ProviderVersion{prov("e", res("vuln", GatePassed, "5"))}}
	if got := EntryUpdates(old, other); len(got) != 0 {
		t.Errorf("entries with other content are not updates: %q", got)
	}
	// Documentation brought for entries already present.
	withDocs := &Catalog{Modules: []ModuleVersion{mod("a")}, Providers: []ProviderVersion{prov("c")}}
	withDocs.Modules[0].Docs = d("6")
	withDocs.Providers[0].Docs = &ProviderDocs{Archive: d("7")}
	if got, want := EntryUpdates(old, withDocs), []string{"module registry.terraform.io/example/vpc/aws 1.0.0: docs added", "provider registry.terraform.io/hashicorp/random 3.6.0: docs added"}; !reflect.DeepEqual(got, want) {
		t.Errorf("docs: %q, want %q", got, want)
	}
	if got := EntryUpdates(withDocs, withDocs); len(got) != 0 {
		t.Errorf("the same docs are not updates: %q", got)
	}
	if got := EntryUpdates(old, old); len(got) != 0 {
		t.Errorf("the same results are not updates: %q", got)
	}
}
