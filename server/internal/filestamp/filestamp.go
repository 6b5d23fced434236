// Package filestamp tells whether files changed: serve re-reads its access
// file, certificate files, URL signing keys, login state and download counts
// when their stamp changes. It does not read the files.
package filestamp

import (
	"fmt"
	"os"

	"github.com/airgap/airgap/dist/osfile"
)

// Of identifies the versions of files by modification time, size
// and inode.
func Of(paths ...string) (string, error) {
	stamp := ""
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return "", err
		}
		// The inode too: an atomic replace (temp + rename) may keep size
		// and modification time.
		stamp += fmt.Sprint(fi.ModTime().UnixNano(), fi.Size(), osfile.Inode(fi), ";")
	}
	return stamp, nil
}
