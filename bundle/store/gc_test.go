package store_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/airgap/airgap/bundle/store"
)

// TestGCAndPruneTakeTheLock: while an import holds the store lock, gc and
// prune refuse (or wait) and change nothing.
func TestGCAndPruneTakeTheLock(t *testing.T) {
	f := newFixture(t)
	root := filepath.Join(t.TempDir(), "store")
	if _, err := store.Import(root, bytes.NewReader(f.good), store.ImportOptions{Keyring: f.keyring}); err != nil {
		t.Fatal(err)
	}
	lf, err := os.OpenFile(filepath.Join(root, "lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, root)
	if _, err := store.GC(root, store.GCOptions{}); !errors.Is(err, store.ErrLocked) {
		t.Errorf("gc under the lock: %v", err)
	}
	if _, err := store.Prune(root, store.PruneOptions{Keep: 1}); !errors.Is(err, store.ErrLocked) {
		t.Errorf("prune under the lock: %v", err)
	}
	sameTree(t, before, snapshot(t, root))
	done := make(chan error, 1)
	go func() { _, err := store.GC(root, store.GCOptions{Wait: true}); done <- err }()
	select {
	case err := <-done:
		t.Fatalf("gc --wait did not wait: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	syscall.Flock(int(lf.Fd()), syscall.LOCK_UN)
	if err := <-done; err != nil {
		t.Errorf("gc --wait after the lock was released: %v", err)
	}
}

func TestPruneRequests(t *testing.T) {
	for _, s := range []string{"30d", "720h", "0s"} {
		if _, err := store.ParseAge(s); err != nil {
			t.Errorf("ParseAge(%q): %v", s, err)
		}
	}
	for _, s := range []string{"", "d", "-1h", "soon", "1000000d"} {
		if _, err := store.ParseAge(s); err == nil {
			t.Errorf("ParseAge(%q) accepted", s)
		}
	}
	root := t.TempDir()
	for _, opt := range []store.PruneOptions{{}, {Keep: 1, ByAge: true}, {Keep: -1}, {Keep: 1, Versions: []string{"a/b@1.0.0"}}} {
		if _, err := store.Prune(root, opt); !errors.Is(err, store.ErrPrune) {
			t.Errorf("Prune(%+v): %v", opt, err)
		}
	}
}
