package check_test

import (
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/dist"
)

// mirrorOnly builds a provider version as export writes one that only a
// network mirror's hashes vouch for: a SHA256SUMS of its packages signed by
// the site key (the only key, marked as the site's), marked, with the
// mirror's URL and each package's listed hashes.
func mirrorOnly(t *testing.T, signer *openpgp.Entity, plats ...string) *bundletest.BuiltProvider {
	bp := bundletest.BuildProvider(t, t.TempDir(), bundletest.Provider{
		Host: "registry.terraform.io", Namespace: "hashicorp", Type: "random", Version: "3.6.0", Platforms: plats, Signer: signer,
	})
	bp.SigningKeys[0].Source = check.SiteKeySource
	bp.MirrorHashesOnly, bp.Mirror = true, "https://mirror.corp.example/tf/"
	bp.Packages = append([]dist.Package(nil), bp.Packages...)
	for i := range bp.Packages {
		bp.Packages[i].MirrorHashes = []string{bp.Packages[i].H1}
	}
	return bp
}

// TestCheckMirrorHashesTier: the check accepts a provider version with
// mirror hashes only exactly when it is marked and carries what the mark
// demands; everything else stays as strict as for publisher-signed ones.
func TestCheckMirrorHashesTier(t *testing.T) {
	site := bundletest.Key(t, "site")
	pub := bundletest.Key(t, "publisher")
	good := mirrorOnly(t, site, "linux_amd64")
	set := bundletest.NewSet()
	set.AddProvider(good)
	if err := checkCatalog(t, set, set.Catalog, site, openpgp.EntityList{site}); err != nil {
		t.Fatalf("a well-formed mirror-hashes-only provider: %v", err)
	}
	for name, c := range map[string]struct {
		edit func(pv *dist.ProviderVersion)
		bp   *bundletest.BuiltProvider
		want string
	}{
		"unmarked": {func(pv *dist.ProviderVersion) { pv.MirrorHashesOnly, pv.Mirror = false, "" }, good, "records mirror hashes but is not marked"},
		"unmarked, no hashes": {func(pv *dist.ProviderVersion) {
			pv.MirrorHashesOnly, pv.Mirror = false, ""
			pv.Packages[0].MirrorHashes = nil
		}, good, "carries the site key as a publisher key"},
		"no mirror named":     {func(pv *dist.ProviderVersion) { pv.Mirror = "" }, good, "names no mirror"},
		"mirror without mark": {func(pv *dist.ProviderVersion) { pv.MirrorHashesOnly = false; pv.Packages[0].MirrorHashes = nil }, good, "names a network mirror but is not marked"},
		"also site re-signed": {func(pv *dist.ProviderVersion) { pv.SiteSigned = true }, good, "marked both"},
		"hashes not its own": {func(pv *dist.ProviderVersion) {
			pv.Packages[0].MirrorHashes = []string{"zh:" + strings.Repeat("0", 64)}
		}, good, "none of the mirror's hashes it records"},
		"no hashes recorded":   {func(pv *dist.ProviderVersion) { pv.Packages[0].MirrorHashes = nil }, good, "none of the mirror's hashes it records"},
		"publisher key":        {func(pv *dist.ProviderVersion) {}, mirrorOnly(t, pub, "linux_amd64"), "not by the key that signed the bundle"},
		"publisher key, plain": {func(pv *dist.ProviderVersion) { pv.SigningKeys[0].Source = "" }, mirrorOnly(t, pub, "linux_amd64"), "not the site key alone"},
		"an unvetted line": {func(pv *dist.ProviderVersion) { pv.Packages = pv.Packages[:1] }, mirrorOnly(t, site, "linux_amd64", "darwin_arm64"),
			"lists 2 files for 1 packages"},
	} {
		t.Run(name, func(t *testing.T) {
			set := bundletest.NewSet()
			set.AddProvider(c.bp)
			pv := c.bp.ProviderVersion
			pv.Packages = append([]dist.Package(nil), c.bp.Packages...)
			for i := range pv.Packages {
				pv.Packages[i].MirrorHashes = append([]string(nil), pv.Packages[i].MirrorHashes...)
			}
			pv.SigningKeys = append([]dist.SigningKey(nil), c.bp.SigningKeys...)
			c.edit(&pv)
			for _, pk := range c.bp.Packages[len(pv.Packages):] {
				delete(set.Files, pk.Digest)
			}
			cat := dist.Catalog{Providers: []dist.ProviderVersion{pv}}
			if err := checkCatalog(t, set, cat, site, openpgp.EntityList{site}); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
	// A format-1 manifest cannot carry the tier at all.
	m := set.Manifest(t)
	m.Format = 1
	if err := m.Validate(); err == nil || !strings.Contains(err.Error(), "only format 2 has") {
		t.Errorf("format 1 with mirror_hashes_only: %v", err)
	}
	data, _ := m.Marshal()
	if _, err := bundle.ParseManifest(data); err == nil {
		t.Error("ParseManifest took a format-1 manifest with format-2 fields")
	}
}
