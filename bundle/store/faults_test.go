package store_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/bundle/store"
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
