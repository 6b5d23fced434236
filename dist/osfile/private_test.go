package osfile

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestPrivateEnough: the one rule for secret files, on real files: a file
// only its owner may read passes when this process's user or root owns
// it; a root-owned file its
// group may read (a Kubernetes Secret under fsGroup) passes; one others
// may read, one its group may write, and a group-readable file a non-root
// user owns, and another user's file only they may read, are refused,
// with the rule in the message.
func TestPrivateEnough(t *testing.T) {
	dir := t.TempDir()
	check := func(mode os.FileMode, uid, gid int, want bool) {
		t.Helper()
		p := filepath.Join(dir, "secret")
		os.Remove(p)
		if err := os.WriteFile(p, []byte("s\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if uid >= 0 {
			if err := os.Chown(p, uid, gid); err != nil {
				t.Fatalf("chown %d:%d: %v", uid, gid, err)
			}
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		err = CheckPrivate(fi, p, "it is a test secret")
		if got := PrivateEnough(fi); got != want || (err == nil) != want {
			t.Errorf("mode %04o owner %d:%d: PrivateEnough %v (error %v), want %v", mode, uid, gid, got, err, want)
		}
		if err != nil && (!strings.Contains(err.Error(), "chmod 600 "+p) || !strings.Contains(err.Error(), "owned by root") && !strings.Contains(err.Error(), "root owns it")) {
			t.Errorf("mode %04o: the refusal does not state the rule:\n%v", mode, err)
		}
	}
	check(0o600, -1, -1, true)
	check(0o400, -1, -1, true)
	check(0o644, -1, -1, false)
	check(0o604, -1, -1, false)
	if runtime.GOOS == "windows" {
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("the root-owned cases need root (chown)")
	}
	check(0o640, 0, 2000, true)
	check(0o440, 0, 2000, true)
	check(0o660, 0, 2000, false)
	check(0o650, 0, 2000, false)
	check(0o644, 0, 2000, false)
	check(0o641, 0, 2000, false)
	check(0o640, 1000, 2000, false)
	check(0o440, 1000, 2000, false)
	// Another user's file, though only they may read it: root reads
	// every file, and that user could have swapped it in.
	check(0o600, 1000, 2000, false)
	check(0o400, 1000, 2000, false)
	check(0o600, 0, 2000, true)
}

// TestCheckSafePathLinks: links on the way are followed and their
// targets' directories judged; a loop of links ends with an error, not a
// hang; a relative link resolves against its own directory.
func TestCheckSafePathLinks(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no owners and modes to judge")
	}
	dir := t.TempDir()
	os.Symlink(filepath.Join(dir, "b"), filepath.Join(dir, "a"))
	os.Symlink(filepath.Join(dir, "a"), filepath.Join(dir, "b"))
	if err := CheckSafePath(filepath.Join(dir, "a"), "x"); err == nil || !strings.Contains(err.Error(), "symbolic links") {
		t.Errorf("a loop of links: %v", err)
	}
	os.Mkdir(filepath.Join(dir, "sub"), 0o700)
	os.WriteFile(filepath.Join(dir, "sub", "secret"), []byte("s\n"), 0o600)
	os.Symlink("sub/secret", filepath.Join(dir, "rel"))
	if err := CheckSafePath(filepath.Join(dir, "rel"), "x"); err != nil {
		t.Errorf("a relative link to a file in a private directory: %v", err)
	}
	open := filepath.Join(dir, "open")
	os.Mkdir(open, 0o700)
	os.Chmod(open, 0o777)
	os.Symlink("../sub/secret", filepath.Join(open, "s"))
	if err := CheckSafePath(filepath.Join(open, "s"), "x"); err == nil || !strings.Contains(err.Error(), "other users may write it") {
		t.Errorf("a link in a directory anyone may write: %v", err)
	}
	if err := CheckSafePath(filepath.Join(dir, "missing"), "x"); err == nil {
		t.Error("a missing file passed")
	}
}

// TestCheckSafePathDotDotAfterLink: a ".." after a link is resolved as the
// kernel resolves it, from the link's target, not by dropping the link
// with it: dir/ln/../secret with ln pointing into a directory anyone may
// write opens a file in that directory, which another user can make a
// link to any file root may read (the check passed, judging dir/secret).
func TestCheckSafePathDotDotAfterLink(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no owners and modes to judge")
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "secret"), []byte("mine\n"), 0o600)
	open := filepath.Join(dir, "open")
	os.Mkdir(open, 0o700)
	os.Chmod(open, 0o777)
	os.Mkdir(filepath.Join(open, "sub"), 0o700)
	os.WriteFile(filepath.Join(open, "secret"), []byte("theirs\n"), 0o600)
	os.Symlink(filepath.Join(open, "sub"), filepath.Join(dir, "ln"))
	path := filepath.Join(dir, "ln") + "/../secret"
	if b, _ := os.ReadFile(path); string(b) != "theirs\n" {
		t.Fatalf("the kernel opened %q, want the file in the open directory", b)
	}
	if err := CheckSafePath(path, "x"); err == nil || !strings.Contains(err.Error(), "other users may write it") {
		t.Errorf("%s (the kernel opens %s): %v", path, filepath.Join(open, "secret"), err)
	}
	priv := filepath.Join(dir, "priv")
	os.MkdirAll(filepath.Join(priv, "sub"), 0o700)
	os.WriteFile(filepath.Join(priv, "file"), []byte("s\n"), 0o600)
	os.Symlink("priv/sub", filepath.Join(dir, "pl"))
	if err := CheckSafePath(filepath.Join(dir, "pl")+"/../file", "x"); err != nil {
		t.Errorf("a \"..\" after a link into a private directory: %v", err)
	}
	if err := CheckSafePath(filepath.Join(dir, ".", "secret"), "x"); err != nil {
		t.Errorf("a plain private file: %v", err)
	}
}

// TestOpenSafeSwapped: a path that names another file after the open
// than the one opened (another user's swap in the moment between the
// two) is refused; the file it names throughout is returned.
func TestOpenSafeSwapped(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "secret")
	if err := os.WriteFile(p, []byte("theirs"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ours"), []byte("ours"), 0o600); err != nil {
		t.Fatal(err)
	}
	afterOpen = func() {
		if err := os.Rename(filepath.Join(dir, "ours"), p); err != nil {
			t.Error(err)
		}
	}
	defer func() { afterOpen = nil }()
	if f, err := OpenSafe(p, "x"); err == nil || !strings.Contains(err.Error(), "replaced while it was read") {
		if f != nil {
			f.Close()
		}
		t.Fatalf("a swapped file: %v", err)
	}
	afterOpen = nil
	f, err := OpenSafe(p, "x")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := OpenSafe(filepath.Join(dir, "missing"), "x"); !os.IsNotExist(err) {
		t.Fatalf("a missing file: %v", err)
	}
}
