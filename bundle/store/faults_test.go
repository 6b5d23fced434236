package store_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/verify"
)

// TestImportRemovesWhatItPlaced: a failure after the new blobs were placed
// (here the index's temporary file vanishes before it is renamed into place)
// removes them again: the store tree is byte for byte as it was, and the
// message says so.
func TestImportRemovesWhatItPlaced(t *testing.T) {
	f := newFixture(t)
	root := f.seededStore(t)
	before := snapshot(t, root)
	defer store.SetTestHooks(nil, func() {
		tmps, _ := filepath.Glob(filepath.Join(root, ".index.json.*"))
		if len(tmps) != 1 {
			t.Errorf("%d temporary index files at commit time, want 1", len(tmps))
		}
		for _, p := range tmps {
			os.Remove(p)
		}
	})()
	_, err := store.Import(root, bytes.NewReader(f.good), store.ImportOptions{Keyring: f.keyring})
	if err == nil || !strings.Contains(err.Error(), "writing the store index") || !strings.Contains(err.Error(), "blob(s) this import had placed were removed") {
		t.Fatalf("a failure after placing blobs: %v", err)
	}
	sameTree(t, before, snapshot(t, root))
}

// TestLeftoverIndexTempCleaned: a kill while the index was written leaves a
// .index.json.* file; the next import removes it.
func TestLeftoverIndexTempCleaned(t *testing.T) {
	f := newFixture(t)
	root := f.seededStore(t)
	left := filepath.Join(root, ".index.json.123456")
	if err := os.WriteFile(left, []byte(`{"format": 1, "catal`), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := store.Import(root, bytes.NewReader(f.good), store.ImportOptions{Keyring: f.keyring})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("the leftover temporary index is still there: %v", err)
	}
	if res.Cleaned != 1 {
		t.Errorf("cleaned %d leftovers, want 1", res.Cleaned)
	}
}

// TestCleanTmpDoesNotFollowLinks: the clean-up of an interrupted import
// removes a symlink planted in STORE/tmp (by anyone who can write there: a
// shared group, a careless umask, an unpacked backup) without touching its
// target: a 0600 file outside the store stays 0600 and in place.
func TestCleanTmpDoesNotFollowLinks(t *testing.T) {
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
	if _, err := os.Lstat(filepath.Join(root, "tmp", "import-planted")); !os.IsNotExist(err) {
		t.Errorf("the planted link is still in tmp/: %v", err)
	}
}

// TestInterruptedCommitServesOldIndex: between "blobs renamed"
// and "index renamed" the visible index is the old one, byte for byte, and
// refers to no new blob; after a failure there the new blobs are removed.
func TestInterruptedCommitServesOldIndex(t *testing.T) {
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

// TestPlantedBlobReplaced: a file planted in blobs/ under the digest of a
// blob the bundle carries, with its size but other bytes — a symlink to
// them, or a regular file — does not survive the import: the store's file
// is then the bundle's verified bytes (a regular file), and the link's
// target is untouched.
func TestPlantedBlobReplaced(t *testing.T) {
	f := newFixture(t)
	for _, link := range []bool{true, false} {
		root := f.seededStore(t)
		for _, b := range f.manif.Blobs {
			if b.Role != "module-archive" {
				continue
			}
			planted := bytes.Repeat([]byte("X"), int(b.Size))
			evil := filepath.Join(t.TempDir(), "evil")
			if err := os.WriteFile(evil, planted, 0o644); err != nil {
				t.Fatal(err)
			}
			if link {
				if err := os.Symlink(evil, store.BlobPath(root, b.Digest)); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(store.BlobPath(root, b.Digest), planted, 0o444); err != nil {
				t.Fatal(err)
			}
			if _, err := store.Import(root, bytes.NewReader(f.good), store.ImportOptions{Keyring: f.keyring}); err != nil {
				t.Fatalf("import (planted link %v): %v", link, err)
			}
			fi, err := os.Lstat(store.BlobPath(root, b.Digest))
			got, _ := os.ReadFile(store.BlobPath(root, b.Digest))
			if err != nil || !fi.Mode().IsRegular() || bytes.Equal(got, planted) || verify.DigestBytes(got) != b.Digest {
				t.Errorf("after the import, blob %s (planted link %v) is not the bundle's bytes: %v %v", b.Digest.Short(), link, fi.Mode(), err)
			}
			if after, _ := os.ReadFile(evil); !bytes.Equal(after, planted) {
				t.Errorf("the planted link's target was changed")
			}
			break
		}
	}
}

// TestConcurrentImportsLocked: a second import while one holds
// the store's lock fails at once with ErrLocked.
func TestConcurrentImportsLocked(t *testing.T) {
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
