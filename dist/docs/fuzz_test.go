package docs

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzDocsTar: Check and ReadIndex never panic on any bytes, agree on what
// they accept, and every page ReadIndex lists reads back within the tar.
func FuzzDocsTar(f *testing.F) {
	dir := f.TempDir()
	for n, c := range map[string]string{"index.md": "# i\n", "r/a.html.markdown": "a", "images/p.png": "P"} {
		p := filepath.Join(dir, filepath.FromSlash(n))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(c), 0o644)
	}
	r, _ := os.OpenRoot(dir)
	var seed bytes.Buffer
	Pack(r, &seed, 1<<20)
	r.Close()
	f.Add(seed.Bytes())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		st, cerr := Check(bytes.NewReader(data), 1<<20)
		ix, ierr := ReadIndex(bytes.NewReader(data), int64(len(data)), 1<<20)
		if cerr == nil && ierr != nil {
			t.Fatalf("Check accepted what ReadIndex refused: %v", ierr)
		}
		if cerr == nil && len(ix.Entries) != st.Files {
			t.Fatalf("Check counted %d files, ReadIndex %d", st.Files, len(ix.Entries))
		}
		if ierr == nil {
			for _, e := range ix.Entries {
				if e.Offset < 0 || e.Offset+e.Size > int64(len(data)) {
					t.Fatalf("entry %+v outside the tar (%d bytes)", e, len(data))
				}
			}
		}
	})
}

// FuzzFrontMatter: SplitFrontMatter never panics and the body it returns
// is a suffix of the page.
func FuzzFrontMatter(f *testing.F) {
	f.Add([]byte("---\npage_title: \"x\"\ndescription: |-\n  y\n---\nbody"))
	f.Add([]byte("---\r\n---\r\n"))
	f.Fuzz(func(t *testing.T, page []byte) {
		_, body := SplitFrontMatter(page)
		if !bytes.HasSuffix(page, body) {
			t.Fatalf("body %q is not the end of the page %q", body, page)
		}
	})
}
