package getter

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
)

// Budget bounds what several Unpack calls write together (dist/vendor puts
// several packages into one tree). That tree must still pass Normalize, so
// the budget starts at Normalize's limits, MaxArchiveEntries entries and
// MaxArchiveBytes bytes: worst case on disk for all the calls together is
// MaxArchiveBytes.
type Budget struct {
	entries int
	bytes   int64
}

// NewBudget returns a full budget.
func NewBudget() *Budget { return &Budget{entries: MaxArchiveEntries, bytes: MaxArchiveBytes} }

// Unpack extracts a normalized archive (one fetch or Normalize wrote) into
// dir, a directory that must not exist yet, with the same checks and
// limits as any downloaded archive, after taking its entries and bytes from
// b (read from the tar headers first, so an archive over the budget writes
// nothing). dist/vendor edits such a copy, never the tree fetch left (which
// may still hold links and .git).
func Unpack(ctx context.Context, archive, dir string, b *Budget) error {
	entries, bytes, err := b.take(archive)
	if err != nil {
		return err
	}
	if err := extract(ctx, archive, "tar.gz", dir); err != nil { // it removes what it wrote
		b.entries, b.bytes = b.entries+entries, b.bytes+bytes
		return err
	}
	return nil
}

// take takes the archive's entries and bytes from b, or nothing if they do
// not fit (a package refused, with --allow-unvendored, leaves the budget
// to the others).
func (b *Budget) take(archive string) (entries int, bytes int64, err error) {
	f, err := os.Open(archive)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %v", ErrUnsafeArchive, err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			b.entries, b.bytes = b.entries-entries, b.bytes-bytes
			return entries, bytes, nil
		}
		if err != nil {
			return 0, 0, fmt.Errorf("%w: %v", ErrUnsafeArchive, err)
		}
		entries++
		if h.Typeflag == tar.TypeReg && h.Size > b.bytes-bytes { // no overflow: both stay within b
			bytes = b.bytes + 1
		} else if h.Typeflag == tar.TypeReg {
			bytes += h.Size
		}
		if entries > b.entries || bytes > b.bytes {
			return 0, 0, fmt.Errorf("%w: the module and the packages vendored into it pass %d entries or %d bytes together", ErrArchiveLimit, MaxArchiveEntries, int64(MaxArchiveBytes))
		}
	}
}

// UnpackPackage extracts a provider package (a zip) into dir, a directory
// that must not exist yet, with the same checks as any downloaded archive
// (through os.Root; names, types and sizes checked), within maxEntries
// entries and maxBytes unpacked bytes, and no symbolic links (provider
// packages have none). Gates over providers scan the plugin it unpacks.
func UnpackPackage(ctx context.Context, zipPath, dir string, maxEntries int, maxBytes int64) error {
	return extractLimited(ctx, zipPath, "zip", dir, limits{entries: maxEntries, bytes: maxBytes})
}
