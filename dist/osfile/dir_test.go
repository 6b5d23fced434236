//go:build unix

package osfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestDirNeverFollows: through a Dir, a link is neither read nor written
// through, a FIFO is refused without waiting, and a link on the way to
// the directory (in a directory writable by others) is refused.
func TestDirNeverFollows(t *testing.T) {
	base := t.TempDir()
	sub := filepath.Join(base, "state")
	os.Mkdir(sub, 0o700)
	target := filepath.Join(t.TempDir(), "target")
	os.WriteFile(target, []byte("keep"), 0o600)
	os.Symlink(target, filepath.Join(sub, "link"))
	syscall.Mkfifo(filepath.Join(sub, "fifo"), 0o600)

	d, err := OpenDir(base, "state")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, n := range []string{"link", "fifo"} {
		if _, err := d.ReadFile(n, 100); !errors.Is(err, ErrNotRegular) {
			t.Errorf("ReadFile(%s): %v, want ErrNotRegular", n, err)
		}
		if _, err := d.OpenAppend(n, 0o600); !errors.Is(err, ErrNotRegular) {
			t.Errorf("OpenAppend(%s): %v, want ErrNotRegular", n, err)
		}
	}
	if err := d.WriteFileAtomic("link", []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("WriteFileAtomic wrote through a link: %q", b)
	}
	if fi, _ := os.Lstat(filepath.Join(sub, "link")); !fi.Mode().IsRegular() {
		t.Errorf("WriteFileAtomic did not replace the link: %v", fi.Mode())
	}
	if _, err := d.ReadFile("link", 2); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadFile over the limit: %v", err)
	}

	// A link on the way, in a directory others may write.
	os.Chmod(base, 0o777)
	os.Symlink(t.TempDir(), filepath.Join(base, "other"))
	if _, err := OpenDir(base, "other"); err == nil {
		t.Errorf("OpenDir followed a link in a directory others may write")
	}
	os.Chmod(base, 0o700)
	if d2, err := OpenDir(base, "other"); err != nil {
		t.Errorf("OpenDir refused a link in a directory only its owner may write: %v", err)
	} else {
		d2.Close()
	}
}

// TestMakeDirAtomic: the directory appears whole, its files with their
// modes; a second one of the same name is refused (fs.ErrExist) and
// leaves no temporary directory behind; a bad file name fails the whole
// and leaves nothing.
func TestMakeDirAtomic(t *testing.T) {
	base := t.TempDir()
	d, err := OpenDir(base)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	files := []NewFile{{Name: "k", Data: []byte("key"), Perm: 0o600}, {Name: "c", Data: []byte("cert"), Perm: 0o644}}
	if err := d.MakeDirAtomic("ca", files); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		fi, err := os.Stat(filepath.Join(base, "ca", f.Name))
		if b, _ := os.ReadFile(filepath.Join(base, "ca", f.Name)); err != nil || fi.Mode().Perm() != f.Perm || string(b) != string(f.Data) {
			t.Errorf("%s: %v %v %q", f.Name, fi, err, b)
		}
	}
	if err := d.MakeDirAtomic("ca", files); !errors.Is(err, fs.ErrExist) {
		t.Errorf("a second ca: %v, want fs.ErrExist", err)
	}
	if err := d.MakeDirAtomic("other", []NewFile{{Name: "ok", Perm: 0o600}, {Name: "../x", Perm: 0o600}}); err == nil {
		t.Error("a file name with a slash was taken")
	}
	if names, _ := os.ReadDir(base); len(names) != 1 {
		t.Errorf("left behind: %v", names)
	}
}
