package store

import (
	"bytes"
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
	// Policies are the site's import-time rules (policy.go), run in order
	// after the bundle has been checked and before anything is committed.
	Policies []Policy
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
	Cleaned     int // leftovers of an earlier, interrupted import removed
	Withdrew    []string
	Reinstated  []string
}

// Import reads a bundle from r into the store at root (created if absent).
// See the package doc for its guarantees. It runs in phases, each a method
// of importer below, so that the trust path reads top to bottom:
//
//  1. open:   lay out the store, take its lock, clean what a killed import left;
//  2. read:   the bundle's signature (bundle.NewReader) and the store's index;
//  3. check:  before any blob is read, the manifest's consistency
//     (bundle.NewChecker runs bundle.CheckManifest), its fit with what the
//     store serves (dist.Catalog.CheckMerge: a version never changes),
//     withdrawals, and that a delta's omitted blobs are here;
//  4. stage:  every blob streamed into tmp/ and hashed while it is written;
//     bundle.Checker checks every SHA256SUMS signature against the carried
//     keys (none by a key of opt.Keyring unless marked as a site
//     re-signature), every package against its SHA256SUMS, every h1
//     against the zip and every module zip against its archive;
//  5. policy: the site's rules (opt.Policies) over the checked bundle;
//  6. commit: the new index to a temporary file, the blobs into blobs/,
//     then the index into place;
//  7. clean:  on any failure, the blobs this import placed are removed and
//     the error says whether the store changed; tmp/ is emptied either way.
//
// A blob the store already has is compared with the bundle's verified bytes
// and replaced if it differs.
func Import(root string, r io.Reader, opt ImportOptions) (res *ImportResult, err error) {
	imp, err := openImport(root, opt)
	if err != nil {
		return nil, fmt.Errorf("%w\nthe store was not changed", err)
	}
	defer func() { err = imp.close(err) }()
	if err := imp.read(r); err != nil {
		return nil, err
	}
	if err := imp.check(); err != nil {
		return nil, err
	}
	if err := imp.stage(); err != nil {
		return nil, err
	}
	if err := imp.policies(); err != nil {
		return nil, err
	}
	if err := imp.commit(); err != nil {
		return nil, err
	}
	return imp.res, nil
}

// importer is one import in progress: what each phase learns, for the next.
type importer struct {
	root   string
	opt    ImportOptions
	unlock func()
	res    *ImportResult

	br    *bundle.Reader
	m     *bundle.Manifest
	ix    *Index
	sizes map[verify.Digest]int64 // every blob the manifest lists
	ck    *bundle.Checker
	need  int64 // bytes of new blobs, for a disk-full message

	stageDir  string
	staged    []bundle.Blob // new blobs, in stageDir
	refreshed []bundle.Blob // blobs the store had, with other bytes: replaced at the commit
	checked   *bundle.CheckReport
	policy    PolicyResult // what the policies record in the new index
	placed    []string     // blobs renamed into blobs/ by this import
}

// openImport lays out the store, takes its lock and removes what an
// interrupted import left in tmp/.
func openImport(root string, opt ImportOptions) (*importer, error) {
	if err := ensureLayout(root); err != nil {
		return nil, err
	}
	unlock, err := lockStore(root, opt.Wait)
	if err != nil {
		if errors.Is(err, ErrLocked) {
			return nil, fmt.Errorf("%w\nhint: wait for it to finish, or use --wait", err)
		}
		return nil, fmt.Errorf("locking the store: %w", err)
	}
	imp := &importer{root: root, opt: opt, unlock: unlock, res: &ImportResult{}}
	if imp.res.Cleaned, err = cleanTmp(root); err != nil {
		unlock()
		return nil, fmt.Errorf("cleaning leftovers of an earlier import: %w", err)
	}
	return imp, nil
}

// close ends the import: on failure it removes the blobs this import
// placed and says whether the store changed; either way it stops the
// checker, removes the staging directory and releases the lock.
func (imp *importer) close(err error) error {
	if imp.ck != nil {
		imp.ck.Close()
	}
	if imp.stageDir != "" {
		os.RemoveAll(imp.stageDir)
	}
	if imp.br != nil {
		imp.br.Close()
	}
	defer imp.unlock()
	if err == nil {
		return nil
	}
	if rerr := unplace(imp.root, imp.placed); rerr != nil {
		return fmt.Errorf("%w\n%v", err, rerr)
	} else if len(imp.placed) > 0 {
		return fmt.Errorf("%w\nthe %d blob(s) this import had placed were removed; the store was not changed", err, len(imp.placed))
	}
	return fmt.Errorf("%w\nthe store was not changed", err)
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

// check decides everything that can be decided from the signed manifest
// and the store before any blob is read: the manifest's consistency, that
// it changes no version the store serves, withdrawals, and that a delta's
// omitted blobs are all here.
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
	ck, err := bundle.NewChecker(m, bundle.CheckOptions{
		Signer:   imp.res.Signer,
		SiteKeys: imp.opt.Keyring,
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
	if err := imp.ix.Catalog.CheckMerge(&m.Catalog); err != nil {
		return fmt.Errorf("%w: %v\nhint: a store never changes what it serves under a name and version; "+
			"if the bundle is right, the store holds something else under that name (check 'airgap inventory')", ErrConflict, err)
	}
	if err := checkWithdrawn(imp.ix, m); err != nil {
		return err
	}
	return imp.checkOmitted()
}

// checkOmitted makes sure a delta finds every omitted blob here, and counts
// the bytes of new blobs (for a disk-full message).
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
// import that carries the blob.
func (imp *importer) stage() (err error) {
	root, m := imp.root, imp.m
	if imp.stageDir, err = os.MkdirTemp(tmpPath(root), "import-"); err != nil {
		return err
	}
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
			n, same, err = compareOrStage(BlobPath(root, b.Digest), path, rd)
		} else {
			n, err = stageBlob(path, rd)
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
	imp.checked, err = imp.ck.Finish()
	return err
}

// policies runs the site's import-time rules over the checked bundle.
func (imp *importer) policies() error {
	in := &PolicyInput{
		Manifest: imp.m, Bundle: imp.res.Bundle, Signer: imp.res.Signer,
		Index: imp.ix, Checked: imp.checked, Now: imp.now(),
	}
	for _, p := range imp.opt.Policies {
		if err := p.Check(in, &imp.policy); err != nil {
			return err
		}
	}
	return nil
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
	added := ix.Catalog.Merge(&m.Catalog)
	already := false
	for _, e := range ix.Imports {
		if e.Bundle == res.Bundle {
			already = true
		}
	}
	stamp := imp.now().UTC().Truncate(time.Second)
	res.Withdrew, res.Reinstated = applyWithdrawals(ix, m, res.Bundle, res.Signer, stamp)
	if len(imp.staged) == 0 && len(added) == 0 && len(res.Withdrew) == 0 && len(res.Reinstated) == 0 && already && imp.policy.empty() {
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
	res.Added = added
	ix.Imports = append(ix.Imports, ImportEntry{
		Bundle: res.Bundle, Signer: res.Signer, Time: stamp, Tool: m.Tool,
		Delta: res.Delta, Added: added, BlobsAdded: res.BlobsAdded, BytesAdded: res.BytesAdded,
		Withdrew: res.Withdrew, Reinstated: res.Reinstated,
	})
	imp.policy.apply(ix)
	return imp.swapIndex()
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
	for _, b := range imp.staged {
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

// Test hooks (set by export_test.go only): before the new index is written
// to its temporary file (every blob staged and checked), and before it is
// renamed into place (every new blob placed).
var testHookBeforeIndex, testHookBeforeCommit func()

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

// noSpace turns a full-disk error into one that says how much was needed.
func noSpace(root string, err error, what string, need int64) error {
	if !isNoSpace(err) {
		return fmt.Errorf("%s: %w", what, err)
	}
	free := ""
	if f, ok := freeBytes(root); ok {
		free = fmt.Sprintf(", and %s are free now", human(f))
	}
	return fmt.Errorf("%s: %w: the disk holding the store is full\nhint: this import needs about %s for its new blobs and index%s; free space (or move the store) and run the import again",
		what, err, human(need), free)
}

func human(n int64) string { return dist.HumanSize(n) }

// compareOrStage reads rd (a verifying blob reader) and compares it with the
// store's file at have, which has its size. If they are the same it writes
// nothing; at the first difference it stages the blob at path (the equal
// prefix from have, the rest from rd) and reports same = false. Only one
// read of the store's file, no write, when they agree.
func compareOrStage(have, path string, rd io.Reader) (n int64, same bool, err error) {
	f, err := os.Open(have)
	if err != nil {
		n, err = stageBlob(path, rd)
		return n, false, err
	}
	defer f.Close()
	const chunk = 256 << 10
	a, b := make([]byte, chunk), make([]byte, chunk)
	for {
		k, rerr := io.ReadFull(rd, a)
		if k > 0 {
			if _, ferr := io.ReadFull(f, b[:k]); ferr != nil || !bytes.Equal(a[:k], b[:k]) {
				m, err := stageBlob(path, io.MultiReader(io.NewSectionReader(f, 0, n), bytes.NewReader(a[:k]), rd))
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

// stageBlob writes rd (a verifying blob reader) to path, durably, read-only.
func stageBlob(path string, rd io.Reader) (int64, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(f, rd)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = f.Chmod(0o444)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
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

func ensureLayout(root string) error {
	for _, d := range []string{root, blobDir(root), tmpPath(root)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("creating store: %w", err)
		}
	}
	return nil
}

// cleanTmp removes what an interrupted import left: tmp/ and temporary
// index files (a kill while the index was written).
func cleanTmp(root string) (int, error) {
	ents, err := os.ReadDir(tmpPath(root))
	if err != nil {
		return 0, err
	}
	idx, err := filepath.Glob(filepath.Join(root, "."+indexName+".*"))
	if err != nil {
		return 0, err
	}
	for _, p := range idx {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return 0, err
		}
	}
	if len(ents) == 0 {
		return len(idx), nil
	}
	// Through os.Root: nothing in tmp/ is followed out of it, so a link
	// planted there is removed, never its target changed.
	tr, err := os.OpenRoot(tmpPath(root))
	if err != nil {
		return 0, err
	}
	defer tr.Close()
	for _, e := range ents {
		if e.IsDir() {
			// Make a staging directory writable so RemoveAll can empty it.
			tr.Chmod(e.Name(), 0o755)
		}
		if err := tr.RemoveAll(e.Name()); err != nil {
			return 0, err
		}
	}
	return len(ents) + len(idx), nil
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
