package bundle

import (
	"archive/zip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestZipBounds: a zip with more entries than MaxZipEntries is refused from
// its end record, before archive/zip reads its directory; one within the
// bound hashes.
func TestZipBounds(t *testing.T) {
	write := func(n int) string {
		p := filepath.Join(t.TempDir(), fmt.Sprintf("z%d.zip", n))
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		zw := zip.NewWriter(f)
		for i := range n {
			w, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("f%05d", i), Method: zip.Store})
			if err != nil {
				t.Fatal(err)
			}
			w.Write([]byte("x"))
		}
		zw.Close()
		f.Close()
		return p
	}
	if _, err := zipH1(write(MaxZipEntries)); err != nil {
		t.Errorf("a zip of %d files: %v", MaxZipEntries, err)
	}
	// 65535 entries or more: archive/zip writes a zip64 end record.
	for _, n := range []int{MaxZipEntries + 1, 70000} {
		if _, err := zipH1(write(n)); err == nil || !strings.Contains(err.Error(), "over the limit") {
			t.Errorf("a zip of %d files: %v", n, err)
		}
	}
}
