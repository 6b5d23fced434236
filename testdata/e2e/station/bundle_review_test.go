package station

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/modzip"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestHostileBundlesRelabelled: bundles validly signed by the site key that
// relabel the publisher's genuine signed files (another version, another
// type), give a module an oci:// zip of other files, pass the site key off as
// a publisher key, or add a build-metadata twin. The real 'airgap verify' and
// 'airgap import' refuse each, naming what is wrong, and the store is byte
// for byte as it was.
func TestHostileBundlesRelabelled(t *testing.T) {
	t.Parallel()
	w := harness.NewHostileWorld(t)
	pub := bundletest.Key(t, "publisher")
	const tf = "registry.terraform.io"
	random := w.Provider(t, "random", tf, "random", "3.6.0", pub, 16<<10, "linux_amd64")
	bySite := w.Provider(t, "by-site", tf, "http", "3.4.0", w.Site, 4<<10, "linux_amd64")
	vpc := w.Module(t, "vpc", "example", "1.0.0", "# vpc")
	evil := w.Module(t, "vpc", "example", "1.0.0", "resource \"terraform_data\" \"pwn\" {}")
	zipOf := func(mv dist.ModuleVersion) dist.ModuleVersion {
		in, err := os.Open(w.Files[mv.Archive])
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		p := w.Files[mv.Archive] + ".zip"
		out, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := modzip.ZipFromTarGz(in, out); err != nil {
			t.Fatal(err)
		}
		out.Close()
		mv.Zip = bundletest.FileDigest(t, p)
		w.Files[mv.Zip] = p
		return mv
	}
	vpc = zipOf(vpc)

	root := filepath.Join(w.Work, "store")
	seed := w.Write(t, "seed", dist.Catalog{Providers: []dist.ProviderVersion{random}, Modules: []dist.ModuleVersion{vpc}})
	harness.MustRun(t, w.Work, nil, harness.Bin, "import", "--keyring", w.Keyring, "--store", root, seed)
	before := bundletest.Snapshot(t, root)

	relabel := func(typ, version string, rename bool) dist.ProviderVersion {
		p := random
		p.Type, p.Version = typ, version
		p.Packages = append([]dist.Package(nil), random.Packages...)
		if rename {
			p.ShasumsName = dist.ProviderShasumsName(typ, version)
			p.Packages[0].Filename = dist.ProviderPackageName(typ, version, "linux", "amd64")
		}
		return p
	}
	twin := random
	twin.Version = "3.6.0+evil"
	// Module versions whose zip is another archive's.
	evilZip := zipOf(evil).Zip
	vpc2 := w.Module(t, "vpc", "example", "2.0.0", "# vpc 2")
	vpc2.Zip = evilZip
	vpcOther := vpc
	vpcOther.Zip = evilZip
	cases := []struct {
		name string
		cat  dist.Catalog
		want []string
	}{
		{"random 3.6.0 as 9.9.9", dist.Catalog{Providers: []dist.ProviderVersion{relabel("random", "9.9.9", false)}},
			[]string{"hashicorp/random 9.9.9", "not this version's"}},
		{"random 3.6.0 as aws 5.0.0, renamed", dist.Catalog{Providers: []dist.ProviderVersion{relabel("aws", "5.0.0", true)}},
			[]string{"hashicorp/aws 5.0.0 linux_amd64", "not listed in its signed SHA256SUMS"}},
		{"module zip of other files", dist.Catalog{Modules: []dist.ModuleVersion{vpc2}},
			[]string{"module registry.terraform.io/example/vpc/aws 2.0.0", "oci://"}},
		// (the zip of the same archive is always the same, so this is
		// refused by the check before the store's zip is compared)
		{"another zip for a module the store serves", dist.Catalog{Modules: []dist.ModuleVersion{vpcOther}},
			[]string{"module registry.terraform.io/example/vpc/aws 1.0.0", "zip"}},
		{"site key as an unmarked publisher key", dist.Catalog{Providers: []dist.ProviderVersion{bySite}},
			[]string{"hashicorp/http 3.4.0", "a site key is never a publisher key"}},
		{"build-metadata twin", dist.Catalog{Providers: []dist.ProviderVersion{twin}},
			[]string{"3.6.0+evil"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := w.Write(t, "relabelled-"+string(rune('a'+i)), tc.cat)
			for _, args := range [][]string{{"verify", "--keyring", w.Keyring, path}, {"import", "--keyring", w.Keyring, "--store", root, path}} {
				out, err := harness.CmdRun(t, w.Work, nil, harness.Bin, args...)
				if harness.ExitCode(err) != 1 {
					t.Errorf("%s accepted it (exit %d):\n%s", args[0], harness.ExitCode(err), out)
				}
				for _, s := range tc.want {
					if !strings.Contains(out, s) {
						t.Errorf("%s's message lacks %q:\n%s", args[0], s, out)
					}
				}
			}
			bundletest.SameTree(t, before, bundletest.Snapshot(t, root))
		})
	}
}
