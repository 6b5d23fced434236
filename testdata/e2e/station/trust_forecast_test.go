package station

import (
	"crypto"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/packet"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/approval"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/testdata/e2e/harness"
	"github.com/airgap/airgap/verify"
)

// policyWorld is a site key, a station key, the publisher's key and its
// successor, and a seeded store (bundletest.Standard: random 3.6.0 and
// null 3.2.2 signed by the publisher, module vpc 1.0.0).
type policyWorld struct {
	work, keyring, seeded string
	site, station         *openpgp.Entity
	pub, rotated          *openpgp.Entity
}

func newPolicyWorld(t *testing.T) *policyWorld {
	t.Helper()
	w := &policyWorld{work: t.TempDir(), site: bundletest.Key(t, "site"), station: bundletest.Key(t, "station"),
		pub: bundletest.Key(t, "publisher"), rotated: bundletest.Key(t, "rotated publisher")}
	w.keyring = filepath.Join(w.work, "site.pub.asc")
	bundletest.WriteFile(t, w.keyring, []byte(bundletest.Armor(t, w.site)))
	seed := filepath.Join(w.work, "seed.bundle")
	bundletest.Standard(t, filepath.Join(w.work, "std"), w.site).WriteBundleFile(t, seed, w.site, bundle.CompressionAuto)
	w.seeded = filepath.Join(w.work, "seeded")
	harness.MustRun(t, w.work, nil, harness.Bin, "import", "--keyring", w.keyring, "--store", w.seeded, seed)
	return w
}

// random builds registry.terraform.io/hashicorp/random VERSION signed by
// key (the same zips for the same version whoever signs).
func (w *policyWorld) random(t *testing.T, version string, key *openpgp.Entity, size int) *bundletest.BuiltProvider {
	t.Helper()
	return bundletest.BuildProvider(t, filepath.Join(w.work, "p", fmt.Sprintf("random-%s-%s-%d", version, verify.KeyID(key), size)), bundletest.Provider{
		Host: "registry.terraform.io", Namespace: "hashicorp", Type: "random", Version: version,
		Platforms: []string{"linux_amd64", "darwin_arm64"}, Signer: key, PackageSize: 64 << 10})
}

// bundleOf writes a bundle of the providers (and the Standard module if
// module), signed by the site key.
func (w *policyWorld) bundleOf(t *testing.T, name string, module bool, decl []bundle.PublisherKeyDecl, ps ...*bundletest.BuiltProvider) string {
	t.Helper()
	set := bundletest.NewSet()
	for _, p := range ps {
		set.AddProvider(p)
	}
	if module {
		std := bundletest.Standard(t, filepath.Join(w.work, "std"), w.site)
		set.AddModule(t, std.Catalog.Modules[0], std.Files[std.Catalog.Modules[0].Archive])
	}
	set.PublisherKeys = decl
	path := filepath.Join(w.work, name+".bundle")
	set.WriteBundleFile(t, path, w.site, bundle.CompressionAuto)
	return path
}

// storeFor copies the seeded store to a new directory and gives it policy
// (import.hcl) and the station keyring and pins file it may name.
func (w *policyWorld) storeFor(t *testing.T, name, policy string) string {
	t.Helper()
	dir := filepath.Join(w.work, "stores", name)
	os.MkdirAll(filepath.Dir(dir), 0o755)
	if out, err := exec.Command("cp", "-a", w.seeded, dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	bundletest.WriteFile(t, filepath.Join(dir, "stations.pub.asc"), []byte(bundletest.Armor(t, w.station)))
	bundletest.WriteFile(t, filepath.Join(dir, "pins.hcl"), []byte(fmt.Sprintf("namespace \"registry.terraform.io/hashicorp\" {\n  keys = [%q]\n}\n",
		verify.GroupFingerprint(verify.Fingerprint(w.pub)))))
	if policy != "" {
		bundletest.WriteFile(t, filepath.Join(dir, "import.hcl"), []byte(policy))
	}
	return dir
}

// approve writes a station approval of the bundle at path (as 'airgap
// approve' does) accepting keys.
func (w *policyWorld) approve(t *testing.T, path string, keys ...approval.PublisherKey) {
	t.Helper()
	r, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	id, err := bundle.ReadManifestDigest(r)
	if err != nil {
		t.Fatal(err)
	}
	st := approval.Statement{Bundle: id, BundleSigner: verify.Fingerprint(w.site), PublisherKeys: keys, Tool: "airgap test",
		Review: approval.Review{Text: verify.DigestBytes(nil), JSON: verify.DigestBytes(nil)}}
	data, err := approval.Sign(st, w.station, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	bundletest.WriteFile(t, approval.PathFor(path), data)
}

// refusedSet is a sorted "rule kind address version" list.
type refusedSet []string

func setOf(rs []struct{ Rule, Kind, Address, Version string }) refusedSet {
	var out refusedSet
	for _, r := range rs {
		out = append(out, strings.TrimSpace(strings.Join([]string{r.Rule, r.Kind, r.Address, r.Version}, " ")))
	}
	sort.Strings(out)
	return out
}

// forecastAndImport runs verify --json --against the store's inventory,
// then the import (--json); it returns both refused sets and the exit
// statuses, and fails the test if a refused import changed the store.
func forecastAndImport(t *testing.T, work, keyring, store, path string) (forecast, imported refusedSet, vcode, icode int) {
	t.Helper()
	have := store + ".have.json"
	os.WriteFile(have, []byte(harness.MustRunStdout(t, work, "inventory", "--store", store, "--json")), 0o644)
	stdout, stderr, vcode := harness.RunSplit(t, work, nil, "verify", "--keyring", keyring, "--against", have, "--json", path)
	var rep struct {
		Forecast *struct {
			Verdict string
			Refused []struct{ Rule, Kind, Address, Version string }
		}
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || rep.Forecast == nil {
		t.Fatalf("verify --json --against (exit %d): %v\n%s\n%s", vcode, err, stdout, stderr)
	}
	forecast = setOf(rep.Forecast.Refused)
	before := bundletest.Snapshot(t, store)
	stdout, stderr, icode = harness.RunSplit(t, work, nil, "import", "--keyring", keyring, "--store", store, "--json", path)
	var res struct {
		OK      bool
		Refused []struct{ Rule, Kind, Address, Version string }
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("import --json (exit %d): %v\n%s\n%s", icode, err, stdout, stderr)
	}
	imported = setOf(res.Refused)
	if icode != 0 {
		bundletest.SameTree(t, before, bundletest.Snapshot(t, store))
		t.Logf("import refused:\n%s", stderr)
	}
	return forecast, imported, vcode, icode
}

// TestForecastAgreesWithImport: a table of store policies × bundles; for
// each, 'airgap verify --against' (the store's inventory) forecasts a
// verdict and the entries refused, and the real import must agree, entry
// by entry and rule by rule. Before issue 30 verify could not see the
// store's policy (finding 1: a required gate forecast OK, then refused)
// and counted one refused entry where the import refused five (finding 2).
func TestForecastAgreesWithImport(t *testing.T) {
	t.Parallel()
	w := newPolicyWorld(t)
	rotated36, rotated37 := w.random(t, "3.6.0", w.rotated, 64<<10), w.random(t, "3.7.0", w.rotated, 64<<10)
	decl := []bundle.PublisherKeyDecl{{Namespace: "registry.terraform.io/hashicorp", Fingerprint: verify.Fingerprint(w.rotated)}}
	tofuLocal := bundletest.BuildProvider(t, filepath.Join(w.work, "p", "local"), bundletest.Provider{Host: "registry.opentofu.org", Namespace: "hashicorp",
		Type: "local", Version: "2.5.1", Platforms: []string{"linux_amd64"}, Signer: w.site, SiteSigned: true, PackageSize: 16 << 10})
	bundles := map[string]string{
		// the publisher's key rotated: a held version re-signed and a new one
		"rotated": w.bundleOf(t, "rotated", true, nil, rotated36, rotated37),
		// the same, the new key declared by the exporting laptop
		"declared": w.bundleOf(t, "declared", false, decl, rotated36, rotated37),
		// a site re-signed provider and a module without gate results
		"resigned": w.bundleOf(t, "resigned", true, nil, tofuLocal),
		// a held version with other bytes, and a new one by the old key
		"conflict": w.bundleOf(t, "conflict", false, nil, bundletest.BuildProvider(t, filepath.Join(w.work, "p", "conflict"), bundletest.Provider{
			Host: "registry.terraform.io", Namespace: "hashicorp", Type: "random", Version: "3.6.0", Platforms: []string{"linux_amd64"}, Signer: w.pub, PackageSize: 1 << 10}),
			w.random(t, "3.6.1", w.pub, 64<<10)),
	}
	policies := []struct{ name, hcl string }{
		{"none", ""},
		{"gates", "require_gate = [\"modules:trivy\"]\n"},
		{"publisher-signatures", "require_publisher_signatures = true\n"},
		{"station", stationPolicy},
		{"pins", "publisher_pins = \"pins.hcl\"\n"},
		{"all", "require_gate = [\"modules:trivy\"]\nrequire_publisher_signatures = true\npublisher_pins = \"pins.hcl\"\n" + stationPolicy},
	}
	withdraw := bundletest.NewSet()
	withdraw.Withdraw = []dist.Withdrawal{{Kind: dist.KindProvider, Addr: "registry.terraform.io/hashicorp/random", Versions: []string{"3.6.0"}, Reason: "CVE-2026-0001"}}
	withdrawB := filepath.Join(w.work, "withdraw.bundle")
	withdraw.WriteBundleFile(t, withdrawB, w.site, bundle.CompressionAuto)

	names := []string{"rotated", "declared", "resigned", "conflict"}
	refusedRules := map[string]bool{}
	for _, p := range append(policies, struct{ name, hcl string }{"withdrawn", ""}) {
		for _, b := range names {
			t.Run(p.name+"/"+b, func(t *testing.T) {
				st := w.storeFor(t, p.name+"-"+b, p.hcl)
				if p.name == "withdrawn" {
					harness.MustRun(t, w.work, nil, harness.Bin, "import", "--keyring", w.keyring, "--store", st, withdrawB)
				}
				fc, im, vcode, icode := forecastAndImport(t, w.work, w.keyring, st, bundles[b])
				if strings.Join(fc, "\n") != strings.Join(im, "\n") {
					t.Errorf("the forecast and the import disagree:\nforecast:\n  %s\nimport:\n  %s", strings.Join(fc, "\n  "), strings.Join(im, "\n  "))
				}
				if (len(fc) > 0) != (vcode == 4) || (len(im) > 0) != (icode == 1) || (icode == 0) != (vcode == 0) {
					t.Errorf("exit statuses: verify %d, import %d, for %d refusal(s)", vcode, icode, len(fc))
				}
				for _, r := range im {
					refusedRules[strings.Fields(r)[0]] = true
				}
			})
		}
	}
	// The table exercised every rule.
	for _, r := range []string{"withdrawn", "conflict", "required_gate", "publisher_signature", "publisher_key", "approval"} {
		if !refusedRules[r] {
			t.Errorf("no case of the table was refused by rule %s", r)
		}
	}

	// With the station's approval accepting the rotated key, the station
	// store takes the rotated bundle, and verify says so first.
	st := w.storeFor(t, "station-approved", stationPolicy)
	w.approve(t, bundles["rotated"], approval.PublisherKey{Namespace: "registry.terraform.io/hashicorp", Fingerprint: verify.Fingerprint(w.rotated)})
	if fc, im, vcode, icode := forecastAndImport(t, w.work, w.keyring, st, bundles["rotated"]); len(fc)+len(im) != 0 || vcode != 0 || icode != 0 {
		t.Errorf("the approved bundle: forecast %v (exit %d), import %v (exit %d)", fc, vcode, im, icode)
	}
}

// TestTrustChangesListed: a publisher key rotation re-signs versions the
// store already serves. Before issue 30 the import replaced their
// SHA256SUMS signatures silently and said "1 catalog changes" (finding
// 2); now verify's forecast, the import's output, the history
// (inventory) and the catalog page list each such version with the keys
// before and after, and the provider page and inventory show each
// version's signing key.
func TestTrustChangesListed(t *testing.T) {
	t.Parallel()
	w := newPolicyWorld(t)
	st := w.storeFor(t, "trust", "")
	decl := []bundle.PublisherKeyDecl{{Namespace: "registry.terraform.io/hashicorp", Fingerprint: verify.Fingerprint(w.rotated)}}
	b := w.bundleOf(t, "declared", false, decl, w.random(t, "3.6.0", w.rotated, 64<<10), w.random(t, "3.7.0", w.rotated, 64<<10))
	oldG, newG := verify.GroupFingerprint(verify.Fingerprint(w.pub)), verify.GroupFingerprint(verify.Fingerprint(w.rotated))
	change := "provider registry.terraform.io/hashicorp/random 3.6.0: its SHA256SUMS signature changes from " + oldG + " (publisher <publisher@example.test>) to " + newG
	have := st + ".have.json"
	os.WriteFile(have, []byte(harness.MustRunStdout(t, w.work, "inventory", "--store", st, "--json")), 0o644)
	out, err := harness.CmdRun(t, w.work, nil, harness.Bin, "verify", "--keyring", w.keyring, "--against", have, b)
	if err != nil || !strings.Contains(out, "trust changes: 1\n    "+change) {
		t.Errorf("verify's forecast does not list the trust change (%v):\n%s", err, out)
	}
	out = harness.MustRun(t, w.work, nil, harness.Bin, "import", "--keyring", w.keyring, "--store", st, b)
	if !strings.Contains(out, "trust change: "+change) {
		t.Errorf("the import does not list the trust change:\n%s", out)
	}
	inv := harness.MustRun(t, w.work, nil, harness.Bin, "inventory", "--store", st)
	for _, want := range []string{"1 catalog changes (1 added), 1 trust changes", "trust change: " + change, "signed " + time.Now().UTC().Format("2006") /* year */} {
		if !strings.Contains(inv, want) {
			t.Errorf("inventory lacks %q:\n%s", want, inv)
		}
	}
	if !strings.Contains(inv, "by "+newG+" (rotated publisher") || !strings.Contains(inv, "by "+verify.GroupFingerprint(verify.Fingerprint(w.pub))+" (publisher") {
		t.Errorf("inventory does not show each version's signing key:\n%s", inv)
	}
	srv := harness.StartServe(t, st)
	base, caFile := srv.Base, srv.CAFile
	if page := httpsGet(t, base, caFile, "/"); !strings.Contains(page, "its SHA256SUMS signature changes from "+oldG) {
		t.Errorf("the catalog page does not show the trust change")
	}
	if page := httpsGet(t, base, caFile, "/ui/providers/registry.terraform.io/hashicorp/random"); strings.Count(page, newG) != 2 {
		t.Errorf("the provider page does not show 3.6.0 and 3.7.0 signed by the rotated key:\n%s", page)
	}
}

// revocableKey is a new RSA key (not shared with other tests: it is revoked).
func revocableKey(t *testing.T, name string) *openpgp.Entity {
	t.Helper()
	e, err := openpgp.NewEntity(name, "", name+"@example.test", &packet.Config{Algorithm: packet.PubKeyAlgoRSA, RSABits: 2048, DefaultHash: crypto.SHA256})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestRetiredAndRevokedKeys: 'airgap keys retire' stops a key from signing
// anything new for a namespace (recorded, shown in history); a revocation
// seen once — carried by a bundle beside the key that signed, or given to
// 'airgap keys revoke' — is remembered, so a later bundle that carries the
// key with its revocation stripped is refused (finding 9: such a bundle
// was accepted), by the import and by verify's forecast alike.
func TestRetiredAndRevokedKeys(t *testing.T) {
	t.Parallel()
	w := newPolicyWorld(t)
	pubG := verify.GroupFingerprint(verify.Fingerprint(w.pub))

	t.Run("retire", func(t *testing.T) {
		st := w.storeFor(t, "retire", "")
		out := harness.MustRun(t, w.work, nil, harness.Bin, "keys", "retire", "--store", st, "--reason", "replaced in 2026", "registry.terraform.io/hashicorp", strings.ToLower(pubG))
		if !strings.Contains(out, "retired key "+pubG) {
			t.Errorf("keys retire:\n%s", out)
		}
		inv := harness.MustRun(t, w.work, nil, harness.Bin, "inventory", "--store", st)
		if !strings.Contains(inv, "RETIRED") || !strings.Contains(inv, "retired key "+pubG+" (publisher <publisher@example.test>) for registry.terraform.io/hashicorp: replaced in 2026") {
			t.Errorf("inventory does not show the retirement:\n%s", inv)
		}
		fc, im, _, icode := forecastAndImport(t, w.work, w.keyring, st, w.bundleOf(t, "new-by-retired", false, nil, w.random(t, "3.6.1", w.pub, 64<<10)))
		if icode != 1 || len(im) != 1 || im[0] != "publisher_key provider registry.terraform.io/hashicorp/random 3.6.1" || strings.Join(fc, ",") != strings.Join(im, ",") {
			t.Errorf("a new version signed by the retired key: forecast %v, import %v (exit %d)", fc, im, icode)
		}
		// What it signed before stays: a bundle carrying it again is fine.
		seed := filepath.Join(w.work, "seed.bundle")
		if _, im, _, icode := forecastAndImport(t, w.work, w.keyring, st, seed); icode != 0 {
			t.Errorf("re-carrying what the retired key signed before: %v", im)
		}
	})

	t.Run("revoked in a bundle, stripped in the next", func(t *testing.T) {
		st := w.storeFor(t, "revoke-carried", "")
		k, successor := revocableKey(t, "thing publisher"), revocableKey(t, "thing successor")
		thing := func(version string, key *openpgp.Entity) *bundletest.BuiltProvider {
			return bundletest.BuildProvider(t, filepath.Join(w.work, "p", "thing-"+version), bundletest.Provider{Host: "registry.terraform.io", Namespace: "example",
				Type: "thing", Version: version, Platforms: []string{"linux_amd64"}, Signer: key, PackageSize: 1 << 10})
		}
		first, stripped := thing("1.0.0", k), thing("1.2.0", k)
		harness.MustRun(t, w.work, nil, harness.Bin, "import", "--keyring", w.keyring, "--store", st, w.bundleOf(t, "thing-first", false, nil, first))
		if err := k.RevokeKey(packet.KeyCompromised, "laptop lost", nil); err != nil {
			t.Fatal(err)
		}
		// The registry lists the revoked key beside its successor, which signs.
		next := thing("1.1.0", successor)
		next.SigningKeys = append(next.SigningKeys, dist.SigningKey{KeyID: verify.KeyID(k), ASCIIArmor: bundletest.Armor(t, k)})
		decl := []bundle.PublisherKeyDecl{{Namespace: "registry.terraform.io/example", Fingerprint: verify.Fingerprint(successor)}}
		out := harness.MustRun(t, w.work, nil, harness.Bin, "import", "--keyring", w.keyring, "--store", st, w.bundleOf(t, "thing-next", false, decl, next))
		if !strings.Contains(out, "remembered the revocation of "+verify.GroupFingerprint(verify.Fingerprint(k))) || !strings.Contains(out, "key compromised: laptop lost") {
			t.Errorf("the import did not remember the carried revocation:\n%s", out)
		}
		// 1.2.0 is signed by k, carried without its revocation.
		fc, im, vcode, icode := forecastAndImport(t, w.work, w.keyring, st, w.bundleOf(t, "thing-stripped", false, nil, stripped))
		if icode != 1 || vcode != 4 || len(im) != 1 || !strings.Contains(im[0], "thing 1.2.0") || strings.Join(fc, ",") != strings.Join(im, ",") {
			t.Errorf("the key with its revocation stripped: forecast %v (exit %d), import %v (exit %d)", fc, vcode, im, icode)
		}
		if inv := harness.MustRun(t, w.work, nil, harness.Bin, "inventory", "--store", st); !strings.Contains(inv, "Revoked keys") || !strings.Contains(inv, "revoked key "+verify.GroupFingerprint(verify.Fingerprint(k))) {
			t.Errorf("inventory does not show the revocation:\n%s", inv)
		}
	})

	t.Run("keys revoke", func(t *testing.T) {
		st := w.storeFor(t, "revoke-given", "")
		k := revocableKey(t, "given publisher")
		p1 := bundletest.BuildProvider(t, filepath.Join(w.work, "p", "given-1"), bundletest.Provider{Host: "registry.terraform.io", Namespace: "given",
			Type: "x", Version: "1.0.0", Platforms: []string{"linux_amd64"}, Signer: k, PackageSize: 1 << 10})
		p2 := bundletest.BuildProvider(t, filepath.Join(w.work, "p", "given-2"), bundletest.Provider{Host: "registry.terraform.io", Namespace: "given",
			Type: "x", Version: "2.0.0", Platforms: []string{"linux_amd64"}, Signer: k, PackageSize: 1 << 10})
		b1 := w.bundleOf(t, "given-1", false, nil, p1)
		harness.MustRun(t, w.work, nil, harness.Bin, "import", "--keyring", w.keyring, "--store", st, b1)
		// Revoked (at least) two seconds after it signed, so the signature is before it.
		if err := k.RevokeKey(packet.KeySuperseded, "", &packet.Config{Time: func() time.Time { return time.Now().Add(2 * time.Second) }}); err != nil {
			t.Fatal(err)
		}
		rev := filepath.Join(w.work, "given-revoked.asc")
		bundletest.WriteFile(t, rev, []byte(bundletest.Armor(t, k)))
		out := harness.MustRun(t, w.work, nil, harness.Bin, "keys", "revoke", "--store", st, "--keyring", rev)
		if !strings.Contains(out, "revoked key "+verify.GroupFingerprint(verify.Fingerprint(k))) {
			t.Errorf("keys revoke:\n%s", out)
		}
		if _, im, _, icode := forecastAndImport(t, w.work, w.keyring, st, w.bundleOf(t, "given-2", false, nil, p2)); icode != 1 || len(im) != 1 {
			t.Errorf("a new version by the revoked key: %v (exit %d)", im, icode)
		}
		// Its signature the store already serves, dated before the revocation, stays acceptable.
		if _, im, _, icode := forecastAndImport(t, w.work, w.keyring, st, b1); icode != 0 {
			t.Errorf("re-carrying what the key signed before its revocation: %v", im)
		}
	})
}

// TestForecastMirrorHashesTier: a store that serves a provider version on
// a network mirror's hashes only may take the publisher-signed bundle of
// it (an upgrade: its SHA256SUMS is replaced) and the same mirror bundle
// again. The forecast read the inventory without the tier (its reader
// copied some fields of each provider version and dropped
// mirror_hashes_only), so it said "import will refuse" (a conflict) where
// the import accepts.
func TestForecastMirrorHashesTier(t *testing.T) {
	t.Parallel()
	w := newPolicyWorld(t)
	// As export writes one on --trust-mirror-hashes: a SHA256SUMS of the
	// carried packages signed by the site key, marked.
	mirror := bundletest.BuildProvider(t, filepath.Join(w.work, "p", "mirror"), bundletest.Provider{Host: "registry.terraform.io", Namespace: "hashicorp",
		Type: "random", Version: "3.6.5", Platforms: []string{"linux_amd64"}, Signer: w.site, PackageSize: 64 << 10})
	mirror.SigningKeys[0].Source = check.SiteKeySource
	mirror.MirrorHashesOnly, mirror.Mirror = true, "https://mirror.corp.example/tf/"
	for i := range mirror.Packages {
		mirror.Packages[i].MirrorHashes = []string{mirror.Packages[i].H1}
	}
	mb := w.bundleOf(t, "mirror", false, nil, mirror)
	upgrade := w.bundleOf(t, "upgrade", false, nil, w.random(t, "3.6.5", w.pub, 64<<10))
	for i, b := range []string{mb, upgrade} {
		t.Run(filepath.Base(b), func(t *testing.T) {
			// A store of its own: the seeded one has the publisher's key for
			// hashicorp, and a mirror-hashes-only version is a downgrade there.
			st := filepath.Join(w.work, "stores", fmt.Sprintf("mirror-%d", i))
			harness.MustRun(t, w.work, nil, harness.Bin, "import", "--keyring", w.keyring, "--store", st, mb)
			fc, im, vcode, icode := forecastAndImport(t, w.work, w.keyring, st, b)
			if strings.Join(fc, ",") != strings.Join(im, ",") || vcode != 0 || icode != 0 {
				t.Errorf("forecast %v (exit %d), import %v (exit %d)", fc, vcode, im, icode)
			}
		})
	}
}
