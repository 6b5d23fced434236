//go:build linux

package store_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/store"
)

// TestImportDiskFull imports into a store on a 3 MiB tmpfs: a bundle that
// does not fit fails with ENOSPC, says so, and leaves the store as it was.
func TestImportDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root (CI runs as root)")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	f := newFixture(t)
	root := filepath.Join(mnt, "store")
	if _, err := store.Import(root, bytes.NewReader(f.good), store.ImportOptions{Keyring: f.keyring}); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, root)
	set := bundletest.NewSet()
	set.AddProvider(bundletest.BuildProvider(t, t.TempDir(), bundletest.Provider{Host: "registry.terraform.io", Namespace: "hashicorp",
		Type: "big", Version: "1.0.0", Platforms: []string{"linux_amd64", "darwin_arm64"}, Signer: f.signer, PackageSize: 2 << 20}))
	var b bytes.Buffer
	set.WriteBundle(t, &b, f.signer, bundle.CompressionZstd)
	_, err := store.Import(root, &b, store.ImportOptions{Keyring: f.keyring})
	if err == nil || !strings.Contains(err.Error(), "no space left") || !strings.Contains(err.Error(), "free space") {
		t.Fatalf("import onto a full disk: %v", err)
	}
	sameTree(t, before, snapshot(t, root))
}
