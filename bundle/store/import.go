package store

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/airgap/airgap/bundle"
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
}

// Import reads a bundle from r into the store at root (created if absent).
// See the package doc for its guarantees.
func Import(root string, r io.Reader, opt ImportOptions) (*ImportResult, error) {
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
	defer unlock()
	res := &ImportResult{}
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
	// A delta must find every omitted blob here before anything is read.
	if m.Delta != nil {
		var missing []string
		for _, b := range m.Blobs {
			if b.Omitted && !haveBlob(root, b) {
				missing = append(missing, fmt.Sprintf("%s (%s, %s)", b.Digest.Short(), m.Describe(b.Digest), b.Role))
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
	}

	stage, err := os.MkdirTemp(tmpPath(root), "import-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(stage)

	var staged []bundle.Blob
	for {
		b, rd, err := br.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if haveBlob(root, b) {
			n, err := io.Copy(io.Discard, rd)
			res.BytesRead += n
			if err != nil {
				return nil, err
			}
			res.BlobsShared++
		} else {
			n, err := stageBlob(filepath.Join(stage, b.Digest.Hex()), rd)
			res.BytesRead += n
			if err != nil {
				return nil, err
			}
			staged = append(staged, b)
		}
	}

	// Everything is verified. Commit: blobs first, then the index.
	merged := ix.Catalog
	added := merged.Merge(&m.Catalog)
	already := false
	for _, e := range ix.Imports {
		if e.Bundle == res.Bundle {
			already = true
		}
	}
	if len(staged) == 0 && len(added) == 0 && already {
		res.Unchanged = true
		return res, nil
	}
	for _, b := range staged {
		if err := os.Rename(filepath.Join(stage, b.Digest.Hex()), BlobPath(root, b.Digest)); err != nil {
			return nil, fmt.Errorf("storing blob %s: %w", b.Digest.Short(), err)
		}
		res.BlobsAdded++
		res.BytesAdded += b.Size
	}
	if err := syncDir(blobDir(root)); err != nil {
		return nil, err
	}
	now := time.Now
	if opt.Now != nil {
		now = opt.Now
	}
	if added == nil {
		added = []string{}
	}
	res.Added = added
	ix.Catalog = merged
	ix.Imports = append(ix.Imports, ImportEntry{
		Bundle: res.Bundle, Signer: res.Signer, Time: now().UTC().Truncate(time.Second), Tool: m.Tool,
		Delta: res.Delta, Added: added, BlobsAdded: res.BlobsAdded, BytesAdded: res.BytesAdded,
	})
	if err := WriteIndex(root, ix); err != nil {
		return nil, fmt.Errorf("writing the store index: %w", err)
	}
	return res, nil
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
	if err != nil && isNoSpace(err) {
		err = fmt.Errorf("%w\nhint: the disk holding the store is full; free space (the import needs room for every new blob) and run the import again", err)
	}
	return n, err
}

func isNoSpace(err error) bool {
	return err != nil && strings.Contains(err.Error(), "no space left on device")
}

// haveBlob reports whether the store already holds b. Blobs are verified when
// they enter the store and are read-only after, so size is checked, not the
// hash again.
func haveBlob(root string, b bundle.Blob) bool {
	fi, err := os.Stat(BlobPath(root, b.Digest))
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

// cleanTmp removes what an interrupted import left in tmp/.
func cleanTmp(root string) (int, error) {
	ents, err := os.ReadDir(tmpPath(root))
	if err != nil {
		return 0, err
	}
	for _, e := range ents {
		p := filepath.Join(tmpPath(root), e.Name())
		// Staged blobs are 0444; make directories writable so RemoveAll works.
		os.Chmod(p, 0o755)
		if err := os.RemoveAll(p); err != nil {
			return 0, err
		}
	}
	return len(ents), nil
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
	ents, err := os.ReadDir(blobDir(root))
	if err != nil {
		return nil, nil, err
	}
	var ds []verify.Digest
	for _, e := range ents {
		if verify.IsHex64(e.Name()) {
			ds = append(ds, verify.Digest("sha256:"+e.Name()))
		}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ix, ds, nil
}
