//go:build !unix

package bundle

// FreeBytes cannot tell the free space on this system.
func FreeBytes(string) (int64, bool) { return 0, false }
