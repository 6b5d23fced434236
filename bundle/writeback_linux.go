package bundle

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing n bytes of f from off to
// disk, without waiting (SYNC_FILE_RANGE_WRITE): a hint, not durability,
// which the fsync at the end gives.
func startWriteback(f *os.File, off, n int64) {
	unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}
