package bundle_test

// ATTACK TESTS (atk-bundle review of the consistency check, issue 11).
// The attacker holds the site key (or the exporting laptop), not the
// publisher keys. A FAILING test marks an open finding; a passing one shows
// an attack refused.

import (
	"bytes"
	"crypto/dsa"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/getter"
	"github.com/airgap/airgap/verify"
)

// attackCheck writes set's blobs under a manifest whose catalog is cat
// (validly signed by site) and runs the check 'airgap verify' runs.
func attackCheck(t *testing.T, set *bundletest.Set, cat dist.Catalog, site *openpgp.Entity) error {
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
	br, err := bundle.NewReader(f, openpgp.EntityList{site})
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	_, _, _, err = bundle.CheckAll(br, t.TempDir())
	return err
}

// TestAttackRelabelledProvider (FAILING, finding A): the publisher's genuine,
// validly signed SHA256SUMS and zips of hashicorp/random 3.6.0 are listed
// under another version (9.9.9) and under another type of the same
// publisher. Nothing ties the SHA256SUMS file, or the package filenames, to
// the provider type and version they are listed under, so verify and import
// accept them; serve then hands out random 3.6.0's bytes as "9.9.9" (a
// downgrade to any old, vulnerable release the publisher ever signed, under
// any version number) and Terraform reports "signed by" the real publisher.
func TestAttackRelabelledProvider(t *testing.T) {
	site := bundletest.Key(t, "site")
	pub := bundletest.Key(t, "publisher")
	bp := bundletest.BuildProvider(t, t.TempDir(), bundletest.Provider{
		Host: "registry.terraform.io", Namespace: "hashicorp", Type: "random", Version: "3.6.0",
		Platforms: []string{"linux_amd64"}, Signer: pub,
	})
	for _, relabel := range []struct{ typ, version string }{{"random", "9.9.9"}, {"aws", "5.0.0"}} {
		set := bundletest.NewSet()
		set.AddProvider(bp)
		cat := set.Catalog
		cat.Providers = []dist.ProviderVersion{bp.ProviderVersion}
		cat.Providers[0].Type, cat.Providers[0].Version = relabel.typ, relabel.version
		if err := attackCheck(t, set, cat, site); err == nil {
			t.Errorf("random 3.6.0's signed SHA256SUMS and %s listed as hashicorp/%s %s: verify accepts it",
				bp.Packages[0].Filename, relabel.typ, relabel.version)
		}
	}
}

// TestAttackModuleZipDiffersFromArchive (FAILING, finding B): the module-zip
// blob (what OpenTofu's oci:// source gets) is never compared with the
// module's .tar.gz (what the registry protocol, inventory and reviewers see).
// Modules carry no publisher signature, so the site key may poison a module
// by design; but here the two paths of one module version serve different
// code, and 'verify' reports the bundle consistent.
func TestAttackModuleZipDiffersFromArchive(t *testing.T) {
	site := bundletest.Key(t, "site")
	dir := t.TempDir()
	set := bundletest.NewSet()
	good := filepath.Join(dir, "good.tar.gz")
	bundletest.WriteModuleArchive(t, good, map[string]string{"main.tf": "output \"x\" { value = 1 }\n"})
	set.AddModule(t, dist.ModuleVersion{Host: "registry.terraform.io", Namespace: "example", Name: "vpc", System: "aws", Version: "1.0.0"}, good)
	evil := filepath.Join(dir, "evil.tar.gz")
	bundletest.WriteModuleArchive(t, evil, map[string]string{"main.tf": "resource \"terraform_data\" \"pwn\" {}\n"})
	in, _ := os.Open(evil)
	out, _ := os.Create(evil + ".zip")
	if err := getter.ZipFromTarGz(in, out); err != nil {
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
	if err := attackCheck(t, set, cat, site); err == nil {
		t.Errorf("a module whose OCI zip holds other files than its archive: verify accepts it")
	}
}

// hostileDSAKeys returns n DSA public keys with bits-bit parameters (no
// primes needed) whose user-ID self-signature is garbage, then good's key,
// in one armored block. go-crypto verifies every self-signature while
// parsing, skips a key whose self-signature fails (StructuralError) and goes
// on to the next.
func hostileDSAKeys(t *testing.T, n, bits int, good *openpgp.Entity) string {
	t.Helper()
	var raw bytes.Buffer
	for i := range n {
		p := new(big.Int).Lsh(big.NewInt(1), uint(bits))
		p.Sub(p, big.NewInt(int64(2*i+1))) // odd: Montgomery, the fast case
		q := new(big.Int).Lsh(big.NewInt(1), uint(bits-8))
		q.Sub(q, big.NewInt(1))
		pk := packet.NewDSAPublicKey(time.Unix(1, 0), &dsa.PublicKey{Parameters: dsa.Parameters{P: p, Q: q, G: big.NewInt(3)}, Y: big.NewInt(5)})
		if err := pk.Serialize(&raw); err != nil {
			t.Fatal(err)
		}
		if err := packet.NewUserId("x", "", "").Serialize(&raw); err != nil {
			t.Fatal(err)
		}
		// v4 positive certification, DSA, SHA-256; hashed: creation time,
		// issuer; r = 1, s = 2.
		body := []byte{4, 0x13, 17, 8, 0, 16, 5, 2, 0, 0, 0, 1, 9, 16}
		for s := 56; s >= 0; s -= 8 {
			body = append(body, byte(pk.KeyId>>s))
		}
		body = append(body, 0, 0, 0, 0, 0, 1, 1, 0, 2, 2)
		raw.Write(append([]byte{0xC2, byte(len(body))}, body...))
	}
	if err := good.Serialize(&raw); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	aw, _ := armor.Encode(&out, openpgp.PublicKeyType, nil)
	aw.Write(raw.Bytes())
	aw.Close()
	return out.String()
}

// TestAttackHugeDSAKeyCPU (FAILING, finding C): a key the bundle carries for
// a provider is parsed on the offline side (verify, import, inventory) with
// unbounded DSA parameters. Each carried DSA key with 16384-bit parameters
// costs ~1–2 s of CPU to parse (its self-signature is verified); parameters
// may reach 65535 bits (~64× that), bad keys are skipped silently, and one
// armored key may be 16 MiB, so one manifest entry holds hundreds of them:
// hours of CPU at the transfer station. With a good key after the hostile
// ones the keyring parses without error (1 usable key), so the import
// succeeds, the index keeps the whole armor, and every 'airgap inventory'
// parses it again for each provider version that carries it (KeyNote).
func TestAttackHugeDSAKeyCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("measures seconds of CPU")
	}
	pub := bundletest.Key(t, "publisher")
	const n, bits = 3, 16384
	armored := hostileDSAKeys(t, n, bits, pub)
	pv := dist.ProviderVersion{SigningKeys: []dist.SigningKey{{KeyID: verify.KeyID(pub), ASCIIArmor: armored}}}
	start := time.Now()
	kr, err := bundle.ProviderKeyring(pv)
	took := time.Since(start)
	t.Logf("%d carried DSA keys of %d bits (%d bytes armored): parsed in %v, %d usable key(s), err %v", n, bits, len(armored), took, len(kr), err)
	if took > time.Second {
		t.Errorf("parsing %d bytes of carried keys took %v: DSA parameter sizes are not bounded on the offline side", len(armored), took)
	}
}

// TestAttackFilenamePlatformRefused (passes): a windows zip listed for
// linux_amd64, with a name the SHA256SUMS lists, is refused.
func TestAttackFilenamePlatformRefused(t *testing.T) {
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
	if err := attackCheck(t, set, cat, site); err == nil || !strings.Contains(err.Error(), "is not for linux_amd64") {
		t.Errorf("a windows zip listed for linux: %v", err)
	}
}

// TestAttackSiteKeyAsPublisherKey (FAILING, finding I): the rule "a site
// re-signature only where marked, for registry.opentofu.org, by the bundle's
// signer" keys on the Source label, which the bundle writes. A
// registry.terraform.io provider whose SHA256SUMS is signed by the very key
// that signed the bundle, carried unmarked with Source "", passes, and
// inventory shows it as publisher-signed.
func TestAttackSiteKeyAsPublisherKey(t *testing.T) {
	site := bundletest.Key(t, "site")
	bp := bundletest.BuildProvider(t, t.TempDir(), bundletest.Provider{
		Host: "registry.terraform.io", Namespace: "hashicorp", Type: "random", Version: "3.6.0",
		Platforms: []string{"linux_amd64"}, Signer: site,
	})
	set := bundletest.NewSet()
	set.AddProvider(bp)
	if err := attackCheck(t, set, set.Catalog, site); err == nil {
		t.Errorf("a registry.terraform.io provider signed by the bundle's own key, unmarked: verify accepts it")
	}
}
