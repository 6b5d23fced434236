package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/osfile"
	"github.com/airgap/airgap/verify"
)

// IndexFormat is the version of index.json this package writes. It reads
// every format from minIndexFormat up to it, and rewrites an older index in
// this format at the next change (an import, prune or gc), so an older airgap
// then refuses the store instead of dropping what it does not know.
//
// Format 1: catalog, imports, withdrawn, maintenance, keys.
// Format 2: format 1 plus optional fields, each documented on Index (and on
// the catalog's types: a provider version's mirror_hashes_only, mirror and
// its packages' mirror_hashes, see dist.ProviderVersion).
// Format 3: format 2 plus the documentation of the catalog's entries (a
// provider version's docs record and a module version's docs digest, see
// dist.ProviderDocs; their blobs are kept by gc while referenced, like
// every blob the catalog lists), and optional fields of trust: each import's station approvals and trust changes
// (ImportEntry.Approvals, ImportEntry.TrustChanges), who signed each
// provider version's SHA256SUMS (Signers), the revocations the store has
// seen (RevokedKeys), key retirements and revocations in the history
// (KeyEvents) and a pinned key's retirement (dist.KeyPin.Retired). A blob
// of role approval (dist.RoleApproval) is referenced by an import's
// approvals (Blobs).
// Also in format 3: unreferenced (what blobs no entry references any more
// were) and an import's updated; an import entry's
// signature, signer_key and custody (the kept manifests).
const IndexFormat = 3

// minIndexFormat is the oldest index.json format this package reads.
const minIndexFormat = 1

// Index is the content of index.json.
type Index struct {
	Format  int           `json:"format"`
	Catalog dist.Catalog  `json:"catalog"`
	Imports []ImportEntry `json:"imports"`
	// Withdrawn lists the versions bundles withdrew (and no later bundle
	// reinstated), sorted by key; they are not in Catalog.
	Withdrawn []Withdrawn `json:"withdrawn,omitempty"`
	// Maintenance is the prune and gc history (prune and gc), newest last.
	Maintenance []MaintenanceEntry `json:"maintenance,omitempty"`
	// PublisherKeys is the publisher-key pin table: for each
	// provider namespace, sorted, the keys its providers' SHA256SUMS have
	// been accepted with, oldest first. Format 2; absent until an import
	// by an airgap that pins.
	PublisherKeys []dist.NamespaceKeys `json:"publisher_keys,omitempty"`
	// Signers says, per provider version (sorted by its
	// dist.ProviderVersion.Key), who signed the SHA256SUMS the store
	// serves for it (format 3; recorded by the import that brought the
	// signature, and for older entries by the next import). An entry whose
	// Signature is not the version's ShasumsSig is stale and not used.
	Signers []VersionSigner `json:"signers,omitempty"`
	// RevokedKeys are the key revocations the store has seen, in a
	// bundle's carried keys or given to 'airgap keys revoke' (format 3),
	// sorted by fingerprint: such a key signs nothing new, even when a
	// later bundle carries it with its revocation stripped.
	RevokedKeys []RevokedKey `json:"revoked_keys,omitempty"`
	// KeyEvents is the history of key retirements and revocations
	// (format 3), oldest first.
	KeyEvents []KeyEvent `json:"key_events,omitempty"`
	// Unreferenced says what each blob no catalog entry references any
	// more was (format 3), so that gc can name what it deletes: recorded
	// when a withdrawal or a prune drops the entries that used it; an
	// entry goes when its blob is deleted or referenced again.
	Unreferenced map[verify.Digest]string `json:"unreferenced,omitempty"`
	// Keys holds each armored signing key once, by the digest of its text;
	// in the file, a provider's ascii_armor is "@" + that digest. Read and
	// WriteIndex resolve and make the references; in memory, Keys is nil.
	Keys map[string]string `json:"keys,omitempty"`
}

// ImportEntry is one bundle's import in the store's history.
type ImportEntry struct {
	Bundle     verify.Digest `json:"bundle"` // the manifest digest
	Signer     verify.Signer `json:"signer"`
	Time       time.Time     `json:"time"`
	Tool       string        `json:"tool,omitempty"`
	Delta      bool          `json:"delta,omitempty"`
	Added      []string      `json:"added"`
	BlobsAdded int           `json:"blobs_added"`
	BytesAdded int64         `json:"bytes_added"`
	// Withdrew and Reinstated list what the bundle's withdraw and
	// reinstate blocks changed.
	Withdrew   []string `json:"withdrew,omitempty"`
	Reinstated []string `json:"reinstated,omitempty"`
	// Approvals are the station approvals the import accepted (format 3),
	// each kept as a blob of role approval (its file, byte for byte).
	Approvals []ApprovalRecord `json:"approvals,omitempty"`
	// TrustChanges are the versions the store already served whose
	// SHA256SUMS or signature the import replaced (format 3).
	TrustChanges []TrustChange `json:"trust_changes,omitempty"`
	// Updated lists what the bundle changed in entries the store already
	// had (format 3): gate results a later export ran over them
	// (dist.EntryUpdates).
	Updated []string `json:"updated,omitempty"`
	// Signature and SignerKey (format 3) are the blobs that keep the
	// bundle's manifest.json.sig as it came and the armored public key the
	// import checked it with; its manifest.json is kept as the blob named
	// Bundle. Custody lists the blobs of the bundle's own chain of custody
	// (bundle.Hop: upstream manifests, signatures and keys) it carried.
	// All of them stay as long as the entry does (gc and prune keep them:
	// Index.Blobs), so that 'airgap export --from-store' can carry
	// the chain onwards. Empty for imports by an airgap that
	// did not keep them.
	Signature verify.Digest   `json:"signature,omitempty"`
	SignerKey verify.Digest   `json:"signer_key,omitempty"`
	Custody   []verify.Digest `json:"custody,omitempty"`
}

// Blobs is every blob the index refers to: the catalog's, and of the
// import history the approvals and the kept bundles and chains of custody
// (gc and prune keep these).
func (ix *Index) Blobs() map[verify.Digest]string {
	used := ix.Catalog.Blobs()
	for _, e := range ix.Imports {
		for _, a := range e.Approvals {
			used[a.Blob] = dist.RoleApproval
			if a.StationKey != "" {
				used[a.StationKey] = dist.RoleBundleKey
			}
		}
	}
	for d, role := range ix.custodyBlobs() {
		if _, ok := used[d]; !ok {
			used[d] = role
		}
	}
	return used
}

// Kept reports whether the store kept the bundle's manifest, signature and
// key (see Signature).
func (e ImportEntry) Kept() bool { return e.Signature != "" && e.SignerKey != "" }

// HistoryLine splits a line of ImportEntry.Added, Withdrew or Reinstated
// ("provider ADDR VERSION ...", "module ADDR VERSION ...") into the
// entry's kind, address and version; ok is false for a line of another
// shape. Everything that reads the history by address (the catalog page's
// scope, prune's last-imported times) reads it through this.
func HistoryLine(line string) (kind, addr, version string, ok bool) {
	f := strings.Fields(line)
	if len(f) < 3 {
		return "", "", "", false
	}
	return f[0], f[1], f[2], true
}

func readIndex(root string) (*Index, error) {
	data, err := os.ReadFile(indexPath(root))
	if os.IsNotExist(err) {
		return &Index{Format: IndexFormat, Catalog: dist.Catalog{Providers: []dist.ProviderVersion{}, Modules: []dist.ModuleVersion{}}}, nil
	}
	if err != nil {
		return nil, err
	}
	var ix Index
	if err := json.Unmarshal(data, &ix); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, indexPath(root), err)
	}
	if ix.Format > IndexFormat {
		return nil, fmt.Errorf("%w: %s has format %d, this airgap reads up to %d\nhint: upgrade airgap on this side", ErrCorrupt, indexPath(root), ix.Format, IndexFormat)
	}
	if ix.Format < minIndexFormat {
		return nil, fmt.Errorf("%w: %s has format %d, want %d to %d", ErrCorrupt, indexPath(root), ix.Format, minIndexFormat, IndexFormat)
	}
	for i := range ix.Catalog.Providers {
		for j, k := range ix.Catalog.Providers[i].SigningKeys {
			ref, ok := strings.CutPrefix(k.ASCIIArmor, "@")
			if !ok {
				continue
			}
			armor, ok := ix.Keys[ref]
			if !ok {
				return nil, fmt.Errorf("%w: %s: signing key %s of %s is not in its key table", ErrCorrupt, indexPath(root), k.KeyID, ix.Catalog.Providers[i])
			}
			ix.Catalog.Providers[i].SigningKeys[j].ASCIIArmor = armor
		}
	}
	ix.Keys = nil
	return &ix, nil
}

// WriteIndex replaces index.json atomically and durably, storing each
// signing key once. ix is not changed. (Import uses it; tools that build
// synthetic stores may too.)
func WriteIndex(root string, ix *Index) error {
	data, err := encodeIndex(ix)
	if err != nil {
		return err
	}
	return writeFileAtomic(indexPath(root), data, 0o644)
}

// encodeIndex is the file form of ix, each signing key stored once.
func encodeIndex(ix *Index) ([]byte, error) {
	out := *ix
	out.Format = IndexFormat // an older index is rewritten in this format
	out.Keys = map[string]string{}
	out.Catalog.Providers = make([]dist.ProviderVersion, len(ix.Catalog.Providers))
	for i, p := range ix.Catalog.Providers {
		keys := make([]dist.SigningKey, len(p.SigningKeys))
		for j, k := range p.SigningKeys {
			d := string(verify.DigestBytes([]byte(k.ASCIIArmor)))
			out.Keys[d] = k.ASCIIArmor
			k.ASCIIArmor = "@" + d
			keys[j] = k
		}
		p.SigningKeys = keys
		out.Catalog.Providers[i] = p
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", " ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&out); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// writeFileAtomic writes data to path through a temporary file in the same
// directory: write, fsync, rename, fsync the directory.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	p, err := prepareAtomic(path, data, mode)
	if err != nil {
		return err
	}
	defer p.abort()
	return p.commit()
}

// pendingFile is a durable temporary file (named ".<name>.*" next to its
// target, so the next import removes it if the process dies) waiting to be
// renamed over its target.
type pendingFile struct {
	tmp, path string
	done      bool
}

// prepareAtomic writes data to a temporary file next to path and fsyncs it;
// nothing is visible at path until commit.
func prepareAtomic(path string, data []byte, mode os.FileMode) (*pendingFile, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return nil, err
	}
	p := &pendingFile{tmp: f.Name(), path: path}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(p.tmp)
		return nil, err
	}
	return p, nil
}

// commit renames the file into place and fsyncs the directory.
func (p *pendingFile) commit() error {
	if err := os.Rename(p.tmp, p.path); err != nil {
		return err
	}
	p.done = true
	return syncDir(filepath.Dir(p.path))
}

// abort removes the temporary file unless it was committed.
func (p *pendingFile) abort() {
	if !p.done {
		os.Remove(p.tmp)
	}
}

func syncDir(dir string) error { return osfile.SyncDir(dir) }
