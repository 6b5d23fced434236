//go:build linux

package store

import (
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// swapMirror puts the finished tree tmp at out. An existing out (checked by
// checkMirrorOut) is exchanged with tmp in one renameat2(RENAME_EXCHANGE),
// so a reader sees the old tree or the new one, never neither; the old one
// is then removed. File systems without the exchange fall back to
// swapAside.
func swapMirror(tmp, out string) error {
	if done, err := renameNew(tmp, out); done {
		return err
	}
	if err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, out, unix.RENAME_EXCHANGE); err != nil {
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
			return swapAside(tmp, out)
		}
		return err
	}
	syncDir(filepath.Dir(out))
	return os.RemoveAll(tmp) // now the old tree
}
