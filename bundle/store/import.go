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
// See the package doc for its guarantees. Before anything becomes visible it
// runs the bundle's consistency check (bundle.Checker: every SHA256SUMS
// signature against the carried keys, none by a key of opt.Keyring unless
// marked as a site re-signature, every package against its SHA256SUMS,
// every h1 against the zip, every module zip against its archive) and
// refuses a provider or module version that would change what the store
// already serves (dist.Catalog.CheckMerge). A blob the store already has is
// compared with the bundle's verified bytes and replaced if it differs.
// Every error it returns says whether the store was changed.
func Import(root string, r io.Reader, opt ImportOptions) (res *ImportResult, err error) {
	if err := ensureLayout(root); err != nil {
		return nil, fmt.Errorf("%w\nthe store was not changed", err)
	}
	unlock, err := lockStore(root, opt.Wait)
	if err != nil {
		if errors.Is(err, ErrLocked) {
			return nil, fmt.Errorf("%w\nhint: wait for it to finish, or use --wait\nthe store was not changed", err)
		}
		return nil, fmt.Errorf("locking the store: %w\nthe store was not changed", err)
	}
	defer unlock()
	var placed []string // blobs renamed into blobs/ by this import
	defer func() {
		if err == nil {
			return
		}
		if rerr := unplace(root, placed); rerr != nil {
			err = fmt.Errorf("%w\n%v", err, rerr)
		} else if len(placed) > 0 {
			err = fmt.Errorf("%w\nthe %d blob(s) this import had placed were removed; the store was not changed", err, len(placed))
		} else {
			err = fmt.Errorf("%w\nthe store was not changed", err)
		}
	}()
	res = &ImportResult{}
	if res.Cleaned, err = cleanTmp(root); err != nil {
		return nil, fmt.Errorf("cleaning leftovers of an earlier import: %w", err)
	}

	br, err := bundle.NewReader(r, opt.Keyring)
	if err != nil {
		return nil, err
	}
	defer br.Close()
	m := br.Manifest()
	res.Bundle, res.Signer, res.Delta = br.ID(), br.Signer(), m.Delta != nil

	ix, err := readIndex(root)
	if err != nil {
		return nil, err
	}
	sizes := make(map[verify.Digest]int64, len(m.Blobs))
	for _, b := range m.Blobs {
		sizes[b.Digest] = b.Size
	}
	known := map[verify.Digest]string{}
	for _, p := range ix.Catalog.Providers {
		for _, pk := range p.Packages {
			known[pk.Digest] = pk.H1
		}
	}
	ck, err := bundle.NewChecker(m, bundle.CheckOptions{
		Signer:   res.Signer,
		SiteKeys: opt.Keyring,
		Have: func(d verify.Digest) (string, bool) {
			return BlobPath(root, d), haveBlob(root, bundle.Blob{Digest: d, Size: sizes[d]})
		},
		KnownH1: func(d verify.Digest, h1 string) bool { h, ok := known[d]; return ok && h == h1 },
	})
	if err != nil {
		return nil, err
	}
	defer ck.Close()
	if err := ix.Catalog.CheckMerge(&m.Catalog); err != nil {
		return nil, fmt.Errorf("%w: %v\nhint: a store never changes what it serves under a name and version; "+
			"if the bundle is right, the store holds something else under that name (check 'airgap inventory')", ErrConflict, err)
	}
	if err := checkWithdrawn(ix, m); err != nil {
		return nil, err
	}
	// A delta must find every omitted blob here before anything is read.
	var need int64 // bytes of new blobs, for a disk-full message
	var missing []string
	for _, b := range m.Blobs {
		switch {
		case b.Omitted && !haveBlob(root, b):
			missing = append(missing, fmt.Sprintf("%s (%s, %s)", b.Digest.Short(), m.Describe(b.Digest), b.Role))
		case !b.Omitted && !haveBlob(root, b):
			need += b.Size
		}
	}
	if len(missing) > 0 {
		hint := "import the base bundle first"
		if len(m.Delta.BaseBundles) > 0 {
			hint = "import the base bundle first: " + strings.Join(m.Delta.BaseBundles, ", ")
		}
		return nil, fmt.Errorf("%w: this delta bundle (base %s) needs %d blob(s) this store lacks: %s\nhint: %s",
			ErrBlobMissing, m.Delta.Base, len(missing), strings.Join(missing, "; "), hint)
	}

	stage, err := os.MkdirTemp(tmpPath(root), "import-")
	if err != nil {
		return nil, err
	}
	defer func() { ck.Close(); os.RemoveAll(stage) }()

	// A blob the store already has is compared, as it streams by, with the
	// store's file; a file that differs (planted or damaged under the
	// digest) is replaced by the bundle's verified bytes at the commit
	// (atomically), so it does not survive an import that carries the blob.
	var staged, refreshed []bundle.Blob
	for {
		b, rd, err := br.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		path := filepath.Join(stage, b.Digest.Hex())
		var n int64
		same := false
		if haveBlob(root, b) {
			n, same, err = compareOrStage(BlobPath(root, b.Digest), path, rd)
		} else {
			n, err = stageBlob(path, rd)
		}
		res.BytesRead += n
		if err != nil {
			return nil, noSpace(root, err, fmt.Sprintf("staging blob %s (%s)", b.Digest.Short(), m.Describe(b.Digest)), need)
		}
		switch {
		case same:
			res.BlobsShared++
			path = BlobPath(root, b.Digest)
		case haveBlob(root, b):
			res.BlobsShared++
			refreshed = append(refreshed, b)
		default:
			staged = append(staged, b)
		}
		if err := ck.Add(b, path); err != nil {
			return nil, err
		}
	}
	if _, err := ck.Finish(); err != nil {
		return nil, err
	}

	// Everything is verified. Commit: the new index is written (not yet
	// visible) first, so a full disk fails before anything is placed; then
	// the blobs; then the index becomes visible.
	merged := ix.Catalog
	added := merged.Merge(&m.Catalog)
	already := false
	for _, e := range ix.Imports {
		if e.Bundle == res.Bundle {
			already = true
		}
	}
	now := time.Now
	if opt.Now != nil {
		now = opt.Now
	}
	stamp := now().UTC().Truncate(time.Second)
	ix.Catalog = merged
	res.Withdrew, res.Reinstated = applyWithdrawals(ix, m, res.Bundle, res.Signer, stamp)
	if len(staged) == 0 && len(added) == 0 && len(res.Withdrew) == 0 && len(res.Reinstated) == 0 && already {
		res.Unchanged = len(refreshed) == 0
		if err := refresh(root, stage, refreshed); err != nil {
			return nil, err
		}
		if len(refreshed) > 0 {
			return res, syncDir(blobDir(root))
		}
		return res, nil
	}
	for _, b := range staged {
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
	data, err := encodeIndex(ix)
	if err != nil {
		return nil, err
	}
	if testHookBeforeIndex != nil {
		testHookBeforeIndex()
	}
	pending, err := prepareAtomic(indexPath(root), data, 0o644)
	if err != nil {
		return nil, noSpace(root, err, "writing the store index", need+int64(len(data)))
	}
	defer pending.abort()
	for _, b := range staged {
		dst := BlobPath(root, b.Digest)
		if err := os.Rename(filepath.Join(stage, b.Digest.Hex()), dst); err != nil {
			return nil, fmt.Errorf("storing blob %s: %w", b.Digest.Short(), err)
		}
		placed = append(placed, dst)
	}
	if err := refresh(root, stage, refreshed); err != nil {
		return nil, err
	}
	if err := syncDir(blobDir(root)); err != nil {
		return nil, err
	}
	if testHookBeforeCommit != nil {
		testHookBeforeCommit()
	}
	if err := pending.commit(); err != nil {
		return nil, fmt.Errorf("writing the store index: %w", err)
	}
	return res, nil
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
