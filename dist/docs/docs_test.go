package docs

import (
	"archive/tar"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/dist"
)

func tree(t *testing.T, files map[string]string) *os.Root {
	t.Helper()
	dir := t.TempDir()
	for n, c := range files {
		p := filepath.Join(dir, filepath.FromSlash(n))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(c), 0o644)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// Pack is deterministic, keeps pages and images only, never follows a
// link, and what it writes Check and ReadIndex accept with the same counts.
func TestPackCheckIndex(t *testing.T) {
	files := map[string]string{"index.md": "---\npage_title: \"P\"\n---\n# p\n", "r/thing.html.markdown": "# thing\n", "resources/b.md": "b",
		"images/x.png": "PNG", "notes.txt": "no", ".hidden.md": "no", "guides/sub/deep.md": "deep"}
	r := tree(t, files)
	os.Symlink("/etc/passwd", filepath.Join(r.Name(), "resources", "evil.md"))
	var a, b bytes.Buffer
	st, err := Pack(r, &a, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Pack(r, &b, 1<<20); err != nil || !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatalf("Pack is not deterministic (%v)", err)
	}
	if st.Pages != 4 || st.Files != 5 || st.Skipped != 3 {
		t.Fatalf("stats %+v, want 4 pages, 5 files, 3 skipped (notes.txt, .hidden.md, the link)", st)
	}
	cs, err := Check(bytes.NewReader(a.Bytes()), dist.MaxDocsBytes)
	if err != nil || cs.Pages != st.Pages || cs.Files != st.Files || cs.Bytes != st.Bytes {
		t.Fatalf("Check: %+v %v; Pack said %+v", cs, err, st)
	}
	ix, err := ReadIndex(bytes.NewReader(a.Bytes()), int64(a.Len()), dist.MaxDocsBytes)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := ix.Find("widget", "widget_thing")
	if !ok || e.Category != "resources" || e.Name != "thing" {
		t.Fatalf("Find(widget_thing) = %+v %v", e, ok)
	}
	body, _ := ReadFile(bytes.NewReader(a.Bytes()), e, 100)
	if string(body) != "# thing\n" {
		t.Fatalf("ReadFile = %q", body)
	}
	if _, ok := ix.Page("guides", "sub-deep"); !ok {
		t.Errorf("guides/sub/deep.md is not the page guides/sub-deep")
	}
	if _, err := Pack(r, io_discard{}, 10); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Pack over the bound: %v", err)
	}
}

type io_discard struct{}

func (io_discard) Write(p []byte) (int, error) { return len(p), nil }

// Check refuses every tar Pack would not write.
func TestCheckRefuses(t *testing.T) {
	mk := func(hs ...*tar.Header) []byte {
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		for _, h := range hs {
			tw.WriteHeader(h)
			tw.Write(bytes.Repeat([]byte("x"), int(h.Size)))
		}
		tw.Close()
		return b.Bytes()
	}
	ok := func(name string) *tar.Header { return header(name, 1) }
	with := func(h *tar.Header, f func(*tar.Header)) *tar.Header { f(h); return h }
	for name, data := range map[string][]byte{
		"a link":         mk(with(ok("a.md"), func(h *tar.Header) { h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, "/etc/passwd", 0 })),
		"a directory":    mk(with(ok("d"), func(h *tar.Header) { h.Typeflag, h.Size = tar.TypeDir, 0 })),
		"not a page":     mk(ok("x.sh")),
		"out of order":   mk(ok("b.md"), ok("a.md")),
		"twice":          mk(ok("a.md"), ok("a.md")),
		"folding":        mk(ok("A.md"), ok("a.md")),
		"escape":         mk(ok("../a.md")),
		"absolute":       mk(ok("/a.md")),
		"control":        mk(ok("a\x1b[31m.md")),
		"another mode":   mk(with(ok("a.md"), func(h *tar.Header) { h.Mode = 0o755 })),
		"an owner":       mk(with(ok("a.md"), func(h *tar.Header) { h.Uname = "root" })),
		"a time":         mk(with(ok("a.md"), func(h *tar.Header) { h.ModTime = h.ModTime.Add(1e9) })),
		"too deep":       mk(ok(strings.Repeat("d/", MaxDepth) + "a.md")),
		"not a tar":      []byte("hello"),
		"windows device": mk(ok("con.md")),
	} {
		if _, err := Check(bytes.NewReader(data), 1<<20); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Check = %v, want ErrInvalid", name, err)
		}
		if _, err := ReadIndex(bytes.NewReader(data), int64(len(data)), 1<<20); err == nil {
			t.Errorf("%s: ReadIndex accepted it", name)
		}
	}
	if _, err := Check(bytes.NewReader(mk(ok("a.md"), ok("b.md"))), 1); !errors.Is(err, ErrInvalid) {
		t.Errorf("over maxBytes: %v", err)
	}
}

func TestFrontMatter(t *testing.T) {
	for src, want := range map[string][2]string{
		"---\nsubcategory: \"S3 (Simple Storage)\"\nlayout: \"aws\"\npage_title: \"AWS: aws_s3_bucket\"\ndescription: |-\n  Provides a bucket.\n---\n\n# body\n": {"AWS: aws_s3_bucket", "S3 (Simple Storage)"},
		"---\r\npage_title: 'x'\r\n---\r\n# body\n": {"x", ""},
		"# no front matter\n---\n":                  {"", ""},
		"---\npage_title: never closed\n# body\n":   {"", ""},
	} {
		fm, body := SplitFrontMatter([]byte(src))
		if fm.Title != want[0] || fm.Subcategory != want[1] {
			t.Errorf("%q: %+v", src, fm)
		}
		if want[0] != "" && !strings.HasPrefix(strings.TrimLeft(string(body), "\r\n"), "# body") {
			t.Errorf("%q: body %q", src, body)
		}
	}
}

func TestPageOf(t *testing.T) {
	for in, want := range map[string]string{"index.md": "overview/index", "index.html.markdown": "overview/index", "r/instance.html.markdown": "resources/instance",
		"d/ami.html.md": "data-sources/ami", "resources/s3_bucket.md": "resources/s3_bucket", "guides/version-5-upgrade.md": "guides/version-5-upgrade",
		"ephemeral-resources/x.md": "ephemeral-resources/x", "functions/arn_parse.md": "functions/arn_parse", "cdktf/python/r/x.md": "guides/cdktf-python-r-x", "other.md": "guides/other"} {
		c, n := PageOf(in)
		if c+"/"+n != want {
			t.Errorf("PageOf(%q) = %s/%s, want %s", in, c, n, want)
		}
	}
}
