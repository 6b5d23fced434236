package harness

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// CopyDir copies a tree of regular files (blobs keep their read-only mode).
func CopyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, _ := d.Info()
		return os.WriteFile(target, b, fi.Mode().Perm()|0o200)
	})
	if err != nil {
		t.Fatal(err)
	}
}
