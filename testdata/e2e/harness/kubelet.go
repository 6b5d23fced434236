package harness

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// KubeletVolume writes (or updates) one key of a Secret or ConfigMap
// volume at dir as the kubelet's atomic writer does: the file in a new
// timestamped folder, dir/..TIMESTAMP/key, owned by root:gid with mode
// (what defaultMode and the pod's fsGroup make it); dir/..data a link to
// that folder, swapped in by a rename so a reader sees the old or the new
// file, never neither; dir/key a link to ..data/key. The previous folder
// is removed, as the kubelet does. The caller runs as root (chown).
func KubeletVolume(t *testing.T, dir, key, content string, mode os.FileMode, gid int) {
	t.Helper()
	ts := "..TS_" + time.Now().UTC().Format("2006_01_02_15_04_05.000000000")
	if err := os.MkdirAll(filepath.Join(dir, ts), 0o755); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, ts, key)
	if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(f, 0, gid); err != nil {
		t.Fatalf("chown root:%d %s (the test runs as root, as the kubelet does): %v", gid, f, err)
	}
	if err := os.Chmod(f, mode); err != nil {
		t.Fatal(err)
	}
	old, _ := os.Readlink(filepath.Join(dir, "..data"))
	tmp := filepath.Join(dir, "..data_tmp")
	os.Remove(tmp)
	if err := os.Symlink(ts, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if old != "" {
		os.RemoveAll(filepath.Join(dir, old))
	}
	if _, err := os.Lstat(filepath.Join(dir, key)); os.IsNotExist(err) {
		if err := os.Symlink(filepath.Join("..data", key), filepath.Join(dir, key)); err != nil {
			t.Fatal(err)
		}
	}
}
