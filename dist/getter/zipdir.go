package getter

import (
	"errors"
	"fmt"
	"io"

	"github.com/airgap/airgap/dist/zipdir"
)

// checkZipDirectory bounds what archive/zip will hold in memory before it
// parses a module zip (zipdir.Check: at most maxEntries headers in at most
// MaxZipDirectory bytes), with the getter's sentinel errors.
func checkZipDirectory(r io.ReaderAt, size int64, maxEntries int) error {
	err := zipdir.Check(r, size, maxEntries, MaxZipDirectory)
	var ze *zipdir.Error
	switch {
	case errors.As(err, &ze) && ze.Limit:
		return fmt.Errorf("%w: %s", ErrArchiveLimit, ze)
	case errors.As(err, &ze):
		return fmt.Errorf("%w: %s", ErrUnsafeArchive, ze)
	}
	return err
}
