//go:build linux

package store_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
)

// smallDisk mounts a tmpfs of size (e.g. "3m") and returns it.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root (CI runs as root)")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	return mnt
}

// fill writes path until the disk is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}

// TestImportDiskFull imports into a store on a 3 MiB tmpfs: a bundle that
// does not fit fails with ENOSPC, says so, and leaves the store as it was.
func TestImportDiskFull(t *testing.T) {
	mnt := smallDisk(t, "3m")
	f := newFixture(t)
	root := filepath.Join(mnt, "store")
	if _, err := store.Import(root, bytes.NewReader(f.good), store.ImportOptions{Keyring: f.keyring}); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, root)
	set := bundletest.NewSet()
	set.AddProvider(bundletest.BuildProvider(t, t.TempDir(), bundletest.Provider{Host: "registry.terraform.io", Namespace: "hashicorp",
		Type: "big", Version: "1.0.0", Platforms: []string{"linux_amd64", "darwin_arm64"}, Signer: bundletest.Key(t, "publisher"), PackageSize: 2 << 20}))
	var b bytes.Buffer
	set.WriteBundle(t, &b, f.signer, bundle.CompressionZstd)
	big := b.Bytes()
	_, err := store.Import(root, bytes.NewReader(big), store.ImportOptions{Keyring: f.keyring})
	if err == nil || !strings.Contains(err.Error(), "do not fit on the disk") || !strings.Contains(err.Error(), "nothing was staged") ||
		!strings.Contains(err.Error(), "needs about 4.0 MiB") ||
		!strings.Contains(err.Error(), "free space") || !strings.Contains(err.Error(), "the store was not changed") {
		t.Fatalf("import onto a full disk: %v", err)
	}
	sameTree(t, before, snapshot(t, root))
	// The free space it reports is what is free once it has removed its
	// temporary files (the disk is nearly empty again), not the 0 B
	// measured while they filled it.
	var st syscall.Statfs_t
	if err := syscall.Statfs(root, &st); err != nil {
		t.Fatal(err)
	}
	freeNow := dist.HumanSize(int64(st.Bavail) * int64(st.Bsize))
	if !strings.Contains(err.Error(), "and "+freeNow+" are free now") {
		t.Errorf("the message does not report the %s free after its cleanup: %v", freeNow, err)
	}
	if strings.Contains(err.Error(), "and 0 B are free") {
		t.Errorf("the message reports the free space measured before its cleanup: %v", err)
	}
	t.Logf("the message: %v", err)
	if _, err := os.Stat(filepath.Join(root, "tmp")); err == nil {
		if left, _ := os.ReadDir(filepath.Join(root, "tmp")); len(left) > 0 {
			t.Errorf("temporary files left behind: %v", left)
		}
	}
}

// TestImportDiskFillsWhileStaging: the blobs fit when the import checks,
// but another writer fills the disk before they are staged. Staging fails
// with ENOSPC, says so, reports the free space after its cleanup, and the
// store is as it was.
func TestImportDiskFillsWhileStaging(t *testing.T) {
	mnt := smallDisk(t, "3m")
	f := newFixture(t)
	root := filepath.Join(mnt, "store")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(mnt, "filler")
	reset := store.SetRoomHook(func() { fill(t, filler) })
	_, err := store.Import(root, bytes.NewReader(f.good), store.ImportOptions{Keyring: f.keyring})
	reset()
	if err == nil || !strings.Contains(err.Error(), "no space left") || !strings.Contains(err.Error(), "staging") ||
		!strings.Contains(err.Error(), "needs about") || !strings.Contains(err.Error(), "the store was not changed") {
		t.Fatalf("import with the disk filling while staging: %v", err)
	}
	t.Logf("the message: %v", err)
	os.Remove(filler)
	if _, err := store.Import(root, bytes.NewReader(f.good), store.ImportOptions{Keyring: f.keyring}); err != nil {
		t.Fatalf("with the space back: %v", err)
	}
}

// TestImportDiskFullAtIndex: every blob fits, but the disk fills up just as
// the new index is written (another process took the space). The import
// fails with ENOSPC, says how much the index needed, and the store tree is
// byte for byte as it was: the index is written before any blob is placed.
func TestImportDiskFullAtIndex(t *testing.T) {
	mnt := smallDisk(t, "3m")
	f := newFixture(t)
	root := filepath.Join(mnt, "store")
	set := bundletest.NewSet()
	set.AddProvider(bundletest.BuildProvider(t, t.TempDir(), bundletest.Provider{Host: "registry.terraform.io", Namespace: "hashicorp",
		Type: "tls", Version: "4.0.5", Platforms: []string{"linux_amd64"}, Signer: bundletest.Key(t, "publisher")}))
	var seedBundle bytes.Buffer
	set.WriteBundle(t, &seedBundle, f.signer, bundle.CompressionZstd)
	if _, err := store.Import(root, &seedBundle, store.ImportOptions{Keyring: f.keyring}); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, root)
	filler := filepath.Join(mnt, "filler")
	reset := store.SetTestHooks(func() { fill(t, filler) }, nil)
	_, err := store.Import(root, bytes.NewReader(f.good), store.ImportOptions{Keyring: f.keyring})
	reset()
	os.Remove(filler)
	if err == nil || !strings.Contains(err.Error(), "writing the store index") || !strings.Contains(err.Error(), "no space left") ||
		!strings.Contains(err.Error(), "needs about") || !strings.Contains(err.Error(), "the store was not changed") {
		t.Fatalf("import with the disk filling at the index: %v", err)
	}
	t.Logf("the message: %v", err)
	sameTree(t, before, snapshot(t, root))
	// With the space back, the same bundle imports.
	if _, err := store.Import(root, bytes.NewReader(f.good), store.ImportOptions{Keyring: f.keyring}); err != nil {
		t.Fatal(err)
	}
}
