package store

import (
	"path/filepath"

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
