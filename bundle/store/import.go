package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/approval"
	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// ImportOptions configure Import.
type ImportOptions struct {
	Keyring openpgp.EntityList
	// Wait for another import to finish instead of failing with ErrLocked.
	Wait bool
	// Now stamps the history entry; nil means time.Now.
	Now func() time.Time
	// Policies are the site's import-time rules (Policy), run in order
	// after the bundle has been checked and before anything is committed,
	// after the import's own (CatalogRules).
	Policies []Policy
	// Approvals are the station approval files that came with the bundle
	// (an Approvals policy checks them).
	Approvals []approval.File
}

// ImportResult says what an import did.
type ImportResult struct {
	Bundle      verify.Digest
	Signer      verify.Signer
	Delta       bool
	Unchanged   bool // the store already had everything; nothing was written
	Added       []string
	BlobsAdded  int
	BytesAdded  int64
	BlobsShared int // blobs the store already had
	BytesRead   int64
	// Cleaned and CleanedBytes: the temporary files an earlier, interrupted
	// import left, removed before this one began.
	Cleaned      int
	CleanedBytes int64
	// Created is true when this import created the store.
	Created bool
	// KeptCustody: the store had imported the bundle before airgap kept
	// bundles' signed manifests; this import kept them.
	KeptCustody bool
	Withdrew    []string
	Reinstated  []string
	// Updated: what the bundle changed in entries the store already had
	// (dist.EntryUpdates: gate results run over them since).
	Updated []string
	// PinnedKeys: the publisher keys a KeyPins policy pinned (filled by
	// the caller from KeyPins.Decisions, see PinnedBy).
	PinnedKeys []PinnedKey
	// RequiredGates: the gates a RequireGates policy held every entry to
	// (GateRequirement.String; filled by the caller).
	RequiredGates []string
	// ChainHops: the hops of the bundle's chain of custody whose
	// signatures were checked again; ChainKeyring: the chain policy's
	// keyring that trusted each (filled by the caller), if any.
	ChainHops    int
	ChainKeyring string
	// Approvals: the station approvals the import accepted and recorded;
	// TrustChanges: versions the store had whose SHA256SUMS or signature
	// it replaced; Revoked: key revocations it saw for the first time (in
	// the bundle's carried keys) and now remembers.
	Approvals    []ApprovalRecord
	TrustChanges []TrustChange
	Revoked      []RevokedKey
}

// PinnedBy lists the keys the decisions of a committed import pinned.
func PinnedBy(ds []KeyDecision) []PinnedKey {
	var out []PinnedKey
	seen := map[string]bool{}
	for _, d := range ds {
		if d.Pin == nil || seen[d.Namespace+" "+d.Pin.Fingerprint] {
			continue
		}
		seen[d.Namespace+" "+d.Pin.Fingerprint] = true
		out = append(out, PinnedKey{Namespace: d.Namespace, KeyPin: *d.Pin})
	}
	return out
}

// Import reads a bundle from r into the store at root (created if absent).
// See the package doc for its guarantees. It runs in phases, each a method
// of importer below, so that the trust path reads top to bottom:
//
//  1. open:   lay out the store, take its lock, clean what a killed import left;
//  2. read:   the bundle's signature (bundle.NewReader) and the store's index;
//  3. check:  before any blob is read, the manifest's consistency
//     (check.New runs check.Manifest), that a delta's
//     omitted blobs are here, and that the new blobs fit on the disk;
//  4. stage:  every blob streamed into tmp/ and hashed while it is written;
//     check.Checker checks every SHA256SUMS signature against the carried
//     keys (none by a key of opt.Keyring unless marked as a site
//     re-signature), every package against its SHA256SUMS, every h1
//     against the zip and every module zip against its archive;
//  5. policy: the import's rules (CatalogRules: withdrawals, and that a
//     version never changes, dist.Catalog.CheckMerge) and the site's
//     (opt.Policies) over the checked bundle; every rule runs, and a
//     refusal names every entry refused and why (RefusedError), as
//     'verify --against' forecasts it (a bundle that will be refused is
//     still read to its end, so that the refusal is complete);
//  6. commit: the new index to a temporary file, the blobs into blobs/,
//     then the index into place;
//  7. clean:  on any failure, the blobs this import placed are removed and
//     the error says whether the store changed; tmp/ is emptied either way
//     (and a store this import created is removed again).
//
// A blob the store already has is compared with the bundle's verified bytes
// and replaced if it differs.
func Import(root string, r io.Reader, opt ImportOptions) (res *ImportResult, err error) {
	return ImportContext(context.Background(), root, r, opt)
}

// ImportContext is Import, stopped when ctx is done (Ctrl-C): every phase
// before the commit ends at its next read or blob, fails with
// ErrInterrupted, and leaves the store as it was with this import's
// temporary files removed. Once the commit has begun it is finished (it
// takes milliseconds and is atomic either way).
func ImportContext(ctx context.Context, root string, r io.Reader, opt ImportOptions) (res *ImportResult, err error) {
	imp, err := openImport(ctx, root, opt)
	if err != nil {
		return nil, fmt.Errorf("%w\nthe store was not changed", err)
	}
	defer func() { err = imp.close(err) }()
	if err := imp.read(dist.ContextReader(ctx, r)); err != nil {
		return nil, imp.interrupted(err)
	}
	if err := imp.check(); err != nil {
		return nil, imp.interrupted(err)
	}
	if err := imp.stage(); err != nil {
		return nil, imp.interrupted(err)
	}
	if err := imp.policies(); err != nil {
		return nil, imp.interrupted(err)
	}
	if err := ctx.Err(); err != nil { // the last moment to stop: a commit is not interrupted
		return nil, imp.interrupted(err)
	}
	if err := imp.commit(); err != nil {
		return nil, err
	}
	return imp.res, nil
}

// interrupted turns the error of a phase that ctx stopped into
// ErrInterrupted, saying how far the import had come.
func (imp *importer) interrupted(err error) error {
	if imp.ctx.Err() == nil {
		return err
	}
	return fmt.Errorf("%w, after %s of blobs had been read and checked (%d of %d new blobs staged)",
		ErrInterrupted, human(imp.res.BytesRead), len(imp.staged), imp.newBlobs)
}

// importer is one import in progress: what each phase learns, for the next.
type importer struct {
	ctx     context.Context
	root    string
	opt     ImportOptions
	unlock  func()
	res     *ImportResult
	created []string // directories openImport created, deepest first
	lockNew bool     // and the lock file, if it was not there

	br       *bundle.Reader
	m        *bundle.Manifest
	ix       *Index
	sizes    map[verify.Digest]int64 // every blob the manifest lists
	ck       *check.Checker
	need     int64 // bytes of new blobs, for a disk-full message
	newBlobs int   // how many, for an interruption's message

	stageDir  string
	syncer    *syncer       // fsyncs staged blobs off the stream
	staged    []bundle.Blob // new blobs, in stageDir
	refreshed []bundle.Blob // blobs the store had, with other bytes: replaced at the commit
	checked   *check.Result
	policy    PolicyResult  // what the policies record in the new index
	placed    []string      // blobs renamed into blobs/ by this import
	custody   []bundle.Blob // the bundle's manifest, signature and key, staged
	kept      ImportEntry   // what the history entry records of them
}

// openImport lays out the store (creating it if need be), takes its lock
// and removes what an interrupted import left in tmp/.
func openImport(ctx context.Context, root string, opt ImportOptions) (*importer, error) {
	created, isNew, err := ensureLayout(root)
	if err != nil {
		return nil, err
	}
	imp := &importer{ctx: ctx, root: root, opt: opt, res: &ImportResult{Created: isNew}, created: created}
	if _, err := os.Lstat(lockPath(root)); os.IsNotExist(err) {
		imp.lockNew = true
	}
	imp.unlock, err = lockStore(ctx, root, opt.Wait)
	if err != nil {
		imp.removeCreated()
		switch {
		case errors.Is(err, ErrLocked):
			return nil, fmt.Errorf("%w\nhint: wait for it to finish, or use --wait", err)
		case ctx.Err() != nil:
			return nil, fmt.Errorf("%w while waiting for the store lock", ErrInterrupted)
		}
		return nil, fmt.Errorf("locking the store: %w", err)
	}
	if imp.res.Cleaned, imp.res.CleanedBytes, err = cleanTmp(root, false); err != nil {
		imp.unlock()
		return nil, fmt.Errorf("cleaning leftovers of an earlier import: %w", err)
	}
	return imp, nil
}

// close ends the import: on failure it removes the blobs this import
// placed (and the store, if this import created it) and says whether the
// store changed; either way it stops the checker, removes the staging
// directory and releases the lock. A disk-full error is given the free
// space measured after that cleanup.
func (imp *importer) close(err error) error {
	if imp.ck != nil {
		imp.ck.Close()
	}
	if imp.syncer != nil {
		imp.syncer.wait()
	}
	var tmpErr error
	if imp.stageDir != "" {
		tmpErr = os.RemoveAll(imp.stageDir)
	}
	if imp.br != nil {
		imp.br.Close()
	}
	if err == nil {
		imp.unlock()
		return nil
	}
	rerr := unplace(imp.root, imp.placed)
	if rerr == nil && tmpErr == nil {
		imp.removeCreated() // before unlock: nobody may use the half-made store meanwhile
	}
	imp.unlock()
	var ns *noSpaceError
	if errors.As(err, &ns) {
		ns.free, ns.freeKnown = bundle.FreeBytes(existingDir(imp.root))
	}
	switch {
	case rerr != nil:
		err = fmt.Errorf("%w\n%v", err, rerr)
	case len(imp.placed) > 0:
		err = fmt.Errorf("%w\nthe %d blob(s) this import had placed were removed; the store was not changed", err, len(imp.placed))
	default:
		err = fmt.Errorf("%w\nthe store was not changed", err)
	}
	if tmpErr != nil {
		return fmt.Errorf("%w\nits temporary files could not all be removed (%v); the next import or 'airgap gc' removes them", err, tmpErr)
	}
	if imp.stageDir != "" {
		return fmt.Errorf("%w; the import's temporary files were removed", err)
	}
	return err
}

// existingDir is dir or its nearest parent that exists.
func existingDir(dir string) string {
	d := filepath.Clean(dir)
	for {
		if _, err := os.Stat(d); err == nil || filepath.Dir(d) == d {
			return d
		}
		d = filepath.Dir(d)
	}
}

// removeCreated removes what openImport created (empty directories and
// the lock file), so that a failed first import leaves nothing behind.
// Only empty directories are removed. (An import waiting for the lock file
// it removes locks it again: see lockStore.)
func (imp *importer) removeCreated() {
	if imp.lockNew {
		os.Remove(lockPath(imp.root))
	}
	for _, p := range imp.created {
		os.Remove(p)
	}
}

// read checks the bundle's signature (bundle.NewReader refuses a bundle
// not signed by a key of the keyring before it hands out anything) and reads
// the store's index.
func (imp *importer) read(r io.Reader) error {
	br, err := bundle.NewReader(r, imp.opt.Keyring)
	if err != nil {
		return err
	}
	imp.br = br
	imp.m = br.Manifest()
	imp.res.Bundle, imp.res.Signer, imp.res.Delta = br.ID(), br.Signer(), imp.m.Delta != nil
	imp.ix, err = readIndex(imp.root)
	return err
}

// check decides what must be decided from the signed manifest and the
// store before any blob is read: the manifest's consistency, and that a
// delta's omitted blobs are all here. What the store's rules say of the
// bundle (withdrawals, conflicts, the site's policies) is decided once it
// has been checked in full (policies), so that a refusal names everything.
func (imp *importer) check() error {
	m, root := imp.m, imp.root
	imp.sizes = make(map[verify.Digest]int64, len(m.Blobs))
	for _, b := range m.Blobs {
		imp.sizes[b.Digest] = b.Size
	}
	known := map[verify.Digest]dist.Package{}
	for _, p := range imp.ix.Catalog.Providers {
		for _, pk := range p.Packages {
			known[pk.Digest] = pk
		}
	}
	ck, err := check.New(m, check.Options{
		Signer:   imp.res.Signer,
		SiteKeys: imp.opt.Keyring,
		SignedAt: imp.br.SignedAt(),
		Now:      imp.now(),
		Have: func(d verify.Digest) (string, bool) {
			return BlobPath(root, d), haveBlob(root, bundle.Blob{Digest: d, Size: imp.sizes[d]})
		},
		// A package the store has, with the same h1 and build
		// information, was checked when it was imported.
		Known: func(d verify.Digest, h1 string, bi verify.Digest) bool {
			pk, ok := known[d]
			return ok && pk.H1 == h1 && pk.BuildInfo == bi
		},
	})
	if err != nil {
		return err
	}
	imp.ck = ck
	if err := imp.checkOmitted(); err != nil {
		return err
	}
	return imp.checkRoom()
}

// checkRoom refuses, before anything is staged, an import whose new blobs
// do not fit in what is free on the store's disk. The sizes are the signed
// manifest's, and the bundle reader holds every blob to its stated size,
// so a small bundle that states a huge, highly compressible blob (zstd
// packs zeros about 32,000:1) is refused here instead of filling the disk
// while it is staged. The index needs little beyond it; a disk that
// another writer fills meanwhile still fails cleanly at staging (ENOSPC).
func (imp *importer) checkRoom() error {
	free, ok := bundle.FreeBytes(tmpPath(imp.root))
	if !ok || imp.need <= free {
		if testHookAfterRoom != nil {
			testHookAfterRoom()
		}
		return nil
	}
	return &noSpaceError{err: errNoRoom, need: imp.need}
}

// errNoRoom is what checkRoom found: the new blobs would not fit.
var errNoRoom = errors.New("the bundle's new blobs do not fit on the disk holding the store (nothing was staged)")

// checkOmitted makes sure a delta finds every omitted blob here, and counts
// the bytes of new blobs (for checkRoom and a disk-full message).
func (imp *importer) checkOmitted() error {
	m := imp.m
	var missing []string
	for _, b := range m.Blobs {
		switch {
		case b.Role == dist.RoleSBOM:
			// Not kept: the consistency check compares its digest with
			// the SBOM of what the bundle carries; the store's SBOM is
			// made from the catalog ('airgap inventory --sbom').
		case b.Omitted && !haveBlob(imp.root, b):
			missing = append(missing, fmt.Sprintf("%s (%s, %s)", b.Digest.Short(), m.Describe(b.Digest), b.Role))
		case !b.Omitted && !haveBlob(imp.root, b):
			imp.need += b.Size
			imp.newBlobs++
		}
	}
	if len(missing) == 0 {
		return nil
	}
	hint := "import the base bundle first"
	if len(m.Delta.BaseBundles) > 0 {
		hint = "import the base bundle first: " + strings.Join(m.Delta.BaseBundles, ", ")
	}
	return fmt.Errorf("%w: this delta bundle (base %s) needs %d blob(s) this store lacks: %s\nhint: %s",
		ErrBlobMissing, m.Delta.Base, len(missing), strings.Join(missing, "; "), hint)
}

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

// policies runs the import's rules and the site's over the checked
// bundle; the import fails with every refusal they made.
func (imp *importer) policies() error {
	in := &PolicyInput{
		Root: imp.root, Manifest: imp.m, Bundle: imp.res.Bundle, Signer: imp.res.Signer,
		Index: imp.ix, Checked: imp.checked, Now: imp.now(), Approvals: imp.opt.Approvals, SiteKeys: imp.opt.Keyring,
		BlobPath: imp.blobPath,
	}
	var err error
	if in.History, in.Seeded, err = History(imp.root, imp.ix); err != nil {
		return err
	}
	for _, p := range append(CatalogRules(), imp.opt.Policies...) {
		if err := p.Check(in, &imp.policy); err != nil {
			return err
		}
	}
	return imp.policy.Err()
}

// blobPath is where a blob of the bundle is now: staged, or in the store.
func (imp *importer) blobPath(d verify.Digest) (string, bool) {
	if _, ok := imp.sizes[d]; !ok {
		return "", false
	}
	if p := filepath.Join(imp.stageDir, d.Hex()); fileExists(p) {
		return p, true
	}
	return BlobPath(imp.root, d), haveBlob(imp.root, bundle.Blob{Digest: d, Size: imp.sizes[d]})
}

func fileExists(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode().IsRegular()
}

func (imp *importer) now() time.Time {
	if imp.opt.Now != nil {
		return imp.opt.Now()
	}
	return time.Now()
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

// noSpace turns a full-disk error into one that says how much was needed
// (and, once importer.close has cleaned up, how much is free).
func noSpace(root string, err error, what string, need int64) error {
	if !isNoSpace(err) {
		return fmt.Errorf("%s: %w", what, err)
	}
	return &noSpaceError{what: what, err: err, need: need}
}

type noSpaceError struct {
	what      string // what failed with ENOSPC; "" for checkRoom's refusal
	err       error
	need      int64
	free      int64 // measured after the import removed its temporary files
	freeKnown bool
}

func (e *noSpaceError) Error() string {
	free := ""
	if e.freeKnown {
		free = fmt.Sprintf(", and %s are free now", human(e.free))
	}
	first := e.err.Error() // checkRoom's refusal, before anything was written
	if e.what != "" {
		first = fmt.Sprintf("%s: %v: the disk holding the store is full", e.what, e.err)
	}
	return fmt.Sprintf("%s\nhint: this import needs about %s for its new blobs and index%s; free space (or move the store) and run the import again",
		first, human(e.need), free)
}

func (e *noSpaceError) Unwrap() error { return e.err }

func human(n int64) string { return dist.HumanSize(n) }

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

func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || err != nil && strings.Contains(err.Error(), "no space left on device")
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

// ReadInventory reads the index and lists the blobs present.
func ReadInventory(root string) (*Index, []verify.Digest, error) {
	if _, err := os.Stat(indexPath(root)); err != nil {
		return nil, nil, fmt.Errorf("%w: %s has no %s\nhint: import a bundle first ('airgap import --keyring site.pub.asc --store %[2]s BUNDLE'), or check --store", ErrNoStore, root, indexName)
	}
	ix, err := readIndex(root)
	if err != nil {
		return nil, nil, err
	}
	ds, err := listBlobs(root)
	if err != nil {
		return nil, nil, err
	}
	return ix, ds, nil
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
