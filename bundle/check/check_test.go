package check_test

// The consistency check against a hostile signer: whoever holds the site key
// (or the exporting laptop), but not the publisher keys.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/modzip"
)

// checkCatalog writes set's blobs under a manifest whose catalog is cat
// (validly signed by site) and runs the check 'airgap verify' runs, with
// keyring as the keys trusted to sign bundles.
func checkCatalog(t *testing.T, set *bundletest.Set, cat dist.Catalog, site *openpgp.Entity, keyring openpgp.EntityList) error {
	t.Helper()
	set.Catalog = cat
	m := set.Manifest(t)
	path := filepath.Join(t.TempDir(), "hostile.bundle")
	bundletest.WriteSignedManifest(t, path, m, set.Files, site)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	br, err := bundle.NewReader(f, keyring)
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	_, _, _, err = check.All(br, t.TempDir())
	return err
}

// TestCheckRefusesRelabelledProvider: the publisher's genuine, validly
// signed SHA256SUMS and zip of hashicorp/random 3.6.0 listed under another
// version (a downgrade under any version number) or another type of the
// same publisher are refused: with their own names (which are not this
// version's), and renamed (the signed SHA256SUMS does not list the names).
func TestCheckRefusesRelabelledProvider(t *testing.T) {
	site := bundletest.Key(t, "site")
	pub := bundletest.Key(t, "publisher")
	bp := bundletest.BuildProvider(t, t.TempDir(), bundletest.Provider{
		Host: "registry.terraform.io", Namespace: "hashicorp", Type: "random", Version: "3.6.0",
		Platforms: []string{"linux_amd64"}, Signer: pub,
	})
	set := bundletest.NewSet()
	set.AddProvider(bp)
	if err := checkCatalog(t, set, set.Catalog, site, openpgp.EntityList{site}); err != nil {
		t.Fatalf("the genuine provider: %v", err)
	}
	for _, relabel := range []struct{ typ, version string }{{"random", "9.9.9"}, {"aws", "5.0.0"}} {
		// What is renamed for the new label: nothing, the SHA256SUMS file,
		// or the SHA256SUMS file and the package.
		for renamed, want := range []string{"it is not this version's", "is not for linux_amd64 of this type and version", "is not listed in its signed SHA256SUMS"} {
			set := bundletest.NewSet()
			set.AddProvider(bp)
			cat := set.Catalog
			pv := bp.ProviderVersion
			pv.Type, pv.Version = relabel.typ, relabel.version
			pv.Packages = append([]dist.Package(nil), bp.Packages...)
			if renamed > 0 {
				pv.ShasumsName = dist.ProviderShasumsName(pv.Type, pv.Version)
			}
			if renamed > 1 {
				pv.Packages[0].Filename = dist.ProviderPackageName(pv.Type, pv.Version, "linux", "amd64")
			}
			cat.Providers = []dist.ProviderVersion{pv}
			err := checkCatalog(t, set, cat, site, openpgp.EntityList{site})
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("random 3.6.0's signed files listed as hashicorp/%s %s (renamed: %d): %v", relabel.typ, relabel.version, renamed, err)
			}
		}
	}
}

// TestCheckModuleZipMatchesArchive: a module's zip (what OpenTofu's oci://
// sources get) must be the one its archive (what the registry protocol
// serves) makes; a zip of other files is refused.
func TestCheckModuleZipMatchesArchive(t *testing.T) {
	site := bundletest.Key(t, "site")
	dir := t.TempDir()
	set := bundletest.NewSet()
	good := filepath.Join(dir, "good.tar.gz")
	bundletest.WriteModuleArchive(t, good, map[string]string{"main.tf": "output \"x\" { value = 1 }\n"})
	set.AddModule(t, dist.ModuleVersion{Host: "registry.terraform.io", Namespace: "example", Name: "vpc", System: "aws", Version: "1.0.0"}, good)
	if err := checkCatalog(t, set, set.Catalog, site, openpgp.EntityList{site}); err != nil {
		t.Fatalf("the genuine module: %v", err)
	}
	evil := filepath.Join(dir, "evil.tar.gz")
	bundletest.WriteModuleArchive(t, evil, map[string]string{"main.tf": "resource \"terraform_data\" \"pwn\" {}\n"})
	in, _ := os.Open(evil)
	out, _ := os.Create(evil + ".zip")
	if err := modzip.ZipFromTarGz(in, out); err != nil {
		t.Fatal(err)
	}
	in.Close()
	out.Close()
	cat := set.Catalog
	mv := &cat.Modules[0]
	delete(set.Files, mv.Zip)
	delete(set.Roles, mv.Zip)
	mv.Zip = bundletest.FileDigest(t, evil+".zip")
	fi, _ := os.Stat(evil + ".zip")
	mv.ZipSize = fi.Size()
	set.Files[mv.Zip], set.Roles[mv.Zip] = evil+".zip", dist.RoleModuleZip
	if err := checkCatalog(t, set, cat, site, openpgp.EntityList{site}); err == nil || !strings.Contains(err.Error(), "oci://") {
		t.Errorf("a module whose OCI zip holds other files than its archive: %v", err)
	}
}

// TestCheckRefusesPackageForOtherPlatform: a windows zip listed for
// linux_amd64, with a name the SHA256SUMS lists, is refused.
func TestCheckRefusesPackageForOtherPlatform(t *testing.T) {
	site := bundletest.Key(t, "site")
	pub := bundletest.Key(t, "publisher")
	bp := bundletest.BuildProvider(t, t.TempDir(), bundletest.Provider{
		Host: "registry.terraform.io", Namespace: "hashicorp", Type: "random", Version: "3.6.0",
		Platforms: []string{"linux_amd64", "windows_amd64"}, Signer: pub,
	})
	set := bundletest.NewSet()
	set.AddProvider(bp)
	cat := set.Catalog
	cat.Providers = []dist.ProviderVersion{bp.ProviderVersion}
	cat.Providers[0].Packages = append([]dist.Package(nil), bp.Packages...)
	for i := range cat.Providers[0].Packages {
		if cat.Providers[0].Packages[i].OS == "linux" {
			w := bp.Packages[1-i]
			w.OS, w.Arch = "linux", "amd64"
			delete(set.Files, cat.Providers[0].Packages[i].Digest)
			cat.Providers[0].Packages[i] = w
		}
	}
	if err := checkCatalog(t, set, cat, site, openpgp.EntityList{site}); err == nil || !strings.Contains(err.Error(), "is not for linux_amd64") {
		t.Errorf("a windows zip listed for linux: %v", err)
	}
}

// TestCheckRefusesSiteKeyAsPublisherKey: a provider not marked as
// re-signed whose SHA256SUMS is signed by the key that signed the bundle, or
// by another key trusted to sign bundles, carried with an empty Source, is
// refused: a site key is never a publisher key.
func TestCheckRefusesSiteKeyAsPublisherKey(t *testing.T) {
	site := bundletest.Key(t, "site")
	other := bundletest.Key(t, "site2")
	for name, c := range map[string]struct {
		sums    *openpgp.Entity
		keyring openpgp.EntityList
	}{
		"the bundle's signer":      {site, openpgp.EntityList{site}},
		"another trusted site key": {other, openpgp.EntityList{site, other}},
	} {
		bp := bundletest.BuildProvider(t, t.TempDir(), bundletest.Provider{
			Host: "registry.terraform.io", Namespace: "hashicorp", Type: "random", Version: "3.6.0",
			Platforms: []string{"linux_amd64"}, Signer: c.sums,
		})
		set := bundletest.NewSet()
		set.AddProvider(bp)
		if err := checkCatalog(t, set, set.Catalog, site, c.keyring); err == nil || !strings.Contains(err.Error(), "a site key is never a publisher key") {
			t.Errorf("a provider signed by %s, unmarked: %v", name, err)
		}
	}
}
