package store

import (
	"io/fs"
	"os"
	"path/filepath"
)

// cleanTmp removes what an interrupted import, prune or gc left: everything
// in tmp/ (an import's staging directory) and temporary index files
// (.index.json.*: a kill while the index was written). It returns how many
// files that was and their bytes; with dryRun it only counts them, so that
// 'gc --dry-run' says exactly what 'gc' removes. The caller holds the store
// lock (no import is staging meanwhile).
//
// Everything in tmp/ is reached through os.Root: nothing there is followed
// out of it, so a link planted there is removed (and counted as a file of
// its own size), never its target changed.
func cleanTmp(root string, dryRun bool) (files int, bytes int64, err error) {
	idx, err := filepath.Glob(filepath.Join(root, "."+indexName+".*"))
	if err != nil {
		return 0, 0, err
	}
	for _, p := range idx {
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		files, bytes = files+1, bytes+fi.Size()
		if !dryRun {
			if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
				return 0, 0, err
			}
		}
	}
	tr, err := os.OpenRoot(tmpPath(root))
	if os.IsNotExist(err) {
		return files, bytes, nil
	}
	if err != nil {
		return 0, 0, err
	}
	defer tr.Close()
	ents, err := fs.ReadDir(tr.FS(), ".")
	if err != nil {
		return 0, 0, err
	}
	for _, e := range ents {
		n, b := countTree(tr, e)
		files, bytes = files+n, bytes+b
		if dryRun {
			continue
		}
		if e.IsDir() {
			// Make a staging directory writable so RemoveAll can empty it.
			tr.Chmod(e.Name(), 0o755)
		}
		if err := tr.RemoveAll(e.Name()); err != nil {
			return 0, 0, err
		}
	}
	return files, bytes, nil
}

// countTree counts the files (anything but a directory) under e, an entry
// of tr's top directory, and their bytes; links are not followed.
func countTree(tr *os.Root, e fs.DirEntry) (files int, bytes int64) {
	fs.WalkDir(tr.FS(), e.Name(), func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		files++
		if fi, err := d.Info(); err == nil {
			bytes += fi.Size()
		}
		return nil
	})
	return files, bytes
}
