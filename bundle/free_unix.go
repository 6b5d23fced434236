//go:build unix

package bundle

import "syscall"

// FreeBytes is the space available to this user on the file system of dir;
// false when it cannot be told.
func FreeBytes(dir string) (int64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true
}
