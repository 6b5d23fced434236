package store_test

// ATTACK TESTS (atk-bundle review, issue 11): the store under a hostile
// local filesystem and interrupted imports. A FAILING test marks an open
// finding; a passing one shows an attack refused.

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/airgap/airgap/bundle/store"
)

// TestAttackCleanTmpChmodFollowsSymlink (FAILING, finding F): the clean-up of
// an interrupted import chmods every entry of STORE/tmp to 0755 before
// removing it, and os.Chmod follows symlinks. A symlink planted in tmp/ (by
// anyone who can write there: a shared group, a careless umask, an unpacked
// backup) makes the importing user — often root — make the link's target
// 0755 (here a 0600 secret becomes world-readable and executable).
func TestAttackCleanTmpChmodFollowsSymlink(t *testing.T) {
	f := newFixture(t)
	root := f.seededStore(t)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(root, "tmp", "import-planted")); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Import(root, bytes.NewReader(f.good), store.ImportOptions{Keyring: f.keyring}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(secret)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("a file outside the store, linked from STORE/tmp, is now mode %v (was 0600)", fi.Mode().Perm())
	}
}

// TestAttackInterruptedCommitServesOldIndex (passes): between "blobs renamed"
// and "index renamed" the visible index is the old one, byte for byte, and
// refers to no new blob; after a failure there the new blobs are removed.
func TestAttackInterruptedCommitServesOldIndex(t *testing.T) {
	f := newFixture(t)
	root := f.seededStore(t)
	old, err := os.ReadFile(filepath.Join(root, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var mid []byte
	defer store.SetTestHooks(nil, func() {
		mid, _ = os.ReadFile(filepath.Join(root, "index.json"))
		tmps, _ := filepath.Glob(filepath.Join(root, ".index.json.*"))
		for _, p := range tmps {
			os.Remove(p)
		}
	})()
	if _, err := store.Import(root, bytes.NewReader(f.good), store.ImportOptions{Keyring: f.keyring}); err == nil {
		t.Fatal("the import succeeded without its index")
	}
	if !bytes.Equal(mid, old) {
		t.Errorf("between placing blobs and committing, index.json changed")
	}
	for _, b := range f.manif.Blobs {
		if _, err := os.Stat(store.BlobPath(root, b.Digest)); err == nil {
			t.Errorf("blob %s placed by the failed import is still there", b.Digest.Short())
		}
	}
}

// TestAttackPlantedBlobTrustedBySize (FAILING, finding F'): haveBlob takes a
// blob as present when os.Stat (which follows symlinks) finds a regular file
// of the right size. A symlink planted in blobs/ under the digest of a
// module archive the bundle carries, pointing at other bytes of that size,
// is kept: the import succeeds, reads the bundle's verified bytes into
// io.Discard, and the store then serves the planted bytes under the digest.
func TestAttackPlantedBlobTrustedBySize(t *testing.T) {
	f := newFixture(t)
	root := f.seededStore(t)
	for _, b := range f.manif.Blobs {
		if b.Role != "module-archive" {
			continue
		}
		evil := filepath.Join(t.TempDir(), "evil")
		if err := os.WriteFile(evil, bytes.Repeat([]byte("X"), int(b.Size)), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(evil, store.BlobPath(root, b.Digest)); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Import(root, bytes.NewReader(f.good), store.ImportOptions{Keyring: f.keyring}); err != nil {
			t.Fatalf("import: %v", err)
		}
		got, _ := os.ReadFile(store.BlobPath(root, b.Digest))
		if bytes.Equal(got, bytes.Repeat([]byte("X"), int(b.Size))) {
			t.Errorf("after the import, blob %s (%s) is still the planted file", b.Digest.Short(), b.Role)
		}
		return
	}
	t.Fatal("no module archive in the fixture")
}

// TestAttackConcurrentImportsLocked (passes): a second import while one holds
// the store's lock fails at once with ErrLocked.
func TestAttackConcurrentImportsLocked(t *testing.T) {
	f := newFixture(t)
	root := f.seededStore(t)
	var second error
	defer store.SetTestHooks(func() {
		_, second = store.Import(root, bytes.NewReader(f.good), store.ImportOptions{Keyring: f.keyring})
	}, nil)()
	if _, err := store.Import(root, bytes.NewReader(f.good), store.ImportOptions{Keyring: f.keyring}); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(second, store.ErrLocked) {
		t.Errorf("a concurrent import: %v", second)
	}
}
