package check_test

// The chain of custody against a hostile enclave: whoever holds an
// enclave's signing key (so its bundles verify) but not the keys of the
// hops before it.

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/bundle/report"
	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// chainWorld is the internet side's key, two enclaves' keys, and store A
// holding the Standard set the internet side exported.
type chainWorld struct {
	dir              string
	site, a, b, evil *openpgp.Entity
	storeA           string
}

func newChainWorld(t testing.TB) *chainWorld {
	t.Helper()
	w := &chainWorld{dir: t.TempDir(), site: bundletest.Key(t, "site"), a: bundletest.Key(t, "enclave-a"), b: bundletest.Key(t, "enclave-b"), evil: bundletest.Key(t, "evil")}
	set := bundletest.Standard(t, w.dir, w.site)
	// A provider its registry published no key for, re-signed by the
	// internet side's key, as export does.
	set.AddProvider(bundletest.BuildProvider(t, filepath.Join(w.dir, "local"), bundletest.Provider{Host: check.SiteResignHost, Namespace: "hashicorp", Type: "local",
		Version: "2.5.1", Platforms: []string{"linux_amd64"}, Signer: w.site, PackageSize: 16 << 10, SiteSigned: true}))
	var buf bytes.Buffer
	set.WriteBundle(t, &buf, w.site, bundle.CompressionAuto)
	w.storeA = filepath.Join(w.dir, "storeA")
	if _, err := store.Import(w.storeA, &buf, store.ImportOptions{Keyring: openpgp.EntityList{w.site}}); err != nil {
		t.Fatal(err)
	}
	return w
}

// plan is what an export of everything from root would carry.
func plan(t testing.TB, root string) *store.CarryPlan {
	t.Helper()
	c, err := store.OpenCarry(root, false)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := c.Plan(&c.Index.Catalog, true, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// writeChain signs p's manifest (after mutate, which plays the hostile
// enclave) with signer and returns the bundle's path.
func writeChain(t *testing.T, p *store.CarryPlan, signer *openpgp.Entity, mutate func(m *bundle.Manifest, files map[verify.Digest]string)) string {
	t.Helper()
	m := p.Manifest
	m.Tool = "airgap test"
	if mutate != nil {
		mutate(m, p.Files)
	}
	path := filepath.Join(t.TempDir(), "chain.bundle")
	bundletest.WriteSignedManifest(t, path, m, p.Files, signer)
	return path
}

// checkChainBundle runs verify's check on path, trusting signer.
func checkChainBundle(t *testing.T, path string, signer *openpgp.Entity) (*report.Report, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep := &report.Report{File: path}
	err = report.Check(f, openpgp.EntityList{signer}, rep)
	return rep, err
}

// addBlob adds bytes b as a blob of role to m and files.
func addBlob(t *testing.T, m *bundle.Manifest, files map[verify.Digest]string, b []byte, role string) verify.Digest {
	t.Helper()
	d := verify.DigestBytes(b)
	p := filepath.Join(t.TempDir(), d.Hex())
	bundletest.WriteFile(t, p, b)
	files[d] = p
	m.Blobs = append(m.Blobs, bundle.Blob{Digest: d, Size: int64(len(b)), Role: role})
	m.Normalize()
	return d
}

func TestChainGood(t *testing.T) {
	w := newChainWorld(t)
	rep, err := checkChainBundle(t, writeChain(t, plan(t, w.storeA), w.a, nil), w.a)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Chain) != 2 || rep.Chain[0].Status != report.HopChecked || rep.Chain[0].Signer.Fingerprint != verify.Fingerprint(w.site) ||
		rep.Chain[0].Brought != 4 || !rep.Chain[1].ThisBundle || rep.Checks.Hops != 1 {
		t.Fatalf("chain: %+v", rep.Chain)
	}
	for _, p := range rep.Providers {
		if p.CameWith != rep.Chain[0].Bundle {
			t.Errorf("provider %s came with %q", p.Address, p.CameWith)
		}
	}
}

// TestChainRefusesForgery: an enclave that signs a manifest whose chain
// does not hold up is refused, whatever it signs.
func TestChainRefusesForgery(t *testing.T) {
	w := newChainWorld(t)
	evilKey, err := verify.PublicArmor(w.evil)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		mutate func(t *testing.T, m *bundle.Manifest, files map[verify.Digest]string)
		want   string
	}{
		{"a record no hop carries", func(t *testing.T, m *bundle.Manifest, _ map[verify.Digest]string) {
			m.Catalog.Providers[0].Protocols = []string{"6.0"}
		}, "in no hop's signed manifest"},
		{"a package no hop carries", func(t *testing.T, m *bundle.Manifest, _ map[verify.Digest]string) {
			m.Catalog.Providers[0].Packages[0].Size++
		}, "in no hop's signed manifest"},
		{"another signer claimed", func(t *testing.T, m *bundle.Manifest, _ map[verify.Digest]string) {
			m.Chain[0].Signer.Identity = "Someone Else <x@y>"
		}, "but its signature is by"},
		{"another signature time", func(t *testing.T, m *bundle.Manifest, _ map[verify.Digest]string) {
			at := m.Chain[0].SignedAt.Add(-time.Hour)
			m.Chain[0].SignedAt = &at
		}, "but its signature is dated"},
		{"the hop's key swapped for another", func(t *testing.T, m *bundle.Manifest, files map[verify.Digest]string) {
			m.Chain[0].Key = addBlob(t, m, files, []byte(evilKey), dist.RoleBundleKey)
			removeBlob(m, files, verifyKeyOf(m))
		}, "does not verify with the key it carries"},
		{"a hop into a store nobody signed for", func(t *testing.T, m *bundle.Manifest, _ map[verify.Digest]string) {
			m.Chain[0].Into = verify.Fingerprint(w.evil)
		}, "signed no hop of the chain"},
		{"gates of its own", func(t *testing.T, m *bundle.Manifest, _ map[verify.Digest]string) {
			m.Gates = []dist.Gate{{Name: "trivy", For: dist.GateModules, Command: []string{"trivy"}, Tool: "1"}}
		}, "runs none"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := plan(t, w.storeA)
			path := writeChain(t, p, w.a, func(m *bundle.Manifest, files map[verify.Digest]string) { c.mutate(t, m, files) })
			_, err := checkChainBundle(t, path, w.a)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error with %q", err, c.want)
			}
		})
	}
}

// verifyKeyOf is the (only) key blob of a one-hop chain before the swap.
func verifyKeyOf(m *bundle.Manifest) verify.Digest {
	for _, b := range m.Blobs {
		if b.Role == dist.RoleBundleKey {
			used := false
			for _, h := range m.Chain {
				used = used || h.Key == b.Digest
			}
			if !used {
				return b.Digest
			}
		}
	}
	return ""
}

func removeBlob(m *bundle.Manifest, files map[verify.Digest]string, d verify.Digest) {
	for i, b := range m.Blobs {
		if b.Digest == d {
			m.Blobs = append(m.Blobs[:i], m.Blobs[i+1:]...)
			delete(files, d)
			return
		}
	}
}

// TestChainRecorded: a hop whose manifest the store did not keep is
// recorded, not checked; what only it can have brought is listed, not
// refused, and needs a person's attention.
func TestChainRecorded(t *testing.T) {
	w := newChainWorld(t)
	path := writeChain(t, plan(t, w.storeA), w.a, func(m *bundle.Manifest, files map[verify.Digest]string) {
		h := &m.Chain[0]
		for _, d := range []verify.Digest{h.Bundle, h.Signature, h.Key} {
			removeBlob(m, files, d)
		}
		h.Signature, h.Key, h.SignedAt = "", "", nil
	})
	rep, err := checkChainBundle(t, path, w.a)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Chain[0].Status != report.HopRecorded || len(rep.Checks.Untied) == 0 || len(rep.Attention) == 0 || rep.Attention[0].Kind != report.AttentionCustody {
		t.Fatalf("recorded hop: %+v %v %+v", rep.Chain, rep.Checks.Untied, rep.Attention)
	}
}

// TestChainTwoHops: what an earlier enclave recorded about its imports
// must reach the next one unchanged.
func TestChainTwoHops(t *testing.T) {
	w := newChainWorld(t)
	x1 := writeChain(t, plan(t, w.storeA), w.a, nil)
	storeB := filepath.Join(w.dir, "storeB")
	f, err := os.Open(x1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = store.Import(storeB, f, store.ImportOptions{Keyring: openpgp.EntityList{w.a}})
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := checkChainBundle(t, writeChain(t, plan(t, storeB), w.b, nil), w.b)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Chain) != 3 || rep.Chain[0].Hop != 1 || rep.Chain[0].Signer.Fingerprint != verify.Fingerprint(w.site) ||
		rep.Chain[0].Into != verify.Fingerprint(w.a) || rep.Chain[1].From != "store" || rep.Chain[2].Hop != 3 {
		t.Fatalf("chain: %+v", rep.Chain)
	}
	for _, c := range []struct {
		name   string
		mutate func(m *bundle.Manifest, files map[verify.Digest]string)
		want   string
	}{
		{"an earlier import's time changed", func(m *bundle.Manifest, _ map[verify.Digest]string) {
			for i := range m.Chain {
				if m.Chain[i].Into != "" {
					m.Chain[i].Imported = m.Chain[i].Imported.Add(time.Hour)
				}
			}
		}, "records it otherwise"},
		{"an earlier hop left out", func(m *bundle.Manifest, files map[verify.Digest]string) {
			var keep []bundle.Hop
			for _, h := range m.Chain {
				if h.Into == "" {
					keep = append(keep, h)
					continue
				}
				removeBlob(m, files, h.Bundle)
				removeBlob(m, files, h.Signature)
				removeBlob(m, files, h.Key)
			}
			m.Chain = keep
		}, "which this bundle's chain lacks"},
		{"the hop said to come straight into this store", func(m *bundle.Manifest, _ map[verify.Digest]string) {
			for i := range m.Chain {
				m.Chain[i].Into = ""
			}
		}, "records it otherwise"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := checkChainBundle(t, writeChain(t, plan(t, storeB), w.b, c.mutate), w.b)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error with %q", err, c.want)
			}
		})
	}
}

// FuzzChainCheck: a manifest with a chain of custody as an enclave could
// sign it (whoever holds an enclave's key signs what it likes), checked
// with every blob of the real chain at hand. The check must refuse or
// accept, never panic or hang, whatever the chain records say.
func FuzzChainCheck(f *testing.F) {
	w := newChainWorld(f)
	p := plan(f, w.storeA)
	p.Manifest.Tool = "airgap test"
	good, err := p.Manifest.Marshal()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(bytes.Replace(good, []byte(`"into"`), []byte(`"intx"`), 1))
	signer := verify.Signer{KeyID: verify.KeyID(w.a), Fingerprint: verify.Fingerprint(w.a), Identity: verify.Identity(w.a)}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := bundle.ParseManifest(data)
		if err != nil {
			return
		}
		c, err := check.New(m, check.Options{Signer: signer, Have: func(d verify.Digest) (string, bool) {
			path, ok := p.Files[d]
			return path, ok
		}})
		if err != nil {
			return
		}
		defer c.Close()
		c.Finish()
	})
}

// TestChainReSignature: a site re-signature in a bundle exported from a
// store must be by the signer of a hop that carried it (here the internet
// side's); the enclave that signs the bundle re-signs nothing, even where
// a hop recorded without its manifest leaves records untied.
func TestChainReSignature(t *testing.T) {
	w := newChainWorld(t)
	recordOnly := func(m *bundle.Manifest, files map[verify.Digest]string) {
		h := &m.Chain[0]
		for _, d := range []verify.Digest{h.Bundle, h.Signature, h.Key} {
			removeBlob(m, files, d)
		}
		h.Signature, h.Key, h.SignedAt = "", "", nil
	}
	// Untouched, under a recorded hop: the internet side's re-signature,
	// listed as untied.
	rep, err := checkChainBundle(t, writeChain(t, plan(t, w.storeA), w.a, recordOnly), w.a)
	if err != nil || len(rep.Checks.Untied) == 0 {
		t.Fatalf("recorded hop: %v %v", err, rep.Checks)
	}
	// Re-signed by the enclave itself.
	path := writeChain(t, plan(t, w.storeA), w.a, func(m *bundle.Manifest, files map[verify.Digest]string) {
		recordOnly(m, files)
		for i := range m.Catalog.Providers {
			p := &m.Catalog.Providers[i]
			if !p.SiteSigned {
				continue
			}
			sums, err := os.ReadFile(files[p.Shasums])
			if err != nil {
				t.Fatal(err)
			}
			var sig bytes.Buffer
			if err := verify.SignDetached(&sig, w.a, bytes.NewReader(sums)); err != nil {
				t.Fatal(err)
			}
			removeBlob(m, files, p.ShasumsSig)
			p.ShasumsSig = addBlob(t, m, files, sig.Bytes(), dist.RoleShasumsSig)
			p.SigningKeys = []dist.SigningKey{{KeyID: verify.KeyID(w.a), ASCIIArmor: bundletest.Armor(t, w.a), Source: check.SiteKeySource}}
		}
	})
	if _, err := checkChainBundle(t, path, w.a); err == nil || !strings.Contains(err.Error(), "re-signs nothing") {
		t.Fatalf("an enclave's own re-signature: %v", err)
	}
}
