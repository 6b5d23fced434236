package osfile

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// twoHandles opens one lock file twice (two open file descriptions, as two
// processes would have), closed when the test ends.
func twoHandles(t *testing.T) (a, b *os.File) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "x.lock")
	a, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	b, err = os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return a, b
}

// TestLockExcludes: a second handle waits for the first to unlock.
func TestLockExcludes(t *testing.T) {
	a, b := twoHandles(t)
	if err := Lock(a); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- Lock(b) }()
	select {
	case err := <-got:
		t.Fatalf("second lock taken while the first is held (err %v)", err)
	case <-time.After(200 * time.Millisecond):
	}
	if err := Unlock(a); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("second lock not taken after the first was released")
	}
	Unlock(b)
}

// TestTryLock: TryLock fails at once while another handle holds the
// lock, and succeeds once it is released.
func TestTryLock(t *testing.T) {
	a, b := twoHandles(t)
	if ok, err := TryLock(a); !ok || err != nil {
		t.Fatalf("TryLock on a free lock: %v %v", ok, err)
	}
	if ok, err := TryLock(b); ok || err != nil {
		t.Fatalf("TryLock while another handle holds it: %v %v, want false, nil", ok, err)
	}
	Unlock(a)
	if ok, err := TryLock(b); !ok || err != nil {
		t.Fatalf("TryLock after the release: %v %v", ok, err)
	}
	Unlock(b)
}

// TestInodeAndOwner: on Unix, a renamed-over file has a new inode, and
// the owner is the test's own user.
func TestInodeAndOwner(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no inode or owner numbers on Windows")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	os.WriteFile(p, []byte("a"), 0o600)
	fi1, _ := os.Stat(p)
	os.WriteFile(filepath.Join(dir, "g"), []byte("a"), 0o600)
	os.Rename(filepath.Join(dir, "g"), p)
	fi2, _ := os.Stat(p)
	if Inode(fi1) == 0 || Inode(fi1) == Inode(fi2) {
		t.Errorf("inodes %d, %d: want non-zero and different after a rename", Inode(fi1), Inode(fi2))
	}
	uid, gid, ok := Owner(fi2)
	if !ok || uid != os.Geteuid() || gid != os.Getegid() {
		t.Errorf("owner %d:%d %v, want %d:%d", uid, gid, ok, os.Geteuid(), os.Getegid())
	}
}
