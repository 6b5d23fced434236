package station

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/packet"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/testdata/e2e/harness"
	"github.com/airgap/airgap/verify"
)

// revocationWorld is keys made with 'airgap keygen' (their private key
// files for export and approve, their entities for bundletest), each of
// which a subtest may revoke, and a publisher key that is never revoked.
type revocationWorld struct {
	work string
	pub  *openpgp.Entity
}

// keyPair is a key made by 'airgap keygen': PREFIX.key.asc, PREFIX.pub.asc
// and the key itself.
type keyPair struct {
	sec, pub string
	e        *openpgp.Entity
}

func (w *revocationWorld) key(t *testing.T, name string) keyPair {
	t.Helper()
	prefix := filepath.Join(w.work, name)
	harness.MustRun(t, w.work, nil, harness.Bin, "keygen", "--out", prefix, "--name", name+" <"+name+"@site.test>", "--no-passphrase")
	e, err := verify.ReadSigningKeyFile(prefix + ".key.asc")
	if err != nil {
		t.Fatal(err)
	}
	return keyPair{sec: prefix + ".key.asc", pub: prefix + ".pub.asc", e: e}
}

// revoked writes the public key of k with a revocation ("key compromised")
// to a new file, as 'gpg --export' of a revoked key gives it, and returns
// its path. (k.e stays without it: whoever holds a revoked key's secret
// signs on with a copy that does not carry the revocation.)
func (w *revocationWorld) revoked(t *testing.T, k keyPair) string {
	t.Helper()
	e, err := verify.ReadSigningKeyFile(k.sec)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.RevokeKey(packet.KeyCompromised, "laptop lost", nil); err != nil {
		t.Fatal(err)
	}
	armored, err := verify.PublicArmor(e)
	if err != nil {
		t.Fatal(err)
	}
	path := strings.TrimSuffix(k.pub, ".pub.asc") + ".revoked.asc"
	bundletest.WriteFile(t, path, []byte(armored))
	return path
}

// bundle writes a bundle of one provider example/NAME VERSION (signed by
// the publisher key) signed by signer.
func (w *revocationWorld) bundle(t *testing.T, name, version string, signer *openpgp.Entity) string {
	t.Helper()
	p := bundletest.BuildProvider(t, filepath.Join(w.work, "p", name+"-"+version), bundletest.Provider{Host: "registry.terraform.io", Namespace: "example",
		Type: name, Version: version, Platforms: []string{"linux_amd64"}, Signer: w.pub, PackageSize: 1 << 10})
	set := bundletest.NewSet()
	set.AddProvider(p)
	path := filepath.Join(w.work, name+"-"+version+".bundle")
	set.WriteBundleFile(t, path, signer, bundle.CompressionAuto)
	return path
}

// refusedFor runs verify --against the store's inventory and the import
// of path; both must refuse, and refuse the same entries by the same
// rules (the forecast is the import's decision), the import naming the
// key fp as revoked with a hint, and the store must be byte for byte as
// it was.
func refusedFor(t *testing.T, work, keyring, store, path, fp string) {
	t.Helper()
	have := store + ".have.json"
	bundletest.WriteFile(t, have, []byte(harness.MustRunStdout(t, work, "inventory", "--store", store, "--json")))
	stdout, stderr, code := harness.RunSplit(t, work, nil, "verify", "--keyring", keyring, "--against", have, "--json", path)
	var rep struct {
		Forecast *struct {
			Verdict string
			Refused []struct{ Rule, Kind, Address, Version string }
		}
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || rep.Forecast == nil || rep.Forecast.Verdict == "accept" || code == 0 {
		t.Fatalf("verify --against forecast (exit %d): %v\n%s\n%s", code, err, stdout, stderr)
	}
	before := bundletest.Snapshot(t, store)
	stdout, stderr, code = harness.RunSplit(t, work, nil, "import", "--keyring", keyring, "--store", store, "--json", path)
	if code == 0 {
		t.Fatalf("the import accepted it:\n%s\n%s", stdout, stderr)
	}
	var res struct {
		Refused []struct{ Rule, Kind, Address, Version string }
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("import --json (exit %d): %v\n%s", code, err, stdout)
	}
	if fc, im := setOf(rep.Forecast.Refused), setOf(res.Refused); len(im) == 0 || strings.Join(fc, ",") != strings.Join(im, ",") {
		t.Errorf("the forecast refused %v, the import %v", fc, im)
	}
	if !strings.Contains(stderr, verify.GroupFingerprint(fp)) || !strings.Contains(stderr, "revo") || !strings.Contains(stderr, "hint:") {
		t.Errorf("the refusal does not name the revoked key %s with a hint:\n%s", verify.GroupFingerprint(fp), stderr)
	}
	bundletest.SameTree(t, before, bundletest.Snapshot(t, store))
	t.Logf("import refused (%v):\n%s", setOf(res.Refused), stderr)
}

// TestRevokedKeysSignNothing: once 'airgap keys revoke --store' has
// recorded the revocation of a site, station or chain-hop key, nothing
// signed by it is taken — a bundle it signs, an approval it makes, a
// chain hop it signed — by the import, by verify's forecast, nor by
// 'approve --against' (issue 39, findings 1 and 5: the import took all
// three, and approve wrote an approval the import would not count). The
// store is byte for byte as it was after each refusal.
func TestRevokedKeysSignNothing(t *testing.T) {
	t.Parallel()
	w := &revocationWorld{work: t.TempDir(), pub: bundletest.Key(t, "publisher")}

	t.Run("site key", func(t *testing.T) {
		site := w.key(t, "site-a")
		st := filepath.Join(w.work, "store-site")
		harness.MustRun(t, w.work, nil, harness.Bin, "import", "--keyring", site.pub, "--store", st, w.bundle(t, "one", "1.0.0", site.e))
		harness.MustRun(t, w.work, nil, harness.Bin, "keys", "revoke", "--store", st, "--keyring", w.revoked(t, site))
		// Signed after the revocation; the import is given the copy
		// without it.
		refusedFor(t, w.work, site.pub, st, w.bundle(t, "one", "1.1.0", site.e), verify.Fingerprint(site.e))
	})

	t.Run("station key", func(t *testing.T) {
		site, station := w.key(t, "site-b"), w.key(t, "station-b")
		st := filepath.Join(w.work, "store-station")
		harness.MustRun(t, w.work, nil, harness.Bin, "import", "--keyring", site.pub, "--store", st, w.bundle(t, "two", "1.0.0", site.e))
		data, _ := os.ReadFile(station.pub)
		bundletest.WriteFile(t, filepath.Join(st, "stations.pub.asc"), data)
		bundletest.WriteFile(t, filepath.Join(st, "import.hcl"), []byte("approvals {\n  keyring  = \"stations.pub.asc\"\n  required = 1\n}\n"))
		harness.MustRun(t, w.work, nil, harness.Bin, "keys", "revoke", "--store", st, "--keyring", w.revoked(t, station))
		b := w.bundle(t, "two", "1.1.0", site.e)
		have := st + ".have.json"
		bundletest.WriteFile(t, have, []byte(harness.MustRunStdout(t, w.work, "inventory", "--store", st, "--json")))
		// approve --against decides as verify and the import do: no.
		out, err := harness.CmdRun(t, w.work, nil, harness.Bin, "approve", "--key", station.sec, "--keyring", site.pub, "--against", have, b)
		if err == nil || !strings.Contains(out, verify.GroupFingerprint(verify.Fingerprint(station.e))) || !strings.Contains(out, "revo") {
			t.Errorf("approve --against with a revoked station key (%v):\n%s", err, out)
		}
		if _, err := os.Stat(b + ".approval"); err == nil {
			t.Fatalf("approve wrote %s.approval", b)
		}
		// The approval made anyway (approve without --against) does not count.
		harness.MustRun(t, w.work, nil, harness.Bin, "approve", "--key", station.sec, "--keyring", site.pub, b)
		refusedFor(t, w.work, site.pub, st, b, verify.Fingerprint(station.e))
	})

	t.Run("chain hop", func(t *testing.T) {
		site, enclave := w.key(t, "site-c"), w.key(t, "enclave-c")
		a, b := filepath.Join(w.work, "store-a"), filepath.Join(w.work, "store-b")
		harness.MustRun(t, w.work, nil, harness.Bin, "import", "--keyring", site.pub, "--store", a, w.bundle(t, "three", "1.0.0", site.e))
		chain := filepath.Join(w.work, "from-a.bundle")
		harness.MustRun(t, w.work, nil, harness.Bin, "export", "--from-store", a, "--sign-key", enclave.sec, "--out", chain)
		harness.MustRun(t, w.work, nil, harness.Bin, "import", "--keyring", enclave.pub, "--store", b, w.bundle(t, "four", "1.0.0", enclave.e))
		harness.MustRun(t, w.work, nil, harness.Bin, "keys", "revoke", "--store", b, "--keyring", w.revoked(t, site))
		refusedFor(t, w.work, enclave.pub, b, chain, verify.Fingerprint(site.e))
	})

	t.Run("chain hop approval", func(t *testing.T) {
		site, station, enclave := w.key(t, "site-d"), w.key(t, "station-d"), w.key(t, "enclave-d")
		a, b := filepath.Join(w.work, "store-da"), filepath.Join(w.work, "store-db")
		// A takes bundles only with a station's approval; the chain
		// carries it to B, which has recorded the station key's revocation.
		os.MkdirAll(a, 0o755)
		data, _ := os.ReadFile(station.pub)
		bundletest.WriteFile(t, filepath.Join(a, "stations.pub.asc"), data)
		bundletest.WriteFile(t, filepath.Join(a, "import.hcl"), []byte("approvals {\n  keyring  = \"stations.pub.asc\"\n  required = 1\n}\n"))
		first := w.bundle(t, "nine", "1.0.0", site.e)
		harness.MustRun(t, w.work, nil, harness.Bin, "approve", "--key", station.sec, "--keyring", site.pub, first)
		harness.MustRun(t, w.work, nil, harness.Bin, "import", "--keyring", site.pub, "--store", a, first)
		chain := filepath.Join(w.work, "from-da.bundle")
		harness.MustRun(t, w.work, nil, harness.Bin, "export", "--from-store", a, "--sign-key", enclave.sec, "--out", chain)
		harness.MustRun(t, w.work, nil, harness.Bin, "import", "--keyring", enclave.pub, "--store", b, w.bundle(t, "ten", "1.0.0", enclave.e))
		harness.MustRun(t, w.work, nil, harness.Bin, "keys", "revoke", "--store", b, "--keyring", w.revoked(t, station))
		refusedFor(t, w.work, enclave.pub, b, chain, verify.Fingerprint(station.e))
	})
}

// TestExportFromStoreRevokedHop: 'export --from-store' does not build a
// chain of custody through a hop whose key the store has revoked (the
// import's rule, judgeSignature, as the next store would judge it): it
// refuses, naming the key, with a hint, and writes nothing; what only
// bundles by keys that are not revoked brought still goes.
func TestExportFromStoreRevokedHop(t *testing.T) {
	t.Parallel()
	w := &revocationWorld{work: t.TempDir(), pub: bundletest.Key(t, "publisher")}
	site, other, enclave := w.key(t, "site-e"), w.key(t, "site-f"), w.key(t, "enclave-e")
	a := filepath.Join(w.work, "store-ea")
	harness.MustRun(t, w.work, nil, harness.Bin, "import", "--keyring", site.pub, "--store", a, w.bundle(t, "eleven", "1.0.0", site.e))
	harness.MustRun(t, w.work, nil, harness.Bin, "import", "--keyring", other.pub, "--store", a, w.bundle(t, "twelve", "1.0.0", other.e))
	harness.MustRun(t, w.work, nil, harness.Bin, "keys", "revoke", "--store", a, "--keyring", w.revoked(t, site))
	before := bundletest.Snapshot(t, a)
	out := filepath.Join(w.work, "from-ea.bundle")
	stdout, stderr, code := harness.RunSplit(t, w.work, nil, "export", "--from-store", a, "--sign-key", enclave.sec, "--out", out)
	if code == 0 || !strings.Contains(stderr, verify.GroupFingerprint(verify.Fingerprint(site.e))) || !strings.Contains(stderr, "signed by a key this store has revoked") ||
		!strings.Contains(stderr, "hint:") || !strings.Contains(stderr, "nothing was written") {
		t.Errorf("export --from-store through a revoked hop (exit %d):\n%s\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("export --from-store wrote %s", out)
	}
	bundletest.SameTree(t, before, bundletest.Snapshot(t, a))
	// What the other key brought goes, with a chain that names only it.
	harness.MustRun(t, w.work, nil, harness.Bin, "export", "--from-store", a, "--sign-key", enclave.sec, "--out", out, "example/twelve@1.0.0")
	b := filepath.Join(w.work, "store-eb")
	harness.MustRun(t, w.work, nil, harness.Bin, "import", "--keyring", enclave.pub, "--store", b, out)
}

// TestKeyringCopiesMerged: a keyring that holds a key and a copy of it
// carrying its revocation, in either order, holds one revoked key, for
// every keyring airgap reads — the site keyring verify and import take,
// the store's station keyring, its chain keyring, a provider's carried
// publisher keys listed as separate entries (issue 39, finding 3:
// site and station keyrings used the first copy that verified, the chain
// keyring the last, so a revocation appended, or put first, was
// ignored). No store is told of the revocation here: the keyring alone
// must refuse, and the store stay byte for byte as it was.
func TestKeyringCopiesMerged(t *testing.T) {
	t.Parallel()
	w := &revocationWorld{work: t.TempDir(), pub: bundletest.Key(t, "publisher")}
	both := func(t *testing.T, k keyPair) map[string][]byte {
		t.Helper()
		plain, _ := os.ReadFile(k.pub)
		rev, _ := os.ReadFile(w.revoked(t, k))
		return map[string][]byte{"key then revocation": append(append([]byte{}, plain...), rev...), "revocation then key": append(append([]byte{}, rev...), plain...)}
	}
	// refused: the import of path into store with keyring refuses, naming
	// the key (its key ID or fingerprint) as revoked, the store unchanged.
	refused := func(t *testing.T, keyring, store, path string, k keyPair) {
		t.Helper()
		before := bundletest.Snapshot(t, store)
		stdout, stderr, code := harness.RunSplit(t, w.work, nil, "import", "--keyring", keyring, "--store", store, path)
		if code == 0 {
			t.Fatalf("the import accepted it:\n%s\n%s", stdout, stderr)
		}
		named := strings.Contains(stderr, verify.GroupFingerprint(verify.Fingerprint(k.e))) || strings.Contains(stderr, verify.KeyID(k.e))
		if !named || !strings.Contains(stderr, "revoked") || !strings.Contains(stderr, "hint:") {
			t.Errorf("the refusal does not name the revoked key %s with a hint:\n%s", verify.KeyID(k.e), stderr)
		}
		bundletest.SameTree(t, before, bundletest.Snapshot(t, store))
		t.Logf("import refused:\n%s", stderr)
	}

	t.Run("site keyring", func(t *testing.T) {
		site := w.key(t, "site-m")
		st := filepath.Join(w.work, "store-m")
		harness.MustRun(t, w.work, nil, harness.Bin, "import", "--keyring", site.pub, "--store", st, w.bundle(t, "five", "1.0.0", site.e))
		b := w.bundle(t, "five", "1.1.0", site.e)
		for order, data := range both(t, site) {
			t.Run(order, func(t *testing.T) {
				kr := filepath.Join(w.work, "site-m "+order+".asc")
				bundletest.WriteFile(t, kr, data)
				if out, err := harness.CmdRun(t, w.work, nil, harness.Bin, "verify", "--keyring", kr, b); err == nil {
					t.Errorf("verify accepted a bundle signed by a key its keyring revokes:\n%s", out)
				}
				refused(t, kr, st, b, site)
			})
		}
	})

	t.Run("station keyring", func(t *testing.T) {
		site, station := w.key(t, "site-n"), w.key(t, "station-n")
		a := filepath.Join(w.work, "store-n")
		harness.MustRun(t, w.work, nil, harness.Bin, "import", "--keyring", site.pub, "--store", a, w.bundle(t, "six", "1.0.0", site.e))
		for order, data := range both(t, station) {
			t.Run(order, func(t *testing.T) {
				st := filepath.Join(w.work, "store-n "+order)
				if out, err := exec.Command("cp", "-a", a, st).CombinedOutput(); err != nil {
					t.Fatalf("cp: %v %s", err, out)
				}
				bundletest.WriteFile(t, filepath.Join(st, "stations.pub.asc"), data)
				bundletest.WriteFile(t, filepath.Join(st, "import.hcl"), []byte("approvals {\n  keyring  = \"stations.pub.asc\"\n  required = 1\n}\n"))
				b := w.bundle(t, "six", "1.1.0", site.e)
				os.Remove(b + ".approval")
				have := st + ".have.json"
				bundletest.WriteFile(t, have, []byte(harness.MustRunStdout(t, w.work, "inventory", "--store", st, "--json")))
				if out, err := harness.CmdRun(t, w.work, nil, harness.Bin, "approve", "--key", station.sec, "--keyring", site.pub, "--against", have, b); err == nil {
					t.Errorf("approve --against with a station key its keyring revokes:\n%s", out)
				}
				harness.MustRun(t, w.work, nil, harness.Bin, "approve", "--key", station.sec, "--keyring", site.pub, b)
				refused(t, site.pub, st, b, station)
			})
		}
	})

	t.Run("carried publisher keys", func(t *testing.T) {
		// The registry lists the publisher's key and, as another entry,
		// its revoked copy; the provider is signed by that key.
		site := w.key(t, "site-p")
		st := filepath.Join(w.work, "store-p")
		harness.MustRun(t, w.work, nil, harness.Bin, "import", "--keyring", site.pub, "--store", st, w.bundle(t, "eleven", "1.0.0", site.e))
		publisher := w.key(t, "publisher-p")
		revoked, _ := os.ReadFile(w.revoked(t, publisher))
		for i, order := range []string{"key then revocation", "revocation then key"} {
			t.Run(order, func(t *testing.T) {
				p := bundletest.BuildProvider(t, filepath.Join(w.work, "p", "twelve-"+order), bundletest.Provider{Host: "registry.terraform.io", Namespace: "example",
					Type: "twelve", Version: "1.0.0", Platforms: []string{"linux_amd64"}, Signer: publisher.e, PackageSize: 1 << 10})
				rk := dist.SigningKey{KeyID: verify.KeyID(publisher.e), ASCIIArmor: string(revoked)}
				if i == 0 {
					p.SigningKeys = append(p.SigningKeys, rk)
				} else {
					p.SigningKeys = append([]dist.SigningKey{rk}, p.SigningKeys...)
				}
				set := bundletest.NewSet()
				set.AddProvider(p)
				b := filepath.Join(w.work, "twelve "+order+".bundle")
				set.WriteBundleFile(t, b, site.e, bundle.CompressionAuto)
				if out, err := harness.CmdRun(t, w.work, nil, harness.Bin, "verify", "--keyring", site.pub, b); err == nil {
					t.Errorf("verify accepted a provider signed by a key its carried keys revoke:\n%s", out)
				}
				refused(t, site.pub, st, b, publisher)
				// Said as a revoked publisher key, not as a bundle that
				// contradicts itself.
				_, stderr, _ := harness.RunSplit(t, w.work, nil, "import", "--keyring", site.pub, "--store", st, b)
				if strings.Contains(stderr, "contradicts itself") || !strings.Contains(stderr, "signed by a publisher key that is revoked") ||
					!strings.Contains(stderr, "hint: the publisher revoked the key that signed this version") {
					t.Errorf("the refusal of a provider signed by a revoked publisher key:\n%s", stderr)
				}
			})
		}
	})

	t.Run("chain keyring", func(t *testing.T) {
		site, enclave := w.key(t, "site-o"), w.key(t, "enclave-o")
		a := filepath.Join(w.work, "store-oa")
		harness.MustRun(t, w.work, nil, harness.Bin, "import", "--keyring", site.pub, "--store", a, w.bundle(t, "seven", "1.0.0", site.e))
		chain := filepath.Join(w.work, "from-oa.bundle")
		harness.MustRun(t, w.work, nil, harness.Bin, "export", "--from-store", a, "--sign-key", enclave.sec, "--out", chain)
		for order, data := range both(t, site) {
			t.Run(order, func(t *testing.T) {
				b := filepath.Join(w.work, "store-ob "+order)
				harness.MustRun(t, w.work, nil, harness.Bin, "import", "--keyring", enclave.pub, "--store", b, w.bundle(t, "eight", "1.0.0", enclave.e))
				bundletest.WriteFile(t, filepath.Join(b, "chain.pub.asc"), data)
				bundletest.WriteFile(t, filepath.Join(b, "import.hcl"), []byte("chain {\n  keyring = \"chain.pub.asc\"\n}\n"))
				refused(t, enclave.pub, b, chain, site)
			})
		}
	})
}
