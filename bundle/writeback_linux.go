package bundle

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing n bytes of f from off to
// disk, without waiting (SYNC_FILE_RANGE_WRITE): a hint, not durability,
// which the fsync at the end gives.
func startWriteback(f *os.File, off, n int64) {
	unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}

// setDirect turns O_DIRECT on or off for f and reports whether it could:
// with it on, writes go from the buffer to the disk without a copy into
// the page cache (measured here: 0.04 s of CPU for 188 MB against 0.3 s
// through the page cache) and leave no dirty pages behind. Writes must
// then be of whole aligned blocks from aligned buffers (aheadWriter's
// chunks); the last, partial one is written with it off.
func setDirect(f *os.File, on bool) bool {
	fl, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
	if err != nil {
		return false
	}
	if on {
		fl |= unix.O_DIRECT
	} else {
		fl &^= unix.O_DIRECT
	}
	_, err = unix.FcntlInt(f.Fd(), unix.F_SETFL, fl)
	return err == nil
}

// directAlign is the alignment O_DIRECT needs of buffers, sizes and file
// offsets (the largest logical block size of common disks).
const directAlign = 4096

// aligned returns a buffer of n bytes whose address is a multiple of
// directAlign.
func aligned(n int) []byte {
	b := make([]byte, n+directAlign)
	skip := (directAlign - int(uintptr(unsafe.Pointer(&b[0]))%directAlign)) % directAlign
	return b[skip : skip+n : skip+n]
}
