package getter

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/dist/getter/archivetest"
)

type entry = archivetest.Entry

// unpackIn extracts data (of kind) into <outer>/x/y/z/root and returns the
// error, after checking that a failure leaves outer exactly as it was and
// that nothing but root ever appears.
func unpackIn(t testing.TB, data []byte, kind string, lim limits) (root string, err error) {
	t.Helper()
	outer := t.TempDir()
	parent := filepath.Join(outer, "x", "y", "z")
	if err := os.MkdirAll(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(outer, "x", "bystander"), []byte("keep"), 0o644)
	arch := filepath.Join(t.TempDir(), "download")
	if err := os.WriteFile(arch, data, 0o644); err != nil {
		t.Fatal(err)
	}
	before := archivetest.Snapshot(t, outer)
	root = filepath.Join(parent, "root")
	err = extractLimited(context.Background(), arch, kind, root, lim)
	after := archivetest.Snapshot(t, outer)
	if err != nil {
		if d := archivetest.Changed(before, after); len(d) != 0 {
			t.Fatalf("a failed extraction (%v) changed the tree: %v", err, d)
		}
		return root, err
	}
	for k := range after {
		if _, ok := before[k]; !ok && k != filepath.Join("x", "y", "z", "root") && !strings.HasPrefix(k, filepath.Join("x", "y", "z", "root")+string(filepath.Separator)) {
			t.Fatalf("extraction wrote %s outside its root", k)
		}
	}
	if d := archivetest.Changed(before, after); len(d) == 0 {
		t.Fatalf("extraction succeeded but created nothing")
	}
	return root, nil
}

func archives(t *testing.T, entries []entry) map[string][]byte {
	out := map[string][]byte{"tar.gz": archivetest.TarGz(t, entries), "tar": archivetest.Tar(t, entries)}
	for _, e := range entries {
		if e.Type == tar.TypeLink {
			return out
		}
	}
	out["zip"] = archivetest.Zip(t, entries)
	return out
}

func TestExtractRefusesEscapes(t *testing.T) {
	cases := []struct {
		name    string
		entries []entry
		want    string // in the error
	}{
		{"link chain", archivetest.LinkChain(8, "pwned", "owned"), `symlink "b"`},
		{"file through a link to a directory", []entry{
			{Name: "d", Type: tar.TypeDir}, {Name: "l", Type: tar.TypeSymlink, Link: "d"}, {Name: "l/f", Body: "x"}}, `symlink "l"`},
		{"file through a link to the parent", []entry{
			{Name: "l", Type: tar.TypeSymlink, Link: ".."}, {Name: "l/pwned", Body: "x"}}, `symlink "l"`},
		{"dot-dot through a linked directory", []entry{
			{Name: "d/e", Type: tar.TypeDir}, {Name: "x", Type: tar.TypeSymlink, Link: "d"},
			{Name: "y", Type: tar.TypeSymlink, Link: "x/../.."}, {Name: "y/pwned", Body: "x"}}, `symlink "y"`},
		{"dot-dot through a linked directory, read", []entry{
			{Name: "d/e", Type: tar.TypeDir}, {Name: "y", Type: tar.TypeSymlink, Link: "x/../../../../../bystander"},
			{Name: "x", Type: tar.TypeSymlink, Link: "d/e"}}, `symlink "y" -> "x/../../../../../bystander" does not lead to a file inside the module`},
		{"dot-dot in a name", []entry{{Name: "d/../../pwned", Body: "x"}}, `not a relative path`},
		{"absolute name", []entry{{Name: "/tmp/pwned", Body: "x"}}, `not a relative path`},
		{"absolute link", []entry{{Name: "passwd", Type: tar.TypeSymlink, Link: "/etc/passwd"}}, `is absolute`},
		{"absolute link to a directory, then a file", []entry{
			{Name: "tmp", Type: tar.TypeSymlink, Link: "/tmp"}, {Name: "tmp/pwned", Body: "x"}}, `is absolute`},
		{"link to a directory", []entry{{Name: "d", Type: tar.TypeDir}, {Name: "l", Type: tar.TypeSymlink, Link: "d"}}, `leads to a directory`},
		{"dangling link", []entry{{Name: "l", Type: tar.TypeSymlink, Link: "nothing"}}, `does not lead to a file`},
		{"hard link to outside", []entry{{Name: "h", Type: tar.TypeLink, Link: "../../bystander"}}, `hard link "h" -> "../../bystander" leads outside`},
		{"hard link to an absolute path", []entry{{Name: "h", Type: tar.TypeLink, Link: "/etc/passwd"}}, `leads outside`},
		{"hard link through a symlink", []entry{
			{Name: "l", Type: tar.TypeSymlink, Link: ".."}, {Name: "h", Type: tar.TypeLink, Link: "l/x/bystander"}}, `not an earlier entry`},
		{"duplicate file", []entry{{Name: "f", Body: "1"}, {Name: "f", Body: "2"}}, `appears twice`},
	}
	for _, c := range cases {
		for kind, data := range archives(t, c.entries) {
			t.Run(c.name+"/"+kind, func(t *testing.T) {
				_, err := unpackIn(t, data, kind, defaultLimits)
				if err == nil {
					t.Fatal("extracted")
				}
				if !errors.Is(err, ErrUnsafeArchive) || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("error %q, want %v and %q", err, ErrUnsafeArchive, c.want)
				}
			})
		}
	}
}

func TestExtractLimits(t *testing.T) {
	many := make([]entry, 11)
	for i := range many {
		many[i] = entry{Name: "f" + string(rune('a'+i)), Body: "x"}
	}
	links := []entry{{Name: "f", Body: "x"}}
	for i := range 3 {
		links = append(links, entry{Name: "l" + string(rune('a'+i)), Type: tar.TypeSymlink, Link: "f"})
	}
	big := []entry{{Name: "a", Body: strings.Repeat("x", 600)}, {Name: "b", Body: strings.Repeat("y", 600)}}
	hard := []entry{{Name: "a", Body: strings.Repeat("x", 600)}, {Name: "h", Type: tar.TypeLink, Link: "a"}}
	lim := limits{entries: 10, links: 2, bytes: 1000}
	for name, es := range map[string][]entry{"entries": many, "links": links, "bytes": big, "hard link bytes": hard} {
		for kind, data := range archives(t, es) {
			t.Run(name+"/"+kind, func(t *testing.T) {
				if _, err := unpackIn(t, data, kind, lim); !errors.Is(err, ErrArchiveLimit) {
					t.Fatalf("error %v, want %v", err, ErrArchiveLimit)
				}
			})
		}
	}
	// A gzip bomb: one file of 2 MiB of zeros in a few KiB.
	bomb := archivetest.TarGz(t, []entry{{Name: "zeros", Body: string(make([]byte, 2<<20))}})
	if _, err := unpackIn(t, bomb, "tar.gz", limits{entries: 10, links: 2, bytes: 1 << 20}); !errors.Is(err, ErrArchiveLimit) {
		t.Fatalf("bomb: %v", err)
	}
}

// A well-behaved module with a link to a file (also through a link chain
// that stays inside) unpacks, and Normalize carries copies, not links.
func TestExtractKeepsLinksToFiles(t *testing.T) {
	es := []entry{
		{Name: "./", Type: tar.TypeDir},
		{Name: "modules/net/main.tf", Body: "# net\n"},
		{Name: "modules/net/versions.tf", Type: tar.TypeSymlink, Link: "../../versions.tf"},
		{Name: "versions.tf", Body: "terraform {}\n"},
		{Name: "examples/v.tf", Type: tar.TypeSymlink, Link: "../modules/net/versions.tf"},
		{Name: "copy.tf", Type: tar.TypeLink, Link: "versions.tf"},
	}
	for kind, data := range archives(t, es) {
		t.Run(kind, func(t *testing.T) {
			root, err := unpackIn(t, data, kind, defaultLimits)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := normalized(t, root)
			for _, n := range []string{"modules/net/versions.tf", "examples/v.tf", "versions.tf"} {
				if got[n] != "terraform {}\n" {
					t.Errorf("%s: %q", n, got[n])
				}
			}
		})
	}
}

// Normalize reads a checkout (git writes links as they are in the
// repository) only through the root: links that leave it are refused, and
// nothing outside is read.
func TestNormalizeRefusesLinksOutOfTheTree(t *testing.T) {
	outer := t.TempDir()
	os.WriteFile(filepath.Join(outer, "secret"), []byte("secret"), 0o600)
	for name, links := range map[string][][2]string{
		"direct":    {{"s", "../secret"}},
		"absolute":  {{"s", filepath.Join(outer, "secret")}},
		"chain":     {{"a", "."}, {"b", "a/.."}, {"s", "b/secret"}},
		"directory": {{"d", ".."}},
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(outer, name)
			os.Mkdir(dir, 0o755)
			os.WriteFile(filepath.Join(dir, "main.tf"), []byte("# ok\n"), 0o644)
			for _, l := range links {
				if err := os.Symlink(l[1], filepath.Join(dir, l[0])); err != nil {
					t.Fatal(err)
				}
			}
			var b bytes.Buffer
			err := Normalize(context.Background(), dir, &b)
			if !errors.Is(err, ErrUnsafeArchive) {
				t.Fatalf("error %v", err)
			}
			if bytes.Contains(b.Bytes(), []byte("secret")) {
				t.Fatal("the archive holds the secret")
			}
		})
	}
}

// normalized is Normalize of dir: each entry's content by name, and the
// names in order; an entry that is not a directory or regular file fails t.
func normalized(t *testing.T, dir string) (map[string]string, []string) {
	t.Helper()
	var b bytes.Buffer
	if err := Normalize(context.Background(), dir, &b); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	var names []string
	tr := tar.NewReader(mustGunzip(t, b.Bytes()))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return got, names
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeDir && h.Typeflag != tar.TypeReg {
			t.Errorf("normalized archive has %q of type %q", h.Name, h.Typeflag)
		}
		c, _ := io.ReadAll(tr)
		got[h.Name] = string(c)
		names = append(names, h.Name)
	}
}

func mustGunzip(t *testing.T, b []byte) io.Reader {
	t.Helper()
	r, err := gzipReader(b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// FuzzExtract unpacks arbitrary bytes as each archive kind into a root deep
// inside a temporary directory: whatever happens, nothing appears outside
// the root, a failure leaves nothing at all, and a success normalizes.
func FuzzExtract(f *testing.F) {
	for _, es := range [][]entry{
		archivetest.LinkChain(4, "pwned", "x"),
		{{Name: "main.tf", Body: "# m\n"}, {Name: "l", Type: tar.TypeSymlink, Link: "main.tf"}},
		{{Name: "d", Type: tar.TypeDir}, {Name: "l", Type: tar.TypeSymlink, Link: "d/.."}, {Name: "l/x", Body: "x"}},
	} {
		f.Add(archivetest.TarGz(f, es), uint8(0))
		f.Add(archivetest.Tar(f, es), uint8(1))
		f.Add(archivetest.Zip(f, es), uint8(2))
	}
	f.Add(archivetest.Tar(f, []entry{{Name: "h", Type: tar.TypeLink, Link: "../x"}}), uint8(1))
	kinds := []string{"tar.gz", "tar", "zip", "tar.bz2"}
	lim := limits{entries: 1000, links: 100, bytes: 1 << 20}
	f.Fuzz(func(t *testing.T, data []byte, k uint8) {
		root, err := unpackIn(t, data, kinds[int(k)%len(kinds)], lim)
		if err != nil {
			return
		}
		// (Normalize counts the same entries, implicit directories included.)
		if err := normalize(context.Background(), root, io.Discard, lim); err != nil && !errors.Is(err, ErrArchiveLimit) {
			t.Fatalf("extracted, but Normalize says: %v", err)
		}
	})
}

func gzipReader(b []byte) (io.Reader, error) { return gzip.NewReader(bytes.NewReader(b)) }

// A module archive's .git, in any spelling a case-insensitive file system
// takes for it (".GIT", ".Git", ".gıt" on NTFS), is left out of the
// normalized archive as .git always was: on an engineer's Mac or Windows
// machine it would be the git directory of the installed module, and
// "git status" there runs its config's core.fsmonitor.
func TestNormalizeDropsGitDirectoriesInAnyCase(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{".git/config", ".GIT/config", "sub/.Git/config", "x/.g\u0131t/config", "y/.GiT"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("[core]\n\tfsmonitor = touch /tmp/owned\n"), 0o644)
	}
	os.WriteFile(filepath.Join(dir, "main.tf"), []byte("# ok\n"), 0o644)
	if _, names := normalized(t, dir); strings.Join(names, " ") != "main.tf sub/ x/ y/" {
		t.Errorf("normalized archive holds %q", names)
	}
}
