package store

import (
	"errors"
	"os"
	"path/filepath"
)

// swapAside puts the finished tree tmp at out in two renames: an existing
// out goes aside to a temporary name first (removed afterwards), so out is
// always the old tree, the new one, or briefly absent — never a half tree.
// A failure of the second rename puts the old tree back.
func swapAside(tmp, out string) error {
	if done, err := renameNew(tmp, out); done {
		return err
	}
	old, err := os.MkdirTemp(filepath.Dir(out), "."+filepath.Base(out)+".airgap-mirror-old-")
	if err != nil {
		return err
	}
	os.Remove(old)
	if err := os.Rename(out, old); err != nil {
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		os.Rename(old, out)
		return err
	}
	syncDir(filepath.Dir(out))
	return os.RemoveAll(old)
}

// renameNew renames tmp to out if out does not exist (done is then true).
func renameNew(tmp, out string) (done bool, err error) {
	if _, err := os.Lstat(out); !errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err := os.Rename(tmp, out); err != nil {
		return true, err
	}
	return true, syncDir(filepath.Dir(out))
}
