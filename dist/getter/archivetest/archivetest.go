// Package archivetest builds hand-made (possibly hostile) tar, tar.gz and
// zip archives and snapshots directory trees, for tests of archive
// extraction. It imports nothing of airgap's, so the getter's own tests can
// use it (registrytest, which they cannot import, re-exports it). It does
// not unpack or check archives: that is what the tests exercise.
package archivetest

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// Entry is one entry of a hand-built (possibly hostile) archive.
type Entry struct {
	Name string
	Type byte   // tar.TypeReg (or 0), tar.TypeDir, tar.TypeSymlink, tar.TypeLink
	Body string // a regular file's content
	Link string // a link's target, exactly as written into the archive
}

// LinkChain returns the entries of the link chain from issue 11: a→.,
// b→a/.., c→b/.., … (depth links; each target looks inside the root on
// paper, but every link climbs one more directory on disk), then a regular
// file under each link but the first (b/<file>, c/<file>, …), so that the
// file would land 1, 2, … depth-1 directories above the root.
func LinkChain(depth int, file, body string) []Entry {
	var out []Entry
	prev := ""
	for i := range depth {
		name := string(rune('a' + i))
		target := "."
		if prev != "" {
			target = prev + "/.."
		}
		out = append(out, Entry{Name: name, Type: tar.TypeSymlink, Link: target})
		prev = name
	}
	for i := 1; i < depth; i++ {
		out = append(out, Entry{Name: string(rune('a'+i)) + "/" + file, Body: body})
	}
	return out
}

// Tar builds an uncompressed tar stream of entries, in order.
func Tar(t testing.TB, entries []Entry) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries {
		h := &tar.Header{Name: e.Name, Typeflag: e.Type, Linkname: e.Link, Mode: 0o644, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		switch e.Type {
		case 0, tar.TypeReg:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.Body))
		case tar.TypeDir:
			h.Mode = 0o755
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.Body)); h.Typeflag == tar.TypeReg && err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TarGz builds a gzip'd tar stream of entries, in order.
func TarGz(t testing.TB, entries []Entry) []byte {
	t.Helper()
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	gz.Write(Tar(t, entries))
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Zip builds a zip of entries, in order: symlinks are entries with
// fs.ModeSymlink whose content is the target, as Info-ZIP writes them. Zip
// has no hard links; a tar.TypeLink entry fails the test.
func Zip(t testing.TB, entries []Entry) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.Name, Method: zip.Deflate}
		body := e.Body
		switch e.Type {
		case 0, tar.TypeReg:
			h.SetMode(0o644)
		case tar.TypeDir:
			h.Name += "/"
			h.SetMode(fs.ModeDir | 0o755)
		case tar.TypeSymlink:
			h.SetMode(fs.ModeSymlink | 0o777)
			body = e.Link
		default:
			t.Fatalf("zip: entry %q: type %q", e.Name, e.Type)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprint(w, body)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Snapshot lists every path under dir (links not followed) with its kind
// and, for links and files, target or content: compare two with Changed.
func Snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			out[rel] = "link " + l
		case d.IsDir():
			out[rel] = "dir"
		default:
			b, _ := os.ReadFile(p)
			out[rel] = "file " + string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Changed lists the paths that differ between two snapshots, sorted.
func Changed(before, after map[string]string) []string {
	var d []string
	for k, v := range after {
		if before[k] != v {
			d = append(d, k+": "+v)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			d = append(d, k+": removed")
		}
	}
	sort.Strings(d)
	return d
}
