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
		Modules: []ModuleVersion{{Host: "registry.terraform.io", Namespace: "Example", Name: "vpc", System: "aws", Version: "1.0.0", Archive: d("3"), Zip: d("5")}}}
	ok := []Catalog{
		{Providers: []ProviderVersion{pv("a", "b", lin)}},      // identical
		{Providers: []ProviderVersion{pv("a", "b", lin, dar)}}, // a platform added
		{Providers: []ProviderVersion{pv("a", "c", dar)}},      // re-published key: another signature of the same SHA256SUMS
		{Modules: []ModuleVersion{{Host: "registry.terraform.io", Namespace: "example", Name: "VPC", System: "aws", Version: "1.0.0", Archive: d("3")}}}, // from before module zips
		{Modules: []ModuleVersion{{Host: "registry.terraform.io", Namespace: "example", Name: "vpc", System: "aws", Version: "1.0.0", Archive: d("3"), Zip: d("5")}}},
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
	twin := pv("c", "d", lin)
	twin.Version = "5.60.0+evil"
	bad := map[string]Catalog{
		// Clients ignore build metadata when they compare versions: a twin
		// is the same version, spelled otherwise.
		"a build-metadata twin": {Providers: []ProviderVersion{twin}},
		// The zip is what OpenTofu's oci:// sources get.
		"another module zip":          {Modules: []ModuleVersion{{Host: "registry.terraform.io", Namespace: "example", Name: "vpc", System: "aws", Version: "1.0.0", Archive: d("3"), Zip: d("6")}}},
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

// TestNoBuildMetadata: registries publish no build metadata, and clients
// ignore it when they compare versions, so a catalog refuses it ("3.6.0+x"
// would be a twin of 3.6.0) and it is no part of a version's Key.
func TestNoBuildMetadata(t *testing.T) {
	for v, ok := range map[string]bool{"3.6.0": true, "1.0.0-beta.1": true, "3.6.0+evil": false, "1.0.0-rc.1+b.2": false, "v3.6.0": false} {
		if ValidVersion(v) != ok {
			t.Errorf("ValidVersion(%q) = %v, want %v", v, !ok, ok)
		}
		if HasBuildMetadata(v) == ok && v != "v3.6.0" {
			t.Errorf("HasBuildMetadata(%q) = %v", v, !ok)
		}
	}
	d := verify.Digest("sha256:" + strings.Repeat("a", 64))
	c := Catalog{Providers: []ProviderVersion{{Host: "registry.terraform.io", Namespace: "hashicorp", Type: "aws", Version: "3.6.0+evil",
		ShasumsName: "terraform-provider-aws_3.6.0+evil_SHA256SUMS", Shasums: d, ShasumsSig: d,
		Packages: []Package{{OS: "linux", Arch: "amd64", Filename: "terraform-provider-aws_3.6.0+evil_linux_amd64.zip", Digest: d, H1: "h1:" + strings.Repeat("A", 43) + "="}}}}}
	if err := c.Validate(nil); err == nil {
		t.Errorf("a catalog with version 3.6.0+evil is valid")
	}
	a := ProviderVersion{Host: "registry.terraform.io", Namespace: "hashicorp", Type: "aws", Version: "3.6.0"}
	b := a
	b.Version = "3.6.0+evil"
	if a.Key() != b.Key() {
		t.Errorf("keys %q and %q differ: build metadata makes a twin", a.Key(), b.Key())
	}
}

// TestCheckMergeMirrorHashes: a version the store has with mirror hashes
// only may be replaced by one that carries every platform it has with the
// same bytes (the publisher's SHA256SUMS, or a wider export of the mirror);
// never the other way round, and never with other bytes.
func TestCheckMergeMirrorHashes(t *testing.T) {
	d := func(c string) verify.Digest { return verify.Digest("sha256:" + strings.Repeat(c, 64)) }
	h1 := func(c string) string { return "h1:" + strings.Repeat(c, 43) + "=" }
	lin := Package{OS: "linux", Arch: "amd64", Filename: "terraform-provider-aws_5.60.0_linux_amd64.zip", Digest: d("1"), H1: h1("A")}
	dar := Package{OS: "darwin", Arch: "arm64", Filename: "terraform-provider-aws_5.60.0_darwin_arm64.zip", Digest: d("2"), H1: h1("B")}
	pv := func(sums string, mirror bool, pks ...Package) ProviderVersion {
		p := ProviderVersion{Host: "registry.terraform.io", Namespace: "hashicorp", Type: "aws", Version: "5.60.0",
			Shasums: d(sums), ShasumsSig: d("s"), Packages: pks, MirrorHashesOnly: mirror}
		if mirror {
			p.Mirror = "https://m.example/"
		}
		return p
	}
	cat := func(p ProviderVersion) func() Catalog {
		return func() Catalog { return Catalog{Providers: []ProviderVersion{p}} }
	}
	mirrored := cat(pv("a", true, lin))
	other := lin
	other.Digest = d("9")
	for name, c := range map[string]struct {
		have, next func() Catalog
		ok         bool
	}{
		"publisher's replaces the mirror's":       {mirrored, cat(pv("b", false, lin, dar)), true},
		"a wider mirror export replaces":          {mirrored, cat(pv("c", true, lin, dar)), true},
		"the same mirror export again":            {mirrored, mirrored, true},
		"a narrower export cannot replace":        {cat(pv("a", true, lin, dar)), cat(pv("b", false, lin)), false},
		"other bytes cannot replace":              {mirrored, cat(pv("b", false, other)), false},
		"the mirror's cannot replace publisher's": {cat(pv("b", false, lin)), cat(pv("b", true, lin)), false},
	} {
		have, next := c.have(), c.next()
		err := have.CheckMerge(&next)
		if (err == nil) != c.ok {
			t.Errorf("%s: %v", name, err)
		}
		if err == nil {
			have.Merge(&next)
			if got := have.Providers[0]; got.Shasums != next.Providers[0].Shasums || got.MirrorHashesOnly != next.Providers[0].MirrorHashesOnly || len(got.Packages) != len(next.Providers[0].Packages) {
				t.Errorf("%s: merged into %+v", name, got)
			}
		}
	}
}
