//go:build windows

package osfile

import (
	"os"

	"golang.org/x/sys/windows"
)

// Lock takes an exclusive lock on f's first byte, waiting for it.
func Lock(f *os.File) error {
	var ol windows.Overlapped
	return windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK, 0, 1, 0, &ol)
}

// TryLock takes an exclusive lock on f's first byte if nobody holds it,
// and reports false at once if somebody does.
func TryLock(f *os.File) (bool, error) {
	var ol windows.Overlapped
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
	if err == windows.ERROR_LOCK_VIOLATION {
		return false, nil
	}
	return err == nil, err
}

// Unlock releases the lock Lock took.
func Unlock(f *os.File) error {
	var ol windows.Overlapped
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol)
}

// Inode returns 0: os.FileInfo carries no file index on Windows. Callers
// that stamp file versions also use size and modification time.
func Inode(fi os.FileInfo) uint64 { return 0 }

// Owner reports false: Windows files have security descriptors, not a
// user and group number.
func Owner(fi os.FileInfo) (uid, gid int, ok bool) { return 0, 0, false }
