//go:build !linux

package bundle

import "os"

// startWriteback is a no-op where sync_file_range does not exist: the
// fsync at the end writes everything.
func startWriteback(f *os.File, off, n int64) {}

// setDirect: writes go through the page cache where O_DIRECT is not used.
func setDirect(f *os.File, on bool) bool { return false }

const directAlign = 4096

func aligned(n int) []byte { return make([]byte, n) }
