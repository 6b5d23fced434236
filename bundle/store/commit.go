package store

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// stage streams every carried blob into the staging directory (the bundle
// reader verifies each one's size and digest as it goes) and hands it to
// the checker, then finishes the checks. A blob the store already has is
// compared, as it streams by, with the store's file; a file that differs
// (planted or damaged under the digest) is replaced by the bundle's
// verified bytes at the commit (atomically), so it does not survive an
// import that carries the blob. Staged blobs are fsynced in the
// background (the syncer) and all of them before stage returns.
func (imp *importer) stage() (err error) {
	root, m := imp.root, imp.m
	if imp.stageDir, err = os.MkdirTemp(tmpPath(root), "import-"); err != nil {
		return err
	}
	imp.syncer = newSyncer()
	for {
		b, rd, err := imp.br.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if b.Role == dist.RoleSBOM { // read (the reader checks its digest), not kept
			n, err := io.Copy(io.Discard, rd)
			imp.res.BytesRead += n
			if err != nil {
				return err
			}
			continue
		}
		path := filepath.Join(imp.stageDir, b.Digest.Hex())
		var n int64
		same, had := false, haveBlob(root, b)
		if had {
			n, same, err = compareOrStage(BlobPath(root, b.Digest), path, rd, imp.syncer)
		} else {
			n, err = stageBlob(path, rd, imp.syncer)
		}
		imp.res.BytesRead += n
		if err != nil {
			return noSpace(root, err, fmt.Sprintf("staging blob %s (%s)", b.Digest.Short(), m.Describe(b.Digest)), imp.need)
		}
		switch {
		case same:
			imp.res.BlobsShared++
			path = BlobPath(root, b.Digest)
		case had:
			imp.res.BlobsShared++
			imp.refreshed = append(imp.refreshed, b)
		default:
			imp.staged = append(imp.staged, b)
			if imp.opt.Staged != nil {
				imp.opt.Staged(b.Digest, path)
			}
		}
		if err := imp.ck.Add(b, path); err != nil {
			return err
		}
	}
	if err := imp.keepBundle(); err != nil {
		return err
	}
	imp.checked, err = imp.ck.Finish()
	if imp.checked != nil {
		imp.res.ChainHops = imp.checked.Hops
	}
	if serr := imp.syncer.wait(); serr != nil && err == nil {
		err = noSpace(root, serr, "writing the staged blobs to disk", imp.need)
	}
	return err
}

// blobPath is where a blob of the bundle is now: staged, or in the store.
func (imp *importer) blobPath(d verify.Digest) (string, bool) {
	if _, ok := imp.sizes[d]; !ok {
		return "", false
	}
	if p := filepath.Join(imp.stageDir, d.Hex()); fileExists(p) {
		return p, true
	}
	return imp.storeFile(d)
}

func fileExists(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode().IsRegular()
}

// commit makes the checked bundle visible: the new index is written (not
// yet visible) first, so a full disk fails before anything is placed; then
// the blobs; then the index becomes visible. An import that changes
// nothing writes nothing (but still repairs blobs that differed).
func (imp *importer) commit() error {
	root, m, ix, res := imp.root, imp.m, imp.ix, imp.res
	res.TrustChanges = trustChanges(&ix.Catalog, SignersByVersion(ix.Signers), m, imp.checked)
	// What this bundle changes in entries the store has (gate results run
	// over them since), and what the entries a withdrawal drops were.
	updated := dist.EntryUpdates(&ix.Catalog, &m.Catalog)
	names := ix.Catalog.DescribeBlobs()
	added := ix.Catalog.Merge(&m.Catalog)
	prev := -1
	for i, e := range ix.Imports {
		if e.Bundle == res.Bundle {
			prev = i
		}
	}
	already := prev >= 0
	stamp := imp.now().UTC().Truncate(time.Second)
	res.Withdrew, res.Reinstated = applyWithdrawals(ix, m, res.Bundle, res.Signer, stamp)
	res.Revoked = newRevocations(ix, m, res.Bundle, stamp)
	noteUnreferenced(ix, names, " (withdrawn)")
	if len(imp.staged) == 0 && len(added) == 0 && len(updated) == 0 && len(res.Withdrew) == 0 && len(res.Reinstated) == 0 && len(res.TrustChanges) == 0 &&
		len(res.Revoked) == 0 && already && imp.policy.empty() {
		if e := &ix.Imports[prev]; !e.Kept() {
			// Imported by an airgap that did not keep bundles: keep this
			// copy now, so the store can carry its custody onwards.
			e.Signature, e.SignerKey, e.Custody = imp.kept.Signature, imp.kept.SignerKey, imp.kept.Custody
			res.KeptCustody = true
			return imp.swapIndex()
		}
		res.Unchanged = len(imp.refreshed) == 0
		if err := refresh(root, imp.stageDir, imp.refreshed); err != nil {
			return err
		}
		if len(imp.refreshed) > 0 {
			return syncDir(blobDir(root))
		}
		return nil
	}
	for _, b := range imp.staged {
		res.BlobsAdded++
		res.BytesAdded += b.Size
	}
	if added == nil {
		added = []string{}
	}
	res.Added, res.Updated = added, updated
	ix.Imports = append(ix.Imports, ImportEntry{
		Bundle: res.Bundle, Signer: res.Signer, Time: stamp, Tool: m.Tool,
		Delta: res.Delta, Added: added, BlobsAdded: res.BlobsAdded, BytesAdded: res.BytesAdded,
		Withdrew: res.Withdrew, Reinstated: res.Reinstated, TrustChanges: res.TrustChanges, Updated: updated,
		Signature: imp.kept.Signature, SignerKey: imp.kept.SignerKey, Custody: imp.kept.Custody,
	})
	tidyUnreferenced(root, ix)
	imp.policy.apply(ix)
	res.Approvals = ix.Imports[len(ix.Imports)-1].Approvals
	recordSigners(ix, m, imp.checked)
	backfillSigners(root, ix)
	if err := imp.stageKept(); err != nil {
		return err
	}
	return imp.swapIndex()
}

// stageKept stages the blobs the policies keep (approval files), each
// unless the store has it, to be placed with the bundle's blobs.
func (imp *importer) stageKept() error {
	for _, data := range imp.policy.keep {
		b := bundle.Blob{Digest: verify.DigestBytes(data), Size: int64(len(data)), Role: dist.RoleApproval}
		if haveBlob(imp.root, b) || imp.isStaged(b.Digest) {
			continue
		}
		if err := writeDurable(filepath.Join(imp.stageDir, b.Digest.Hex()), data); err != nil {
			return noSpace(imp.root, err, "staging an approval", imp.need)
		}
		imp.staged = append(imp.staged, b)
	}
	return nil
}

// writeDurable writes a small blob to a new file, read-only and synced.
func writeDurable(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o444)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// isStaged reports whether d is among the blobs this import staged (the
// bundle's, a kept approval, the bundle's own manifest, signature and key).
func (imp *importer) isStaged(d verify.Digest) bool {
	for _, bs := range [][]bundle.Blob{imp.staged, imp.custody} {
		for _, b := range bs {
			if b.Digest == d {
				return true
			}
		}
	}
	return false
}

// swapIndex writes the new index to a temporary file, places the staged
// blobs, then renames the index into place (each step synced).
func (imp *importer) swapIndex() error {
	root := imp.root
	data, err := encodeIndex(imp.ix)
	if err != nil {
		return err
	}
	if testHookBeforeIndex != nil {
		testHookBeforeIndex()
	}
	pending, err := prepareAtomic(indexPath(root), data, 0o644)
	if err != nil {
		return noSpace(root, err, "writing the store index", imp.need+int64(len(data)))
	}
	defer pending.abort()
	for _, b := range append(imp.staged, imp.custody...) {
		dst := BlobPath(root, b.Digest)
		if err := os.Rename(filepath.Join(imp.stageDir, b.Digest.Hex()), dst); err != nil {
			return fmt.Errorf("storing blob %s: %w", b.Digest.Short(), err)
		}
		imp.placed = append(imp.placed, dst)
	}
	if err := refresh(root, imp.stageDir, imp.refreshed); err != nil {
		return err
	}
	if err := syncDir(blobDir(root)); err != nil {
		return err
	}
	if testHookBeforeCommit != nil {
		testHookBeforeCommit()
	}
	if err := pending.commit(); err != nil {
		return fmt.Errorf("writing the store index: %w", err)
	}
	return nil
}

// refresh renames staged copies of blobs the store already had, whose
// files differed, over those files (the same digest, now the verified bytes:
// what the index says becomes true again). The caller syncs blobs/.
func refresh(root, stage string, bs []bundle.Blob) error {
	for _, b := range bs {
		if err := os.Rename(filepath.Join(stage, b.Digest.Hex()), BlobPath(root, b.Digest)); err != nil {
			return fmt.Errorf("replacing blob %s with the bundle's verified copy: %w", b.Digest.Short(), err)
		}
	}
	return nil
}

// Test hooks (set by the package's tests only): before the new index is written
// to its temporary file (every blob staged and checked), and before it is
// renamed into place (every new blob placed).
var testHookBeforeIndex, testHookBeforeCommit func()

// testHookAfterRoom, if set, runs when checkRoom found room (before
// staging).
var testHookAfterRoom func()

// unplace removes blobs an import placed before it failed, so that the store
// is as it was (they were new: no index refers to them).
func unplace(root string, placed []string) error {
	var failed []string
	for _, p := range placed {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			failed = append(failed, filepath.Base(p))
		}
	}
	if len(placed) > 0 {
		syncDir(blobDir(root))
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d blob(s) this import placed could not be removed (%s); no index refers to them, so nothing serves them\nthe store's index was not changed",
			len(failed), strings.Join(failed, ", "))
	}
	return nil
}

// compareOrStage reads rd (a verifying blob reader) and compares it with the
// store's file at have, which has its size. If they are the same it writes
// nothing; at the first difference it stages the blob at path (the equal
// prefix from have, the rest from rd) and reports same = false. Only one
// read of the store's file, no write, when they agree.
func compareOrStage(have, path string, rd io.Reader, s *syncer) (n int64, same bool, err error) {
	f, err := os.Open(have)
	if err != nil {
		n, err = stageBlob(path, rd, s)
		return n, false, err
	}
	defer f.Close()
	const chunk = 256 << 10
	a, b := make([]byte, chunk), make([]byte, chunk)
	for {
		k, rerr := io.ReadFull(rd, a)
		if k > 0 {
			if _, ferr := io.ReadFull(f, b[:k]); ferr != nil || !bytes.Equal(a[:k], b[:k]) {
				m, err := stageBlob(path, io.MultiReader(io.NewSectionReader(f, 0, n), bytes.NewReader(a[:k]), rd), s)
				return m, false, err
			}
			n += int64(k)
		}
		switch rerr {
		case nil:
		case io.EOF, io.ErrUnexpectedEOF:
			return n, true, nil
		default:
			return n, false, rerr
		}
	}
}

// stageBlob writes rd (a verifying blob reader) to path through 1 MiB
// writes and hands the file to s, which makes it durable and read-only.
func stageBlob(path string, rd io.Reader, s *syncer) (int64, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, err
	}
	n, err := bundle.Copy(f, rd)
	if err != nil {
		f.Close()
		return n, err
	}
	return n, s.add(f)
}

// haveBlob reports whether the store already holds b: a regular file (not a
// link, which is not followed) of its size. Blobs are verified when they
// enter the store and are read-only after, so the hash is not computed
// again; a blob the bundle carries replaces the file anyway (see Import), so
// this decides only whether a delta's omitted blob is present.
func haveBlob(root string, b bundle.Blob) bool {
	fi, err := os.Lstat(BlobPath(root, b.Digest))
	return err == nil && fi.Mode().IsRegular() && fi.Size() == b.Size
}
