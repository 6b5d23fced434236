package export

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// A run removes the module trees of exports that no longer run, and of any
// left untouched for a day; it keeps those of live exports sharing the
// cache, and everything that is not a module tree.
func TestTidyModuleWork(t *testing.T) {
	cache := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	mk := func(name string, age time.Duration) {
		p := filepath.Join(cache, "tmp", name)
		os.MkdirAll(filepath.Join(p, "src"), 0o755)
		os.WriteFile(filepath.Join(p, "src", "f"), []byte("x"), 0o644)
		old := time.Now().Add(-age)
		os.Chtimes(p, old, old)
	}
	own := fmt.Sprintf("module-%d-1", os.Getpid())
	live := "module-1-2" // init
	gone := fmt.Sprintf("module-%d-3", dead.Process.Pid)
	mk(own, 0)
	mk(live, time.Hour)
	mk(gone, 0)
	mk("module-4", 25*time.Hour) // an older airgap's name, a day old
	mk("module-5", time.Hour)
	mk("0123abcd", 48*time.Hour) // not a module tree
	file := func(name string, age time.Duration) {
		p := filepath.Join(cache, "tmp", name)
		os.WriteFile(p, []byte("a download a killed export left"), 0o644)
		old := time.Now().Add(-age)
		os.Chtimes(p, old, old)
	}
	file("0123456789abcdef", 2*time.Hour) // tmpPath's, abandoned
	file("fedcba9876543210", time.Minute) // tmpPath's, being written
	file("0123456789abcdeX", 2*time.Hour) // not tmpPath's
	tidyModuleWork(cache, time.Now())
	for name, want := range map[string]bool{own: true, live: true, gone: false, "module-4": false, "module-5": true, "0123abcd": true,
		"0123456789abcdef": false, "fedcba9876543210": true, "0123456789abcdeX": true} {
		_, err := os.Stat(filepath.Join(cache, "tmp", name))
		if got := err == nil; got != want {
			t.Errorf("%s: kept %v, want %v", name, got, want)
		}
	}
}
