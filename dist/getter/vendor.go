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

// Unpack extracts a normalized archive (one Fetch or Normalize wrote) into
// dir, a directory that must not exist yet, with the same checks and
// limits as any downloaded archive, after taking its entries and bytes from
// b (read from the tar headers first, so an archive over the budget writes
// nothing). dist/vendor edits such a copy, never the tree Fetch left (which
// may still hold links and .git).
func Unpack(ctx context.Context, archive, dir string, b *Budget) error {
	if err := b.take(archive); err != nil {
		return err
	}
	return extract(ctx, archive, "tar.gz", dir)
}

func (b *Budget) take(archive string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnsafeArchive, err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %v", ErrUnsafeArchive, err)
		}
		b.entries--
		if h.Typeflag == tar.TypeReg {
			b.bytes -= h.Size
		}
		if b.entries < 0 || b.bytes < 0 {
			return fmt.Errorf("%w: the module and the packages vendored into it pass %d entries or %d bytes together", ErrArchiveLimit, MaxArchiveEntries, int64(MaxArchiveBytes))
		}
	}
}
