package store_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/verify"
)

// standardStore is the Standard set as a bundle signed by site, and where
// a store for it goes.
func standardStore(t *testing.T) (root string, data []byte, site *openpgp.Entity) {
	t.Helper()
	dir := t.TempDir()
	site = bundletest.Key(t, "site")
	var buf bytes.Buffer
	bundletest.Standard(t, dir, site).WriteBundle(t, &buf, site, bundle.CompressionAuto)
	return filepath.Join(dir, "store"), buf.Bytes(), site
}

// TestImportKeepsBundle: an import keeps the bundle's manifest and
// signature as they came and the key that verified them, records them in
// its history entry, and gc and prune keep them (they are the chain of
// custody an export from the store carries onwards) while removing what
// nothing else references.
func TestImportKeepsBundle(t *testing.T) {
	root, data, site := standardStore(t)
	res, err := store.Import(root, bytes.NewReader(data), store.ImportOptions{Keyring: openpgp.EntityList{site}})
	if err != nil {
		t.Fatal(err)
	}
	br, err := bundle.NewReader(bytes.NewReader(data), openpgp.EntityList{site})
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	inv, err := store.LoadInventory(root)
	if err != nil {
		t.Fatal(err)
	}
	e := inv.Imports[0]
	key, _ := verify.PublicArmor(site)
	for _, k := range []struct {
		d    verify.Digest
		want []byte
	}{{e.Bundle, br.ManifestBytes()}, {e.Signature, br.SignatureBytes()}, {e.SignerKey, []byte(key)}} {
		got, err := os.ReadFile(store.BlobPath(root, k.d))
		if err != nil || !bytes.Equal(got, k.want) {
			t.Errorf("kept blob %s: %v, %d bytes, want %d", k.d.Short(), err, len(got), len(k.want))
		}
	}
	if !e.Kept() || e.Bundle != res.Bundle || res.BlobsAdded != len(br.Manifest().Blobs) { // the kept three are not counted
		t.Errorf("entry %+v, result %+v", e, res)
	}
	kept := []verify.Digest{e.Bundle, e.Signature, e.SignerKey}

	// gc removes nothing; a prune of every version removes the catalog's
	// blobs and keeps the bundle's.
	if r, err := store.GC(root, store.GCOptions{}); err != nil || len(r.Blobs) != 0 {
		t.Fatalf("gc: %+v %v", r, err)
	}
	var all []string
	for _, p := range inv.Catalog.Providers {
		all = append(all, p.Addr()+"@"+p.Version)
	}
	for _, m := range inv.Catalog.Modules {
		all = append(all, m.Addr()+"@"+m.Version)
	}
	if _, err := store.Prune(root, store.PruneOptions{Versions: all}); err != nil {
		t.Fatal(err)
	}
	left, _ := os.ReadDir(filepath.Join(root, "blobs", "sha256"))
	if len(left) != len(kept) {
		t.Errorf("after pruning everything, %d blobs are left, want the %d kept of the bundle", len(left), len(kept))
	}
	for _, d := range kept {
		if _, err := os.Stat(store.BlobPath(root, d)); err != nil {
			t.Errorf("prune removed the kept %s", d.Short())
		}
	}
}

// TestImportAgainKeepsOldBundle: a store that imported a bundle before
// airgap kept manifests keeps it when the bundle is imported again,
// completing the history entry (no second entry, the catalog untouched);
// a third import changes nothing.
func TestImportAgainKeepsOldBundle(t *testing.T) {
	root, data, site := standardStore(t)
	opt := store.ImportOptions{Keyring: openpgp.EntityList{site}}
	if _, err := store.Import(root, bytes.NewReader(data), opt); err != nil {
		t.Fatal(err)
	}
	// As an older airgap left it: no kept blobs, none in the entry.
	ix, _, err := store.ReadInventory(root)
	if err != nil {
		t.Fatal(err)
	}
	e := &ix.Imports[0]
	for _, d := range []verify.Digest{e.Bundle, e.Signature, e.SignerKey} {
		os.Remove(store.BlobPath(root, d))
	}
	e.Signature, e.SignerKey = "", ""
	if err := store.WriteIndex(root, ix); err != nil {
		t.Fatal(err)
	}
	res, err := store.Import(root, bytes.NewReader(data), opt)
	if err != nil || !res.KeptCustody || res.Unchanged || len(res.Added) != 0 {
		t.Fatalf("import again: %+v %v", res, err)
	}
	ix, _, err = store.ReadInventory(root)
	if err != nil || len(ix.Imports) != 1 || !ix.Imports[0].Kept() {
		t.Fatalf("history after keeping: %+v %v", ix.Imports, err)
	}
	if _, err := os.Stat(store.BlobPath(root, ix.Imports[0].Bundle)); err != nil {
		t.Error(err)
	}
	res, err = store.Import(root, bytes.NewReader(data), opt)
	if err != nil || !res.Unchanged || res.KeptCustody {
		t.Fatalf("third import: %+v %v", res, err)
	}
}
