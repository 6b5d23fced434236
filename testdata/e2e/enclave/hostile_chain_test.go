package enclave

import (
	"bytes"
	"crypto"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/approval"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/testdata/e2e/harness"
	"github.com/airgap/airgap/verify"
)

// chainBuilder builds a bundle of the Standard set whose chain has hops
// signed by site, as a hostile enclave could.
type chainBuilder struct {
	t     *testing.T
	dir   string
	site  *openpgp.Entity
	base  *bundle.Manifest
	m     bundle.Manifest
	files map[verify.Digest]string
	at    time.Time
}

func newChainBuilder(t *testing.T, dir string, site *openpgp.Entity) *chainBuilder {
	t.Helper()
	set := bundletest.Standard(t, filepath.Join(dir, "src"), site)
	b := &chainBuilder{t: t, dir: dir, site: site, base: set.Manifest(t), files: map[verify.Digest]string{}, at: site.PrimaryKey.CreationTime.Add(time.Second).UTC()}
	b.m = *b.base
	b.m.Blobs = append([]bundle.Blob(nil), b.base.Blobs...)
	for d, p := range set.Files {
		b.files[d] = p
	}
	return b
}

// add makes data a blob of the bundle (once) with role.
func (b *chainBuilder) add(data []byte, role string) verify.Digest {
	d := verify.DigestBytes(data)
	if _, ok := b.files[d]; !ok {
		p := filepath.Join(b.dir, "blobs", d.Hex())
		bundletest.WriteFile(b.t, p, data)
		b.files[d] = p
		b.m.Blobs = append(b.m.Blobs, bundle.Blob{Digest: d, Size: int64(len(data)), Role: role})
	}
	return d
}

// hop is a hop whose manifest is the Standard set's with tool, signed by
// site, naming key (site's armored key, perhaps with another comment).
func (b *chainBuilder) hop(tool, key string) bundle.Hop {
	hm := *b.base
	hm.Tool = tool
	data, err := hm.Marshal()
	if err != nil {
		b.t.Fatal(err)
	}
	var sig bytes.Buffer
	if err := verify.SignDetachedAt(&sig, b.site, bytes.NewReader(data), b.at); err != nil {
		b.t.Fatal(err)
	}
	signer := verify.Signer{KeyID: verify.KeyID(b.site), Fingerprint: verify.Fingerprint(b.site), Identity: verify.Identity(b.site)}
	return bundle.Hop{Bundle: b.add(data, dist.RoleBundleManifest), Signature: b.add(sig.Bytes(), dist.RoleBundleSignature),
		Key: b.add([]byte(key), dist.RoleBundleKey), Signer: signer, SignedAt: &b.at, Imported: b.at}
}

// fatChain writes a bundle signed by enclave whose chain has n hops, each
// a real, validly signed manifest of the Standard set padded to pad bytes
// (the same catalog, another tool string), and returns its path.
func fatChain(t *testing.T, dir string, site, enclave *openpgp.Entity, n, pad int) string {
	t.Helper()
	b := newChainBuilder(t, dir, site)
	key := bundletest.Armor(t, site)
	for i := range n {
		b.m.Chain = append(b.m.Chain, b.hop(fmt.Sprintf("airgap %d %s", i, strings.Repeat("x", pad)), key))
	}
	out := filepath.Join(dir, "chain.bundle")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	bw, err := bundle.NewWriter(f, &b.m, enclave, bundle.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := bw.WriteFiles(b.files); err != nil {
		t.Fatal(err)
	}
	if err := bw.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// hostileEnclave is a work directory, a site key whose bundles a store
// imported, the key of the enclave that exports from that store, and a
// keyring file of the enclave's public key.
func hostileEnclave(t *testing.T) (work string, site, enclave *openpgp.Entity, keyring string) {
	t.Helper()
	work = t.TempDir()
	site, enclave = bundletest.Key(t, "site"), bundletest.Key(t, "enclave")
	keyring = filepath.Join(work, "enclave.pub.asc")
	bundletest.WriteFile(t, keyring, []byte(bundletest.Armor(t, enclave)))
	return work, site, enclave, keyring
}

// TestHostileChainMemory: a bundle whose chain carries 240 MiB of hop
// manifests (60 real manifests of 4 MiB each, all signed and tying; the
// bundle is a few MiB, the padding compresses) is checked one hop at a
// time: verify and import stay within trustRSSLimit (each hop's tool
// string was kept whole, for the review: 387 MiB). Nine hops of 60 MiB
// (over bundle.MaxHopManifests in all) are refused before any hop is
// read.
func TestHostileChainMemory(t *testing.T) {
	work, site, enclave, keyring := hostileEnclave(t)
	path := fatChain(t, filepath.Join(work, "ok"), site, enclave, 60, 4<<20)
	if fi, _ := os.Stat(path); fi.Size() > 64<<20 {
		t.Fatalf("the bundle is %d bytes: the padding should compress", fi.Size())
	}
	out, code := harness.RunBounded(t, work, "verify", "--keyring", keyring, path)
	if code != 0 || !strings.Contains(out, "Chain of custody (2 hops") {
		t.Fatalf("verify (exit %d):\n%.2000s", code, out)
	}
	root := filepath.Join(work, "store")
	if out, code := harness.RunBounded(t, work, "import", "--keyring", keyring, "--store", root, path); code != 0 || !strings.Contains(out, "chain of custody: 60 hop(s)") {
		t.Fatalf("import (exit %d):\n%s", code, out)
	}

	over := fatChain(t, filepath.Join(work, "over"), site, enclave, 9, 60<<20)
	harness.ExpectRefused(t, work, keyring, root, over, "manifests are over 536870912 bytes in all")
}

// TestHostileChainRevokedHopForecast: the next enclave's chain keyring has
// the copy of an upstream key that carries its revocation (the key was
// lost), while the bundle's chain carries the copy without it. The import
// checks each hop with the keyring's copy and refuses; verify --against
// must forecast that refusal, not say "import will accept" (exit 0).
func TestHostileChainRevokedHopForecast(t *testing.T) {
	t.Parallel()
	e := newEnclaves(t)
	storeA, storeB := e.path("storeA"), e.path("storeB")
	e.importInto(t, storeA, e.pub("internet"), e.internetExport(t, "first", "platforms = [\"linux_amd64\"]\nprovider \"hashicorp/random\" { versions = \"3.6.2\" }\n"))
	x, _ := e.fromStore(t, storeA, "a", "a1")
	e.importInto(t, storeB, e.pub("internet"), e.internetExport(t, "seed", "platforms = [\"linux_amd64\"]\nprovider \"hashicorp/null\" {}\n"))
	k, err := verify.ReadSigningKeyFile(e.sec("internet"))
	if err != nil {
		t.Fatal(err)
	}
	if err := k.RevokeKey(packet.KeyCompromised, "laptop lost", nil); err != nil {
		t.Fatal(err)
	}
	revoked, err := verify.PublicArmor(k)
	if err != nil {
		t.Fatal(err)
	}
	chainKeyring := func(armor []byte) {
		bundletest.WriteFile(t, filepath.Join(storeB, "chain.pub.asc"), armor)
		bundletest.WriteFile(t, filepath.Join(storeB, "import.hcl"), []byte("chain {\n  keyring = \"chain.pub.asc\"\n}\n"))
	}
	have := e.path("b.have.json")
	forecastAndImport := func(b string) (vout, iout string, vcode int, ierr error) {
		bundletest.WriteFile(t, have, []byte(harness.MustRunStdout(t, e.work, "inventory", "--store", storeB, "--json")))
		vout, _, vcode = harness.RunSplit(t, e.work, nil, "verify", "--keyring", e.pub("a"), "--against", have, b)
		before := bundletest.Snapshot(t, storeB)
		iout, ierr = harness.CmdRun(t, e.work, nil, harness.Bin, "import", "--keyring", e.pub("a"), "--store", storeB, b)
		if ierr != nil {
			bundletest.SameTree(t, before, bundletest.Snapshot(t, storeB))
		}
		return vout, iout, vcode, ierr
	}

	t.Run("full", func(t *testing.T) {
		chainKeyring([]byte(revoked))
		vout, iout, vcode, ierr := forecastAndImport(x)
		if ierr == nil || !strings.Contains(iout, "revoked") {
			t.Fatalf("the import took a hop signed by a key the chain keyring has revoked: %v\n%s", ierr, iout)
		}
		if vcode != 4 || !strings.Contains(vout, "Verdict: import will refuse") || !strings.Contains(vout, "revoked") {
			t.Errorf("verify --against (exit %d) does not forecast the import's refusal:\n%s\nthe import:\n%s", vcode, vout, iout)
		}
	})

	// A delta omits the hops the store has: verify cannot check them with
	// the keyring, and says the import will.
	t.Run("delta", func(t *testing.T) {
		good, err := os.ReadFile(e.pub("internet"))
		if err != nil {
			t.Fatal(err)
		}
		chainKeyring(good)
		e.importInto(t, storeB, e.pub("a"), x)
		e.importInto(t, storeA, e.pub("internet"), e.internetExport(t, "second", "platforms = [\"linux_amd64\"]\nprovider \"hashicorp/random\" { versions = \"3.6.0\" }\n"))
		bundletest.WriteFile(t, have, []byte(harness.MustRunStdout(t, e.work, "inventory", "--store", storeB, "--json")))
		d, _ := e.fromStore(t, storeA, "a", "a2", "--have", have)
		chainKeyring([]byte(revoked))
		// As a hostile enclave could write it: the hops' manifests,
		// signatures and keys omitted too (the store has them).
		omitted := rewriteBundle(t, d, e.pub("a"), e.sec("a"), func(m *bundle.Manifest, _ map[verify.Digest]string) {
			for i, b := range m.Blobs {
				switch b.Role {
				case dist.RoleBundleManifest, dist.RoleBundleSignature, dist.RoleBundleKey:
					m.Blobs[i].Omitted = true
				}
			}
		})
		for _, b := range []string{d, omitted} {
			vout, iout, vcode, ierr := forecastAndImport(b)
			if ierr == nil {
				t.Fatalf("the import took a delta whose hops the chain keyring's copy refuses:\n%s", iout)
			}
			if (vcode != 4 || !strings.Contains(vout, "Verdict: import will refuse")) && !strings.Contains(vout, "decided at import: the signature of chain hop") {
				t.Errorf("verify --against (exit %d) neither forecasts the refusal nor says the import decides the hops it lacks:\n%s\nthe import:\n%s", vcode, vout, iout)
			}
		}
	})
}

// heavyStationKey is a station key (RSA-4096, seven user IDs) written 32
// times in one armored document: 256 self-signatures to check each time
// the document is read, within verify's limits (about 0.15–0.3 s a read
// on the 2-core machine).
func heavyStationKey(t *testing.T) (*openpgp.Entity, []byte) {
	t.Helper()
	cfg := &packet.Config{Algorithm: packet.PubKeyAlgoRSA, RSABits: 4096, DefaultHash: crypto.SHA256}
	e, err := openpgp.NewEntity("Station", "", "station@x.test", cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 7; i++ {
		if err := e.AddUserId(fmt.Sprintf("Station %d", i), "", "s@x.test", cfg); err != nil {
			t.Fatal(err)
		}
	}
	var one, out bytes.Buffer
	if err := e.Serialize(&one); err != nil {
		t.Fatal(err)
	}
	w, err := armor.Encode(&out, openpgp.PublicKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range verify.MaxKeysPerKeyring {
		w.Write(one.Bytes())
	}
	w.Close()
	return e, out.Bytes()
}

// keyFlood writes a bundle signed by enclave whose chain has hops hops
// (the Standard set's manifest, each with another tool string, signed by
// site), each with approvals distinct station approvals by station (its
// key blob stationKey); with variants, each hop names a key blob of its
// own (site's key with another armor comment: the same key, another
// blob); with dup, a hop lists its approval twice.
func keyFlood(t *testing.T, dir string, site, enclave, station *openpgp.Entity, stationKey []byte, hops, approvals int, variants, dup bool) string {
	t.Helper()
	b := newChainBuilder(t, dir, site)
	siteArmor := bundletest.Armor(t, site)
	skd := b.add(stationKey, dist.RoleBundleKey)
	el, err := verify.ReadKeyring(bytes.NewReader(stationKey))
	if err != nil {
		t.Fatal(err)
	}
	stSigner := verify.Signer{KeyID: verify.KeyID(el[0]), Fingerprint: verify.Fingerprint(el[0]), Identity: verify.Identity(el[0])}
	now := time.Now().UTC().Truncate(time.Second)
	for i := range hops {
		key := siteArmor
		if variants {
			key = strings.Replace(siteArmor, "-----\n", fmt.Sprintf("-----\nComment: %d\n", i), 1)
		}
		h := b.hop(fmt.Sprintf("airgap %d", i), key)
		for j := range approvals {
			ap, err := approval.Sign(approval.Statement{Bundle: h.Bundle, BundleSigner: h.Signer.Fingerprint, Tool: "airgap test", Note: fmt.Sprint(j),
				Review: approval.Review{Text: verify.DigestBytes(nil), JSON: verify.DigestBytes(nil)}}, station, now)
			if err != nil {
				t.Fatal(err)
			}
			h.Approvals = append(h.Approvals, bundle.HopApproval{Approval: b.add(ap, dist.RoleApproval), Key: skd, Station: stSigner, Time: now})
		}
		if dup {
			h.Approvals = append(h.Approvals, h.Approvals[0])
		}
		b.m.Chain = append(b.m.Chain, h)
	}
	sort.Slice(b.m.Chain, func(i, j int) bool { return b.m.Chain[i].Bundle < b.m.Chain[j].Bundle })
	sort.Slice(b.m.Blobs, func(i, j int) bool { return b.m.Blobs[i].Digest < b.m.Blobs[j].Digest })
	out := filepath.Join(dir, "flood.bundle")
	bundletest.WriteSignedManifest(t, out, &b.m, b.files, enclave) // as a hostile enclave would: not validated
	return out
}

// TestHostileChainKeyFlood: every hop and station approval of a chain
// names its key by blob, and a hostile enclave can name one heavy key (as
// many keys and self-signatures as verify reads: 0.15–0.3 s a read) from
// every approval of every hop. Each approval read it again: 64 hops with
// 16 approvals each (a 444 KiB bundle) cost verify 94 s of CPU, and the
// 4096 hops a chain may have over an hour and a half, at the station and
// again at the import. A key blob is now read once per check, a chain
// names at most bundle.MaxChainKeys of them (and MaxChainKeyBytes), an
// approval once per hop and MaxChainApprovals in all: 4096 hops with 8192
// approvals (18 MiB) verify in 7.6 s of CPU and 91 MiB, import in 8.5 s.
func TestHostileChainKeyFlood(t *testing.T) {
	work, site, enclave, keyring := hostileEnclave(t)
	station, heavy := heavyStationKey(t)

	path := keyFlood(t, filepath.Join(work, "flood"), site, enclave, station, heavy, 96, 4, false, false)
	start := time.Now()
	out, code := harness.RunBounded(t, work, "verify", "--keyring", keyring, path)
	took := time.Since(start)
	t.Logf("verify of 96 hops × 4 approvals naming one heavy key: %s", took.Round(time.Millisecond))
	if code != 0 || !strings.Contains(out, "Chain of custody (2 hops") || strings.Count(out, "approved at the transfer station") != 96*4 {
		t.Fatalf("verify (exit %d):\n%.3000s", code, out)
	}
	// Read 96 × 4 times, the key cost about a minute here.
	if took > 20*time.Second {
		t.Errorf("verify took %s: the heavy key is read more than once", took)
	}

	for _, c := range []struct {
		name     string
		hops     int
		variants bool
		dup      bool
		want     string
	}{
		{"too many keys", bundle.MaxChainKeys, true, false, fmt.Sprintf("name over %d distinct keys", bundle.MaxChainKeys)},
		{"an approval twice", 1, false, true, "is listed twice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := keyFlood(t, filepath.Join(work, c.name), site, enclave, station, heavy, c.hops, 1, c.variants, c.dup)
			out, code := harness.RunBounded(t, work, "verify", "--keyring", keyring, path)
			if code == 0 || !strings.Contains(out, c.want) {
				t.Errorf("verify (exit %d), want %q:\n%.2000s", code, c.want, out)
			}
		})
	}
}
