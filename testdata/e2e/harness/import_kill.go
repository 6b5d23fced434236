package harness

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/store"
)

// CheckConsistent: the index parses and every blob it refers to is present,
// read-only and holds the right bytes.
func CheckConsistent(t *testing.T, root string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "index.json"))
	if err != nil {
		t.Fatalf("index: %v", err)
	}
	var ix store.Index
	if err := json.Unmarshal(b, &ix); err != nil {
		t.Fatalf("index is not valid JSON after a kill: %v", err)
	}
	n := 0
	for d := range ix.Catalog.Blobs() {
		p := store.BlobPath(root, d)
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatalf("the index refers to a missing blob %s", d.Short())
		}
		if fi.Mode().Perm() != 0o444 {
			t.Fatalf("blob %s mode %v", d.Short(), fi.Mode())
		}
		if got := bundletest.FileDigest(t, p); got != d {
			t.Fatalf("blob %s holds %s", d.Short(), got)
		}
		n++
	}
	return n
}
