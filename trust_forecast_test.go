package main

// verify --against forecasts the import (issue 30, findings 1 and 2):
// for a table of store policies and bundles, the real verify's forecast
// and the real import agree entry by entry; trust changes to versions the
// store holds are listed; retired and revoked keys sign nothing new
// (finding 9).

import (
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

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/approval"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist"
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
	mustRun(t, w.work, nil, airgapBin, "import", "--keyring", w.keyring, "--store", w.seeded, seed)
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
	os.WriteFile(have, []byte(mustRunStdout(t, work, "inventory", "--store", store, "--json")), 0o644)
	stdout, stderr, vcode := runSplit(t, work, nil, "verify", "--keyring", keyring, "--against", have, "--json", path)
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
	stdout, stderr, icode = runSplit(t, work, nil, "import", "--keyring", keyring, "--store", store, "--json", path)
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
					mustRun(t, w.work, nil, airgapBin, "import", "--keyring", w.keyring, "--store", st, withdrawB)
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
