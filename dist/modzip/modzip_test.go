package modzip

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/dist/getter"
)

func tarGz(t testing.TB, hs []tar.Header, data map[string]string) []byte {
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	for _, h := range hs {
		h.Size = int64(len(data[h.Name]))
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(data[h.Name]))
	}
	tw.Close()
	gz.Close()
	return b.Bytes()
}

// TestZipFromTarGz: a normalized module tree gives the same zip every time,
// with the same files, modes and contents.
func TestZipFromTarGz(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "modules", "sub"), 0o755)
	os.WriteFile(filepath.Join(root, "main.tf"), []byte("module \"s\" { source = \"./modules/sub\" }\n"), 0o644)
	os.WriteFile(filepath.Join(root, "modules", "sub", "main.tf"), []byte("output \"x\" { value = 1 }\n"), 0o644)
	os.WriteFile(filepath.Join(root, "run.sh"), []byte("#!/bin/sh\n"), 0o755)
	var zips [2][]byte
	for i := range zips {
		var archive, out bytes.Buffer
		if err := getter.Normalize(context.Background(), root, &archive); err != nil {
			t.Fatal(err)
		}
		if err := ZipFromTarGz(&archive, &out); err != nil {
			t.Fatal(err)
		}
		zips[i] = out.Bytes()
		// Touching the tree's times changes nothing.
		os.Chtimes(filepath.Join(root, "main.tf"), zipEpoch.AddDate(5, 0, 0), zipEpoch.AddDate(5, 0, 0))
	}
	if !bytes.Equal(zips[0], zips[1]) {
		t.Fatal("the same tree gave two different zips")
	}
	zr, err := zip.NewReader(bytes.NewReader(zips[0]), int64(len(zips[0])))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range zr.File {
		s := f.Name + " " + f.Mode().String()
		if !f.Mode().IsDir() {
			rc, _ := f.Open()
			b, _ := io.ReadAll(rc)
			rc.Close()
			s += " " + strings.TrimSpace(string(b))
		}
		got = append(got, s)
	}
	want := []string{
		`main.tf -rw-r--r-- module "s" { source = "./modules/sub" }`,
		"modules/ drwxr-xr-x",
		"modules/sub/ drwxr-xr-x",
		`modules/sub/main.tf -rw-r--r-- output "x" { value = 1 }`,
		"run.sh -rwxr-xr-x #!/bin/sh",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("zip entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestZipFromTarGzRefuses links, devices and escaping paths.
func TestZipFromTarGzRefuses(t *testing.T) {
	for name, h := range map[string]tar.Header{
		"symlink":  {Name: "a", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd", Mode: 0o777},
		"hardlink": {Name: "a", Typeflag: tar.TypeLink, Linkname: "b", Mode: 0o644},
		"device":   {Name: "a", Typeflag: tar.TypeChar, Mode: 0o644},
		"dotdot":   {Name: "../x", Typeflag: tar.TypeReg, Mode: 0o644},
		"absolute": {Name: "/x", Typeflag: tar.TypeReg, Mode: 0o644},
		"unclean":  {Name: "a/./../../x", Typeflag: tar.TypeReg, Mode: 0o644},
	} {
		err := ZipFromTarGz(bytes.NewReader(tarGz(t, []tar.Header{h}, nil)), io.Discard)
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := ZipFromTarGz(strings.NewReader("not gzip"), io.Discard); err == nil {
		t.Error("accepted a non-gzip stream")
	}
}

func FuzzZipFromTarGz(f *testing.F) {
	f.Add(tarGz(f, []tar.Header{{Name: "a/", Typeflag: tar.TypeDir, Mode: 0o755}, {Name: "a/b.tf", Typeflag: tar.TypeReg, Mode: 0o644}}, map[string]string{"a/b.tf": "x"}))
	f.Fuzz(func(t *testing.T, b []byte) {
		var out bytes.Buffer
		if err := ZipFromTarGz(bytes.NewReader(b), &out); err != nil {
			return
		}
		zr, err := zip.NewReader(bytes.NewReader(out.Bytes()), int64(out.Len()))
		if err != nil {
			t.Fatalf("wrote an unreadable zip: %v", err)
		}
		for _, f := range zr.File {
			if strings.HasPrefix(f.Name, "/") || strings.Contains("/"+f.Name, "/../") {
				t.Fatalf("unsafe name %q", f.Name)
			}
		}
	})
}
