package store

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/airgap/airgap/verify"
)

const (
	indexName = "index.json"
	blobsDir  = "blobs/sha256"
	tmpDir    = "tmp"
	lockName  = "lock"
	serveName = "serve.lock"
	tlsDir    = "tls"
	stateDir  = "state"
)

func indexPath(root string) string { return filepath.Join(root, indexName) }
func blobDir(root string) string   { return filepath.Join(root, filepath.FromSlash(blobsDir)) }
func tmpPath(root string) string   { return filepath.Join(root, tmpDir) }
func lockPath(root string) string  { return filepath.Join(root, lockName) }
func servePath(root string) string { return filepath.Join(root, serveName) }

// BlobPath is where the blob with digest d lives.
func BlobPath(root string, d verify.Digest) string { return filepath.Join(blobDir(root), d.Hex()) }

// TLSDir is the directory the server keeps its certificates in.
func TLSDir(root string) string { return filepath.Join(root, tlsDir) }

// StateDir is the directory 'airgap serve' keeps its own state in, beside
// the store and shared by every replica serving it: each feature keeps a
// sub-directory of its own there (created mode 0700 by whoever writes it).
// Import, prune and gc never touch it.
func StateDir(root string) string { return filepath.Join(root, stateDir) }

// ensureLayout makes the store's directories (and any missing parents)
// and returns those it created, deepest first; isNew says the store's own
// directory was among them.
func ensureLayout(root string) (created []string, isNew bool, err error) {
	var missing []string // root and its missing parents, root first
	for d := filepath.Clean(root); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, false, fmt.Errorf("creating store: %w", err)
	}
	for _, d := range []string{filepath.Dir(blobDir(root)), blobDir(root), tmpPath(root)} {
		if _, err := os.Lstat(d); err == nil {
			continue
		}
		if err := os.Mkdir(d, 0o755); err != nil {
			return nil, false, fmt.Errorf("creating store: %w", err)
		}
		created = append([]string{d}, created...)
	}
	return append(created, missing...), len(missing) > 0, nil
}

// listBlobs lists the blobs in blobs/, sorted.
func listBlobs(root string) ([]verify.Digest, error) {
	ents, err := os.ReadDir(blobDir(root))
	if err != nil {
		return nil, err
	}
	var ds []verify.Digest
	for _, e := range ents {
		if verify.IsHex64(e.Name()) {
			ds = append(ds, verify.Digest("sha256:"+e.Name()))
		}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds, nil
}
