package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
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
	// Remote, for a store in object storage staged into root (its index,
	// import.hcl and the SHA256SUMS objstore.Stage fetched), holds the
	// blobs root lacks: a delta's omitted blobs are looked for there
	// (their sizes, Remote.Size), and those the check or the policies read
	// are fetched into root, verified as they stream. A fetch that fails
	// (an object swapped in the bucket) fails the import.
	Remote Remote
	// Staged, if set, is called with each new blob as soon as it is
	// staged and its digest checked (path is its file in the staging
	// directory: the caller may read it, never change it, and must expect
	// it gone once the import has returned), while the rest of the bundle
	// is still being read and checked, so a store elsewhere can take it
	// meanwhile. A refused or failed import has called it for blobs it
	// then did not commit.
	Staged func(d verify.Digest, path string)
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
	imp.remoteMu.Lock()
	rerr := imp.remoteErr
	imp.remoteMu.Unlock()
	if rerr != nil {
		return nil, rerr
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
	remoteMu  sync.Mutex
	remoteErr error         // the first fetch from opt.Remote that failed
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
	m := imp.m
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
			return imp.storeFile(d)
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

// inStore says whether the store holds b: its file, or (opt.Remote) an
// object of b's size in the bucket.
func (imp *importer) inStore(b bundle.Blob) bool {
	if haveBlob(imp.root, b) {
		return true
	}
	if imp.opt.Remote == nil || !verify.IsHex64(b.Digest.Hex()) {
		return false
	}
	size, err := imp.opt.Remote.Size(imp.ctx, b.Digest)
	return err == nil && size == b.Size
}

// storeFile is the store's file of blob d, fetched from opt.Remote
// (verified) if root lacks it; ok is false if the store lacks it.
func (imp *importer) storeFile(d verify.Digest) (path string, ok bool) {
	b := bundle.Blob{Digest: d, Size: imp.sizes[d]}
	path = BlobPath(imp.root, d)
	if haveBlob(imp.root, b) || imp.opt.Remote == nil || !imp.inStore(b) {
		return path, haveBlob(imp.root, b)
	}
	f, err := fetchInto(imp.root, imp.opt.Remote, d)
	if err != nil {
		imp.remoteMu.Lock()
		defer imp.remoteMu.Unlock()
		if imp.remoteErr == nil {
			imp.remoteErr = fmt.Errorf("blob %s (%s) in the store: %w\nhint: the store's copy is damaged; import a full bundle that carries it (or restore the store), then this delta", d.Short(), dist.Printable(imp.m.Describe(d)), err)
		}
		return path, false
	}
	f.Close()
	return path, haveBlob(imp.root, b)
}

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
		case b.Omitted && !imp.inStore(b):
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

// policies runs the import's rules and the site's over the checked
// bundle; the import fails with every refusal they made.
func (imp *importer) policies() error {
	in := &PolicyInput{
		Root: imp.root, Manifest: imp.m, Bundle: imp.res.Bundle, Signer: imp.res.Signer, SignedAt: imp.br.SignedAt(),
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

func (imp *importer) now() time.Time {
	if imp.opt.Now != nil {
		return imp.opt.Now()
	}
	return time.Now()
}
