package dist

import (
	"strings"
	"testing"

	"github.com/airgap/airgap/verify"
)

func TestCheckMerge(t *testing.T) {
	d := func(c string) verify.Digest { return verify.Digest("sha256:" + strings.Repeat(c, 64)) }
	h1 := func(c string) string { return "h1:" + strings.Repeat(c, 43) + "=" }
	pv := func(sums, sig string, pks ...Package) ProviderVersion {
		return ProviderVersion{Host: "registry.terraform.io", Namespace: "hashicorp", Type: "aws", Version: "5.60.0",
			Shasums: d(sums), ShasumsSig: d(sig), Packages: pks}
	}
	lin := Package{OS: "linux", Arch: "amd64", Filename: "terraform-provider-aws_5.60.0_linux_amd64.zip", Digest: d("1"), H1: h1("A")}
	dar := Package{OS: "darwin", Arch: "arm64", Filename: "terraform-provider-aws_5.60.0_darwin_arm64.zip", Digest: d("2"), H1: h1("B")}
	have := Catalog{Providers: []ProviderVersion{pv("a", "b", lin)},
		Modules: []ModuleVersion{{Host: "registry.terraform.io", Namespace: "Example", Name: "vpc", System: "aws", Version: "1.0.0", Archive: d("3")}}}
	ok := []Catalog{
		{Providers: []ProviderVersion{pv("a", "b", lin)}},      // identical
		{Providers: []ProviderVersion{pv("a", "b", lin, dar)}}, // a platform added
		{Providers: []ProviderVersion{pv("a", "c", dar)}},      // re-published key: another signature of the same SHA256SUMS
		{Modules: []ModuleVersion{{Host: "registry.terraform.io", Namespace: "example", Name: "VPC", System: "aws", Version: "1.0.0", Archive: d("3")}}},
	}
	for i, next := range ok {
		if err := have.CheckMerge(&next); err != nil {
			t.Errorf("case %d: %v", i, err)
		}
	}
	other := lin
	other.Digest = d("9")
	site := pv("a", "b", lin)
	site.SiteSigned = true
	bad := map[string]Catalog{
		"another SHA256SUMS":          {Providers: []ProviderVersion{pv("f", "b", lin)}},
		"another package":             {Providers: []ProviderVersion{pv("a", "b", other)}},
		"re-signed by a site key":     {Providers: []ProviderVersion{site}},
		"another module archive":      {Modules: []ModuleVersion{{Host: "registry.terraform.io", Namespace: "example", Name: "vpc", System: "aws", Version: "1.0.0", Archive: d("4")}}},
		"another module subdirectory": {Modules: []ModuleVersion{{Host: "registry.terraform.io", Namespace: "Example", Name: "vpc", System: "aws", Version: "1.0.0", Archive: d("3"), Subdir: "x"}}},
	}
	for name, next := range bad {
		if err := have.CheckMerge(&next); err == nil {
			t.Errorf("%s: merged", name)
		}
	}
}
