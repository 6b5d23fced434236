package main

// A chain of custody as a hostile enclave could make it: whoever holds an
// enclave's key (trusted to hand over bundles) signs a bundle whose chain
// carries as much as the format lets it, to make the next network's
// 'airgap verify' and 'airgap import' hold it all at once.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// fatChain writes a bundle signed by enclave whose chain has n hops, each
// a real, validly signed manifest of the Standard set padded to pad bytes
// (the same catalog, another tool string), and returns its path.
func fatChain(t *testing.T, dir string, site, enclave *openpgp.Entity, n, pad int) string {
	t.Helper()
	set := bundletest.Standard(t, filepath.Join(dir, "src"), site)
	base := set.Manifest(t)
	key, err := verify.PublicArmor(site)
	if err != nil {
		t.Fatal(err)
	}
	m := *base
	m.Blobs = append([]bundle.Blob(nil), base.Blobs...)
	files := map[verify.Digest]string{}
	for d, p := range set.Files {
		files[d] = p
	}
	add := func(b []byte, role string) verify.Digest {
		d := verify.DigestBytes(b)
		if _, ok := files[d]; ok {
			return d
		}
		p := filepath.Join(dir, d.Hex())
		bundletest.WriteFile(t, p, b)
		files[d] = p
		m.Blobs = append(m.Blobs, bundle.Blob{Digest: d, Size: int64(len(b)), Role: role})
		return d
	}
	kd := add([]byte(key), dist.RoleBundleKey)
	at := site.PrimaryKey.CreationTime.Add(time.Second).UTC()
	signer := verify.Signer{KeyID: verify.KeyID(site), Fingerprint: verify.Fingerprint(site), Identity: verify.Identity(site)}
	for i := range n {
		hm := *base
		hm.Tool = fmt.Sprintf("airgap %d %s", i, strings.Repeat("x", pad))
		data, err := hm.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		var sig bytes.Buffer
		if err := verify.SignDetachedAt(&sig, site, bytes.NewReader(data), at); err != nil {
			t.Fatal(err)
		}
		md := add(data, dist.RoleBundleManifest)
		m.Chain = append(m.Chain, bundle.Hop{Bundle: md, Signature: add(sig.Bytes(), dist.RoleBundleSignature), Key: kd, Signer: signer, SignedAt: &at, Imported: at})
	}
	out := filepath.Join(dir, "chain.bundle")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	bw, err := bundle.NewWriter(f, &m, enclave, bundle.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := bw.WriteFiles(files); err != nil {
		t.Fatal(err)
	}
	if err := bw.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestHostileChainMemory: a bundle whose chain carries 240 MiB of hop
// manifests (60 real manifests of 4 MiB each, all signed and tying; the
// bundle is a few MiB, the padding compresses) is checked one hop at a
// time: verify and import stay within trustRSSLimit (each hop's tool
// string was kept whole, for the review: 387 MiB). Nine hops of 60 MiB
// (over bundle.MaxHopManifests in all) are refused before any hop is
// read.
func TestHostileChainMemory(t *testing.T) {
	work := t.TempDir()
	site, enclave := bundletest.Key(t, "site"), bundletest.Key(t, "enclave")
	keyring := filepath.Join(work, "enclave.pub.asc")
	bundletest.WriteFile(t, keyring, []byte(bundletest.Armor(t, enclave)))
	path := fatChain(t, filepath.Join(work, "ok"), site, enclave, 60, 4<<20)
	if fi, _ := os.Stat(path); fi.Size() > 64<<20 {
		t.Fatalf("the bundle is %d bytes: the padding should compress", fi.Size())
	}
	out, code := runBounded(t, work, "verify", "--keyring", keyring, path)
	if code != 0 || !strings.Contains(out, "Chain of custody (2 hops") {
		t.Fatalf("verify (exit %d):\n%.2000s", code, out)
	}
	root := filepath.Join(work, "store")
	if out, code := runBounded(t, work, "import", "--keyring", keyring, "--store", root, path); code != 0 || !strings.Contains(out, "chain of custody: 60 hop(s)") {
		t.Fatalf("import (exit %d):\n%s", code, out)
	}

	over := fatChain(t, filepath.Join(work, "over"), site, enclave, 9, 60<<20)
	expectRefused(t, work, keyring, root, over, "manifests are over 536870912 bytes in all")
}
